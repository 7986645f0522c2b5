package tui

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/resource"
	"github.com/leaserace/leaserace/tui/screen"
)

// The part a failure is blamed on is the engine's classification of the
// error, never its text: words that name PostgreSQL do not make it gone.
func TestFailedPartIsTheEngines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want screen.FailedPart
	}{
		{errors.New("syntax error near PostgreSQL went away"), screen.FailedStep},
		{fmt.Errorf("step 2: %w", context.DeadlineExceeded), screen.FailedServer},
		{&resource.CallError{URL: "http://127.0.0.1:1", What: "write", Message: "refused", Err: syscall.ECONNREFUSED}, screen.FailedResource},
		{fmt.Errorf("step 3: %w", &engine.PanicError{Value: "index out of range"}), screen.FailedBug},
		{fmt.Errorf("step 4: %w", context.Canceled), screen.FailedStep},
	} {
		if got := failedPart(tc.err); got != tc.want {
			t.Errorf("%v: blamed on %v, want %v", tc.err, got, tc.want)
		}
	}
}
