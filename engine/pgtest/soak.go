package pgtest

import (
	"os"
	"strconv"
	"testing"
)

// EnvSoak names the soak setting. Unset, the suite's soak-like tests (the
// cleanup endings, the stress counts) run at the strength that proves
// their behaviour once; LEASERACE_SOAK=N runs them N times over, which is
// where rarer timings get their turn. CI's soak phase sets 10.
const EnvSoak = "LEASERACE_SOAK"

// Soak returns the soak setting: 1 when LEASERACE_SOAK is unset, else its
// value. Anything but a whole number of 1 or more fails the test.
func Soak(t testing.TB) int {
	t.Helper()
	n, err := soak(os.Getenv(EnvSoak))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func soak(v string) (int, error) {
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, &SoakError{Value: v}
	}
	return n, nil
}

// SoakError is a LEASERACE_SOAK that is not a whole number of 1 or more.
type SoakError struct{ Value string }

func (e *SoakError) Error() string {
	return EnvSoak + "=" + strconv.Quote(e.Value) + ": want a whole number of repeats, 1 or more"
}
