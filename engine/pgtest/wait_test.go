package pgtest

import (
	"testing"

	"github.com/leaserace/leaserace/internal/testwait"
)

// WaitTimeout is internal/testwait's rule, not a second copy of it (the
// rule's own tests, of the scale and of polling, are there).
func TestWaitTimeoutIsTestwaits(t *testing.T) {
	for _, env := range []string{"", "3", "abc"} {
		t.Setenv("LEASERACE_TEST_TIMEOUT_SCALE", env)
		if got, want := WaitTimeout(), testwait.Timeout(); got != want {
			t.Errorf("scale %q: WaitTimeout() = %s, testwait.Timeout() = %s", env, got, want)
		}
	}
}
