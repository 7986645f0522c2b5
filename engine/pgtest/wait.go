package pgtest

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// envTimeoutScale multiplies WaitTimeout: CI on a loaded machine sets it
// above 1. Tests wait for events; the timeout only says when to give up.
const envTimeoutScale = "LEASERACE_TEST_TIMEOUT_SCALE"

// baseWait is how long a test waits for something that should happen.
// Nothing a test waits for takes more than a second on an idle machine;
// the rest is room for a machine shared by many processes.
const baseWait = 10 * time.Second

// WaitTimeout is the one bound on how long a test waits for something it
// expects to happen (a screen, a row, a process to exit): 10 s, times
// LEASERACE_TEST_TIMEOUT_SCALE when that is a number above 0. It is only
// ever reached when the test is failing.
func WaitTimeout() time.Duration {
	return scaled(os.Getenv(envTimeoutScale))
}

func scaled(v string) time.Duration {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 || f > 1000 {
		return baseWait
	}
	return time.Duration(float64(baseWait) * f)
}

// Eventually checks cond, quickly at first and then every 50 ms, until it
// holds; after WaitTimeout it fails the test, saying what did not happen.
// For state that has no event to wait on (a row, a process list): where the
// code can signal, wait on the signal instead.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if err := eventually(WaitTimeout(), cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eventually(limit time.Duration, cond func() bool) error {
	deadline := time.Now().Add(limit)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("still not so after %s", limit)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
	return nil
}

// leakOptions are the goroutines that may outlive a package's tests
// without being a leak of ours (goleak already ignores the runtime's and
// the testing package's own).
func leakOptions() []goleak.Option {
	return []goleak.Option{
		// teatest.NewTestModel waits for a SIGINT in a goroutine of its
		// own that nothing ends once the program is done: one per model,
		// the library's, not the test's.
		goleak.IgnoreAnyFunction("github.com/charmbracelet/x/exp/teatest.NewTestModel.func2"),
	}
}

// findLeaks reports goroutines still running after the tests, once Main
// has stopped the servers. goleak retries for a while, so a goroutine on
// its way out is not counted.
func findLeaks() error {
	return goleak.Find(leakOptions()...)
}
