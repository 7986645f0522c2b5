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
type PanicError struct {
	Value any
	// Stack is the panicking goroutine's stack, for the bug report.
	Stack []byte
}

func (e *PanicError) Error() string {
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
