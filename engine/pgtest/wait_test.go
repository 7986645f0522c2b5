package pgtest

import (
	"testing"
	"time"
)

func TestWaitTimeoutScales(t *testing.T) {
	for _, c := range []struct {
		env  string
		want time.Duration
	}{
		{"", baseWait},
		{"1", baseWait},
		{"3", 3 * baseWait},
		{"0.5", baseWait / 2},
		{"0", baseWait},
		{"-2", baseWait},
		{"lots", baseWait},
		{"1e9", baseWait},
	} {
		t.Setenv(envTimeoutScale, c.env)
		if got := WaitTimeout(); got != c.want {
			t.Errorf("%s=%q: WaitTimeout() = %s, want %s", envTimeoutScale, c.env, got, c.want)
		}
	}
}

// Eventually returns as soon as the condition holds, checking again while
// it does not, and gives up at its limit with an error saying how long it
// waited.
func TestEventually(t *testing.T) {
	calls := 0
	if err := eventually(time.Minute, func() bool { calls++; return calls == 5 }); err != nil || calls != 5 {
		t.Errorf("a condition true at the 5th check: %v after %d checks", err, calls)
	}
	calls = 0
	if err := eventually(time.Minute, func() bool { calls++; return true }); err != nil || calls != 1 {
		t.Errorf("a condition true at once: %v after %d checks", err, calls)
	}
	began := time.Now()
	err := eventually(30*time.Millisecond, func() bool { return false })
	if err == nil {
		t.Fatal("a condition never true: no error")
	}
	if took := time.Since(began); took < 30*time.Millisecond {
		t.Errorf("gave up after %s, before its 30ms", took)
	}
	if want := "still not so after 30ms"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
