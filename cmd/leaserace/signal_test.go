package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgtest"
)

// lockedWriter collects a child's output while the test reads it.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// waitFor polls until s shows up in w or the time is up.
func (l *lockedWriter) waitFor(s string, d time.Duration) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if strings.Contains(l.String(), s) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// longScenario writes n resource writes: long enough to interrupt.
func longScenario(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "name: long\nwindow: {from: 0, to: %d}\nttl: 60\ninitial:\n  resource: {epoch: 0, value: null}\nevents:\n", n+1)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - {t: %d, actor: W, action: write, epoch: %d, value: \"v%d\"}\n", i, i, i)
	}
	b.WriteString("expect:\n  - {renewal: \"*\", fencing: \"*\", effects: 0, verdict: safe}\n")
	path := filepath.Join(t.TempDir(), "long.yaml")
	writeScenario(t, path, b.String())
	return path
}

// started is a binary running in the background.
type started struct {
	cmd            *exec.Cmd
	stdout, stderr *lockedWriter
	done           chan struct{}
}

func startLeaserace(t *testing.T, env []string, args ...string) *started {
	t.Helper()
	cmd := exec.Command(built.path, args...)
	cmd.Env = append(childEnv(), env...)
	s := &started{cmd: cmd, stdout: &lockedWriter{w: &bytes.Buffer{}}, stderr: &lockedWriter{w: &bytes.Buffer{}}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.stdout, s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// wait returns the exit code, failing the test if it takes too long.
func (s *started) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-s.done:
		return s.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		t.Fatalf("leaserace did not exit within %s\nstderr:\n%s", d, s.stderr.String())
		return -1
	}
}

// interruptDuringRun sends SIGINT once the run is under way and checks the
// exit code, the message and that no transcript (or part of one) appeared.
func interruptDuringRun(t *testing.T, s *started, out string) {
	t.Helper()
	if !s.stderr.waitFor("PostgreSQL via", 3*time.Minute) {
		t.Fatalf("PostgreSQL never came up:\n%s", s.stderr.String())
	}
	// Into the scenario's steps: opening the run takes a few statements.
	time.Sleep(400 * time.Millisecond)
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := s.wait(t, time.Minute); code != 130 {
		t.Fatalf("want exit 130 after SIGINT, got %d\nstderr:\n%s", code, s.stderr.String())
	}
	if !strings.Contains(s.stderr.String(), "leaserace: interrupted") {
		t.Errorf("stderr should say it was interrupted:\n%s", s.stderr.String())
	}
	if s.stdout.String() != "" {
		t.Errorf("an interrupted run printed a transcript:\n%s", clipOut(s.stdout.String()))
	}
	if out != "" {
		if _, err := os.Stat(out); err == nil {
			t.Errorf("an interrupted run wrote %s", out)
		}
		assertOnly(t, filepath.Dir(out))
	}
}

func TestSIGINTDuringRunDSN(t *testing.T) {
	t.Parallel()
	// A database of its own, so that any schema or session left behind is
	// this run's and no other test's.
	dsn := pgtest.DSN(t)
	db := pgtest.ScratchDatabase(t, dsn, "lr_cli_")
	out := filepath.Join(t.TempDir(), "never.json")
	s := startLeaserace(t, nil, "run", "--pg", "dsn", "--dsn", pgtest.WithDatabase(t, dsn, db), "--scenario", longScenario(t, 1000), "--out", out)
	interruptDuringRun(t, s, out)

	assertNothingLeft(t, pgtest.WithDatabase(t, dsn, db), db)
}

func TestRunLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	db := pgtest.ScratchDatabase(t, dsn, "lr_cli_")
	res := leaserace(t, "run", "--pg", "dsn", "--dsn", pgtest.WithDatabase(t, dsn, db))
	if res.code != 0 {
		t.Fatalf("want exit 0, got %v", res)
	}
	assertNothingLeft(t, pgtest.WithDatabase(t, dsn, db), db)
}

// assertNothingLeft checks that a scratch database holds no leaserace
// schema and no session other than the checker's own.
func assertNothingLeft(t *testing.T, dsn, db string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lr\_%'`)
	schemas, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(schemas) != 0 {
		t.Errorf("schemas left behind: %v", schemas)
	}
	// The server notices closed sessions a moment later.
	var sessions int
	for range 50 {
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, db).Scan(&sessions); err != nil {
			t.Fatal(err)
		}
		if sessions == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if sessions != 0 {
		t.Errorf("%d sessions of the interrupted run are still connected", sessions)
	}
}

// localTempDir is a short, world-traversable directory for the binary's
// TMPDIR: its local cluster lives there (a Unix socket path must stay
// short) and runs as the postgres user when the tests run as root.
func localTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lrt-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// skipWithoutLocal skips (or, when servers are required, fails) a test whose
// binary could not start a local cluster.
func skipWithoutLocal(t *testing.T, code int, stderr string) {
	t.Helper()
	if code != 3 {
		return
	}
	if os.Getenv("LEASERACE_REQUIRE_POSTGRES") == "1" {
		t.Fatalf("--pg local could not start (LEASERACE_REQUIRE_POSTGRES=1):\n%s", stderr)
	}
	t.Skipf("--pg local cannot start here:\n%s", stderr)
}

// assertNoCluster checks that nothing of a local cluster under dir is left:
// no file, and no process running from it or naming it.
func assertNoCluster(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind in TMPDIR: %s", e.Name())
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		if strings.HasPrefix(cwd, dir) || bytes.Contains(cmdline, []byte(dir)) {
			t.Errorf("process %s still runs from the cluster: %q", filepath.Base(p), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}

func TestLocalProviderEndToEnd(t *testing.T) {
	t.Parallel()
	tmp := localTempDir(t)
	res := leaseraceEnv(t, []string{"TMPDIR=" + tmp}, "run", "--pg", "local", "--renewal", "blind", "--fencing", "monotonic")
	skipWithoutLocal(t, res.code, res.stderr)
	if res.code != 0 {
		t.Fatalf("want exit 0, got %v", res)
	}
	if !strings.Contains(res.stderr, "PostgreSQL via local in ") {
		t.Errorf("stderr should name the local provider:\n%s", res.stderr)
	}
	tr := readTranscript(t, res.stdout)
	// blind/monotonic: the coordinator is corrupted, the resource is not.
	if c := tr.Outcome.Coordinator; c == nil || c.Owner != "A" || c.Fence != 1 || tr.Outcome.Resource.Fence != 2 || tr.Outcome.Effects != 1 {
		t.Errorf("blind/monotonic: got %+v", tr.Outcome)
	}
	if tr.Meta == nil || tr.Meta.Provider != "local" {
		t.Errorf("meta: %+v", tr.Meta)
	}
	assertNoCluster(t, tmp)
}

func TestSIGINTDuringLocalRun(t *testing.T) {
	t.Parallel()
	tmp := localTempDir(t)
	s := startLeaserace(t, []string{"TMPDIR=" + tmp}, "run", "--pg", "local", "--scenario", longScenario(t, 1000))
	if !s.stderr.waitFor("PostgreSQL via", 3*time.Minute) {
		code := s.wait(t, time.Minute)
		skipWithoutLocal(t, code, s.stderr.String())
		t.Fatalf("PostgreSQL never came up (exit %d):\n%s", code, s.stderr.String())
	}
	interruptDuringRun(t, s, "")
	assertNoCluster(t, tmp)
}

func TestSIGINTDuringLocalStart(t *testing.T) {
	t.Parallel()
	tmp := localTempDir(t)
	// A long run, so that the process is still there to interrupt however
	// quickly the cluster starts: the short built-in race can end within
	// a few hundred milliseconds of "initdb".
	s := startLeaserace(t, []string{"TMPDIR=" + tmp}, "run", "--pg", "local", "--scenario", longScenario(t, 1000))
	// Interrupt as soon as the start reports initdb (or copying its cluster).
	if !s.stderr.waitFor("initdb", time.Minute) {
		code := s.wait(t, time.Minute)
		skipWithoutLocal(t, code, s.stderr.String())
		t.Fatalf("no start-up progress (exit %d):\n%s", code, s.stderr.String())
	}
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	code := s.wait(t, time.Minute)
	if code != 130 {
		t.Fatalf("want exit 130 after SIGINT during start-up, got %d\n%s", code, s.stderr.String())
	}
	assertNoCluster(t, tmp)
}
