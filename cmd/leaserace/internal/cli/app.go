// Package cli is what every leaserace command shares: the process's streams
// and environment, exit codes and error reporting, the secrets never to be
// printed, the flags that pick PostgreSQL and the knobs, atomic file writes
// and progress on standard error. The commands themselves live in
// cmd/leaserace.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/leaserace/leaserace/engine"
)

// Exit codes, also listed in the root command's help.
const (
	ExitOK        = 0
	ExitFailure   = 1   // a check mismatch or a runtime failure
	ExitUsage     = 2   // a bad flag, scenario file or fixtures file
	ExitNoServer  = 3   // no PostgreSQL provider could start
	ExitBug       = 70  // a panic inside leaserace (EX_SOFTWARE)
	ExitHangup    = 129 // SIGHUP: the terminal closed
	ExitInterrupt = 130 // Ctrl-C
	ExitTerm      = 143 // SIGTERM
)

// App is what every command shares: the process's streams and environment,
// and the secrets that must never be printed. It is built once in main and
// handed to the command constructors, so nothing lives in package state.
type App struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string

	mu       sync.Mutex // guards secrets and warnings
	secrets  []string
	warnings []string
}

// New builds the App for one process.
func New(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *App {
	a := &App{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: getenv}
	// Passwords the environment may hand to PostgreSQL are scrubbed from
	// anything leaserace prints, whichever provider ends up using them.
	a.AddSecretsFromDSN(getenv("DATABASE_URL"))
	a.AddSecret(getenv("PGPASSWORD"))
	return a
}

// NoColor follows https://no-color.org: present and not empty.
func (a *App) NoColor() bool { return a.Getenv("NO_COLOR") != "" }

// ExitError carries the exit code a failure should end the process with.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// UsageErr marks a problem with what the person typed: exit 2.
func UsageErr(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// WithCode marks err with an exit code, unless it is nil.
func WithCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: code, Err: err}
}

// Finish prints err, if any, then the warnings cleaning up left, and picks
// the exit code. ctx is the one WithSignals made.
func (a *App) Finish(err error, ctx context.Context) int {
	code := a.report(err, ctx)
	a.mu.Lock()
	warnings := a.warnings
	a.warnings = nil
	a.mu.Unlock()
	for _, w := range warnings {
		a.Errorf("warning: %s", w)
	}
	return code
}

// report prints err, if any, and picks the exit code. A signal wins over
// whatever error it caused, so Ctrl-C always ends with 130.
func (a *App) report(err error, ctx context.Context) int {
	if err == nil {
		return ExitOK
	}
	var se *SignalError
	if errors.As(context.Cause(ctx), &se) {
		what, code := signalExit(se.Signal)
		a.Errorf("%s; everything leaserace started has been stopped", what)
		return code
	}
	var pe *engine.PanicError
	if errors.As(err, &pe) {
		a.Errorf("hit a bug (%s)\nThis is a bug in leaserace, not in your input; everything it started has been stopped.\nPlease report it with this message and the stack below.\n%s", err.Error(), pe.Stack)
		return ExitBug
	}
	a.Errorf("%s", err.Error())
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailure
}

// Errorf prints one error to standard error, prefixed "leaserace: ". Lines
// after the first (a provider's reasons, a server log) are indented so the
// message still reads as one.
func (a *App) Errorf(format string, args ...any) {
	msg := strings.TrimRight(a.Scrub(fmt.Sprintf(format, args...)), "\n")
	msg = strings.ReplaceAll(msg, "\n", "\n  ")
	fmt.Fprintf(a.Stderr, "leaserace: %s\n", msg)
}

// Warnf keeps a warning for Finish to print after the command's own error:
// cleaning up runs on the way out, and what went wrong should read first.
func (a *App) Warnf(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.warnings = append(a.warnings, fmt.Sprintf(format, args...))
}

// Infof prints a progress or status line to standard error, keeping
// standard output for the command's result.
func (a *App) Infof(format string, args ...any) {
	fmt.Fprintln(a.Stderr, a.Scrub(fmt.Sprintf(format, args...)))
}
