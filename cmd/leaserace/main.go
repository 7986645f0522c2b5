// Command leaserace is a teaching tool for the lease-renewal race: a
// heartbeat that goes stale in flight, played step by step against a real
// PostgreSQL server.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/leaserace/leaserace/engine"
	"github.com/spf13/cobra"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// Exit codes, also listed in the root command's help.
const (
	exitOK        = 0
	exitFailure   = 1  // a check mismatch or a runtime failure
	exitUsage     = 2  // a bad flag, scenario file or fixtures file
	exitNoServer  = 3  // no PostgreSQL provider could start
	exitBug       = 70 // a panic inside leaserace (EX_SOFTWARE)
	exitInterrupt = 130
	exitTerm      = 143
)

func main() {
	// testcontainers-go announces each Docker connection through its own
	// package-level logger, straight to stderr, which would tear through the
	// TUI. leaserace reports start-up progress itself.
	tclog.SetDefault(tclog.NewNoopLogger())
	os.Exit(realMain())
}

func realMain() int {
	// Two contexts, one per signal, so the exit code can tell Ctrl-C
	// (130) from a SIGTERM (143).
	intCtx, stopInt := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stopInt()
	ctx, stopTerm := signal.NotifyContext(intCtx, syscall.SIGTERM)
	defer stopTerm()

	a := newApp(os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	return a.finish(a.execute(ctx, newRootCmd(a)), intCtx, ctx)
}

// execute runs the command line. A panic on the command's own goroutine has
// unwound through every deferred Close by the time it reaches the recover
// here, so what the command started is stopped; it comes back as a
// *engine.PanicError and ends the process with exit 70 and a bug report
// rather than Go's crash dump.
func (a *app) execute(ctx context.Context, root *cobra.Command) (err error) {
	defer engine.CatchPanic(&err)
	return root.ExecuteContext(ctx)
}

// app is what every command shares: the process's streams and environment,
// and the secrets that must never be printed. It is built once in main and
// handed to the command constructors, so nothing lives in package state.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string

	mu       sync.Mutex // guards secrets and warnings
	secrets  []string
	warnings []string
}

func newApp(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *app {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	// Passwords the environment may hand to PostgreSQL are scrubbed from
	// anything leaserace prints, whichever provider ends up using them.
	a.addSecretsFromDSN(getenv("DATABASE_URL"))
	a.addSecret(getenv("PGPASSWORD"))
	return a
}

// noColor follows https://no-color.org: present and not empty.
func (a *app) noColor() bool { return a.getenv("NO_COLOR") != "" }

// exitError carries the exit code a failure should end the process with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr marks a problem with what the person typed: exit 2.
func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// withCode marks err with an exit code, unless it is nil.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// finish prints err, if any, then the warnings cleaning up left, and picks
// the exit code.
func (a *app) finish(err error, intCtx, ctx context.Context) int {
	code := a.report(err, intCtx, ctx)
	a.mu.Lock()
	warnings := a.warnings
	a.warnings = nil
	a.mu.Unlock()
	for _, w := range warnings {
		a.errorf("warning: %s", w)
	}
	return code
}

// report prints err, if any, and picks the exit code. A signal wins over
// whatever error it caused, so Ctrl-C always ends with 130.
func (a *app) report(err error, intCtx, ctx context.Context) int {
	if err == nil {
		return exitOK
	}
	switch {
	case intCtx.Err() != nil:
		a.errorf("interrupted; everything leaserace started has been stopped")
		return exitInterrupt
	case ctx.Err() != nil:
		a.errorf("terminated; everything leaserace started has been stopped")
		return exitTerm
	}
	var pe *engine.PanicError
	if errors.As(err, &pe) {
		a.errorf("hit a bug (%s)\nThis is a bug in leaserace, not in your input; everything it started has been stopped.\nPlease report it with this message and the stack below.\n%s", err.Error(), pe.Stack)
		return exitBug
	}
	a.errorf("%s", err.Error())
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailure
}

// errorf prints one error to standard error, prefixed "leaserace: ". Lines
// after the first (a provider's reasons, a server log) are indented so the
// message still reads as one.
func (a *app) errorf(format string, args ...any) {
	msg := strings.TrimRight(a.scrub(fmt.Sprintf(format, args...)), "\n")
	msg = strings.ReplaceAll(msg, "\n", "\n  ")
	fmt.Fprintf(a.stderr, "leaserace: %s\n", msg)
}

// warnf keeps a warning for finish to print after the command's own error:
// cleaning up runs on the way out, and what went wrong should read first.
func (a *app) warnf(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.warnings = append(a.warnings, fmt.Sprintf(format, args...))
}

// infof prints a progress or status line to standard error, keeping
// standard output for the command's result.
func (a *app) infof(format string, args ...any) {
	fmt.Fprintln(a.stderr, a.scrub(fmt.Sprintf(format, args...)))
}
