package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/pgtest/containertest"
	"github.com/leaserace/leaserace/internal/testwait"
)

// built is the leaserace binary every test runs, built once by TestMain. It
// is the test binary's one piece of shared state: tests only read it.
var built struct {
	path string
	// keep holds open the pipe whose closing, when this process ends however
	// it ends, tells a small shell to remove the binary's directory.
	keep *os.File
}

func TestMain(m *testing.M) {
	if os.Getenv("LEASERACE_PGTEST_WATCHER") == "" {
		if err := buildBinary(); err != nil {
			fmt.Fprintf(os.Stderr, "cannot build leaserace for the tests: %v\n", err)
			os.Exit(2)
		}
		// Every test here is parallel, and each spends most of its time
		// waiting on processes of its own (the binary, a cluster, tmux, ssh):
		// cmd/leaserace alone used 117 s of CPU in 222 s of wall time two at
		// a time, and took 175 s four at a time.
		testwait.WaitingInParallel()
		hangupAtDefault()
	}
	containertest.Main(m)
}

// hangupAtDefault makes the binaries the tests start get SIGHUP at its
// default, as from a terminal, even when go test runs under nohup: exec
// passes an ignored signal on, but resets a handled one. The SIGHUP
// endings and the tmux hang-up tests depend on it; this process only
// catches SIGHUP and drops it, as ignoring it did.
func hangupAtDefault() {
	if signal.Ignored(syscall.SIGHUP) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	}
}

func buildBinary() error {
	dir, err := os.MkdirTemp("", "leaserace-cli-test-")
	if err != nil {
		return err
	}
	// containertest.Main ends with os.Exit, so no defer of ours would run: a shell
	// that waits for this process's end removes the directory instead.
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	rm := exec.Command("sh", "-c", `read -r _; rm -rf "$1"`, "sh", dir)
	rm.Stdin = r
	rm.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Ctrl-C must not stop it first
	if err := rm.Start(); err != nil {
		os.RemoveAll(dir)
		return err
	}
	r.Close()
	built.keep = w

	gobin, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "leaserace")
	// The leaserace_faults tag adds LEASERACE_FAULT, with which the tests
	// make the real binary fail inside a real step; see engine/faults_on.go.
	// -trimpath keeps the clone's directory out of the build cache's keys,
	// so a fresh clone reuses this build from any earlier one: without it
	// a new directory compiled every package again (12 s of CPU here).
	cmd := exec.Command(gobin, "build", "-trimpath", "-tags", "leaserace_faults", "-o", path, ".")
	// Static, as deploy/Dockerfile ships it (FROM scratch): the tests run
	// the kind of binary a room server runs.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w\n%s", err, out.String())
	}
	built.path = path
	return nil
}

// result is what one run of the binary did.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s\n--- stderr:\n%s", r.code, clipOut(r.stdout), r.stderr)
}

func clipOut(s string) string {
	if len(s) > 4000 {
		return s[:4000] + "\n…"
	}
	return s
}

// leaserace runs the binary to completion with args.
func leaserace(t *testing.T, args ...string) result {
	t.Helper()
	return leaseraceEnv(t, nil, args...)
}

// leaseraceEnv runs the binary with extra environment variables.
func leaseraceEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, built.path, args...)
	cmd.Env = append(childEnv(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	default:
		t.Fatalf("running leaserace %v: %v", args, err)
	}
	return res
}

// childEnv is this process's environment without what would steer the
// binary to another server than the one a test names.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "DATABASE_URL" || strings.HasPrefix(k, "PG") || k == "NO_COLOR" || k == "LEASERACE_FAULT" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// pgArgs points the binary at the test server.
func pgArgs(t *testing.T) []string {
	t.Helper()
	return []string{"--pg", "dsn", "--dsn", pgtest.DSN(t)}
}

// withDatabase is dsn with its database replaced, URL or key=value form.
func args(base []string, more ...string) []string {
	return append(append([]string{}, base...), more...)
}
