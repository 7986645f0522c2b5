package tui

import (
	"errors"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/tui/screen"
)

// failedPart asks the engine which part err is blamed on, for the status
// line's words; the error's text is never read.
func failedPart(err error) screen.FailedPart {
	var bug *engine.PanicError
	switch {
	case errors.As(err, &bug):
		return screen.FailedBug
	case engine.IsResourceDown(err):
		return screen.FailedResource
	case engine.IsServerGone(err):
		return screen.FailedServer
	}
	return screen.FailedStep
}
