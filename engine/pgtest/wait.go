package pgtest

import (
	"testing"
	"time"

	"github.com/leaserace/leaserace/internal/testwait"
	"go.uber.org/goleak"
)

// WaitTimeout is the one bound on how long a test waits for something it
// expects to happen (a screen, a row, a process to exit). The rule lives in
// internal/testwait (10 s, times LEASERACE_TEST_TIMEOUT_SCALE); this is that
// rule under the name the engine's tests already use.
func WaitTimeout() time.Duration { return testwait.Timeout() }

// Eventually checks cond, quickly at first and then every 50 ms, until it
// holds; after WaitTimeout it fails the test, saying what did not happen.
// It is testwait.Eventually; see there.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testwait.Eventually(t, what, cond)
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
