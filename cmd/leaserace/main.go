// Command leaserace is a teaching tool for the lease-renewal race: a
// heartbeat that goes stale in flight, played step by step against a real
// PostgreSQL server.
package main

import (
	"context"
	"io"
	"os"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine"
	"github.com/spf13/cobra"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

func main() {
	// testcontainers-go announces each Docker connection through its own
	// package-level logger, straight to stderr, which would tear through the
	// TUI. leaserace reports start-up progress itself.
	tclog.SetDefault(tclog.NewNoopLogger())
	os.Exit(realMain())
}

func realMain() int {
	// Ctrl-C, SIGTERM and a closed terminal (SIGHUP) end ctx, and the
	// signal is its cause, so the exit code can tell them apart.
	ctx, stop := cli.WithSignals(context.Background())
	defer stop()

	a := newApp(os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	return a.Finish(a.execute(ctx, newRootCmd(a)), ctx)
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

// app is the process's shared cli.App; the commands are its methods.
type app struct {
	*cli.App
}

func newApp(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *app {
	return &app{cli.New(stdin, stdout, stderr, getenv)}
}
