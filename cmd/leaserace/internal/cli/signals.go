package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// SignalError is the cause of a context ended by a stop signal.
type SignalError struct{ Signal os.Signal }

func (e *SignalError) Error() string { return fmt.Sprintf("stopped by %v", e.Signal) }

// WithSignals returns a context that ends, with a *SignalError as its
// cause, when the first stop signal arrives: Ctrl-C, SIGTERM, or SIGHUP,
// the terminal closing under it, which is how many people end a program
// in a window. What leaserace started is then stopped before it exits.
// Until stop is called, later signals are caught too, so a second Ctrl-C
// cannot cut the cleanup short.
func WithSignals(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	caught := make(chan os.Signal, 1)
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP} {
		// SIGHUP ignored from the start stays ignored: under nohup a room
		// server must outlive the terminal it was started from, and Notify
		// would stop ignoring it. SIGINT and SIGTERM are caught even so, as
		// before: a script that starts leaserace in the background (where
		// the shell ignores SIGINT) may still stop it with kill -INT.
		if sig == syscall.SIGHUP && signal.Ignored(sig) {
			continue
		}
		signal.Notify(caught, sig)
	}
	go func() {
		select {
		case s := <-caught:
			cancel(&SignalError{Signal: s})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(caught)
		cancel(nil)
	}
}

// signalExit is the message and exit code for a run a stop signal ended:
// 128 plus the signal's number, as a shell reports it.
func signalExit(s os.Signal) (what string, code int) {
	switch s {
	case os.Interrupt:
		what = "interrupted"
	case syscall.SIGTERM:
		what = "terminated"
	case syscall.SIGHUP:
		what = "hung up (the terminal closed)"
	default:
		what = "stopped by " + s.String()
	}
	if n, ok := s.(syscall.Signal); ok {
		return what, 128 + int(n)
	}
	return what, ExitFailure
}
