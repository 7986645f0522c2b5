package engine

import (
	"fmt"
	"runtime/debug"
)

// PanicError is a panic inside leaserace turned into an error. A panic in a
// worker goroutine would otherwise end the process on the spot, skipping
// every deferred Close: a container, a cluster or a schema would outlive
// the command. Caught, it travels back like any error, everything opened is
// closed on the way, and the command reports a bug.
//
// Work that goes on after a panic (a room's listener, a subscriber) says
// Where it was caught.
type PanicError struct {
	// Where names the work that panicked, "" when the error says it.
	Where string
	Value any
	// Stack is the panicking goroutine's stack, for the bug report.
	Stack []byte
}

func (e *PanicError) Error() string {
	if e.Where != "" {
		return fmt.Sprintf("panic in %s: %v", e.Where, e.Value)
	}
	return fmt.Sprintf("panic: %v", e.Value)
}

// CatchPanic, deferred by a function that returns an error, turns a panic in
// that function into a *PanicError in *err:
//
//	func work() (err error) {
//		defer engine.CatchPanic(&err)
//		...
//	}
func CatchPanic(err *error) {
	if r := recover(); r != nil {
		*err = &PanicError{Value: r, Stack: debug.Stack()}
	}
}
