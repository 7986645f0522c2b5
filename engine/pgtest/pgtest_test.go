package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// envCrash makes TestCrashingChild start servers and then die; the other
// tests run this test binary that way as a child process.
const envCrash = "LEASERACE_PGTEST_CRASH"

func TestCrashingChild(t *testing.T) {
	how := os.Getenv(envCrash)
	if how == "" {
		t.Skip("only runs as a child of TestWatcherCleansUp")
	}
	if how == "container-start" {
		// Killed by the parent while this start is under way.
		_, err := mustHarness(t).container.get()
		t.Fatalf("the container start ended before the parent killed us: %v", err)
	}
	if dir := mustHarness(t).tmp.dir; dir != "" {
		fmt.Printf("tmpdir %s\n", dir)
	}
	fmt.Printf("server local %s\n", DSN(t))
	if how == "panic" {
		for _, s := range Servers(t) {
			fmt.Printf("server %s %s\n", s.Provider, s.DSN)
		}
	}
	fmt.Println("ready")
	if how == "panic" {
		panic("a test that panics with servers running")
	}
	time.Sleep(time.Minute) // until the parent interrupts us
}

func TestWatcherCleansUp(t *testing.T) {
	t.Parallel()
	needLocal(t) // skips or fails here the way the child would
	for _, how := range []string{"panic", "interrupt"} {
		t.Run(how, func(t *testing.T) {
			// Each child process starts servers of its own and names them.
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			// An empty TMPDIR, so the child makes a temporary directory
			// of its own, as a test process run by go test does.
			cmd, out := startChild(t, ctx, envCrash+"="+how, "TMPDIR=")
			var servers, tmpdirs []string
			var transcript strings.Builder
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := sc.Text()
				transcript.WriteString(line + "\n")
				if s, ok := strings.CutPrefix(line, "server "); ok {
					servers = append(servers, s)
				}
				if d, ok := strings.CutPrefix(line, "tmpdir "); ok {
					tmpdirs = append(tmpdirs, d)
				}
				if line == "ready" && how == "interrupt" {
					// What a Ctrl-C in the terminal does to the test process.
					syscall.Kill(cmd.Process.Pid, syscall.SIGINT)
				}
			}
			if err := cmd.Wait(); err == nil {
				t.Fatalf("the child did not die:\n%s", transcript.String())
			}
			if len(servers) == 0 {
				t.Fatalf("the child started no server:\n%s", transcript.String())
			}
			t.Logf("child and watcher said:\n%s", transcript.String())
			if _, ok, _ := memoryFS(); ok && len(tmpdirs) == 0 {
				t.Errorf("the child made no temporary directory of its own:\n%s", transcript.String())
			}
			for _, d := range tmpdirs {
				if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the child's temporary directory %s is still there (%v)", d, err)
				}
			}
			for _, s := range servers {
				provider, dsn, _ := strings.Cut(s, " ")
				switch provider {
				case "local":
					assertLocalGone(t, dsn)
				case "container":
					assertContainerGone(t, ctx, dsn)
				}
			}
		})
	}
}

// A test process killed outright while its cluster is still being made
// (what a fuzz coordinator does to a worker that is slow to stop, or a
// SIGKILL) leaves neither the directory nor initdb behind.
func TestWatcherCleansUpAClusterStillBeingMade(t *testing.T) {
	t.Parallel()
	needLocal(t) // skips or fails here the way the child would
	// The child makes its cluster here, so that no other test's shows up.
	tmp, err := os.MkdirTemp("", "lrk")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	// initdb runs as the postgres user when we are root: it must get in.
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd, out := startChild(t, ctx, envCrash+"=interrupt", "TMPDIR="+tmp)
	said := make(chan string, 1)
	go func() {
		// EOF comes when the child and its watcher have both finished.
		b, _ := io.ReadAll(out)
		said <- string(b)
	}()
	var dir string
	for deadline := time.Now().Add(WaitTimeout()); dir == "" && time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if made, _ := filepath.Glob(filepath.Join(tmp, "leaserace-pg-*", "data")); len(made) > 0 {
			dir = filepath.Dir(made[0])
		}
	}
	if dir == "" {
		_ = cmd.Process.Kill()
		t.Fatalf("the child made no cluster directory in %s; it said:\n%s", WaitTimeout(), <-said)
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	transcript := <-said
	_ = cmd.Wait()
	t.Logf("child and watcher said:\n%s", transcript)
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) > 0 {
		t.Errorf("left behind in %s: %v", tmp, left)
	}
	assertClusterGone(t, dir)
}

// The same for a container: a child killed outright while Docker creates
// its container leaves no container behind, although Docker finishes the
// create after its client is gone.
func TestWatcherCleansUpAContainerStillStarting(t *testing.T) {
	t.Parallel()
	if _, err := mustHarness(t).container.get(); err != nil {
		unavailable(t, fmt.Sprintf("no container provider here: %v", err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cmd, out := startChild(t, ctx, envCrash+"=container-start", envWatcherVerbose+"=1")
	var startID string
	var transcript strings.Builder
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		transcript.WriteString(line + "\n")
		if id, ok := strings.CutPrefix(line, "pgtest watcher: told of "+startedContainers+" "); ok && startID == "" {
			startID = id
			// Kill it once Docker has made the container, while the start
			// is still waiting for PostgreSQL inside it.
			waitForLabelled(t, ctx, cli, startID)
			if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = cmd.Wait()
	t.Logf("child and watcher said:\n%s", transcript.String())
	if startID == "" {
		t.Fatal("the child never started a container")
	}
	// Give Docker longer than the watcher waited, then look.
	time.Sleep(dockerLag)
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", "org.leaserace.start="+startID)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		t.Errorf("container %s of the killed start is still there (%s)", c.ID[:12], c.State)
		_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
	}
}

// waitForLabelled waits until Docker lists a container of one start.
func waitForLabelled(t *testing.T, ctx context.Context, cli *testcontainers.DockerClient, startID string) {
	t.Helper()
	for ctx.Err() == nil {
		list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", "org.leaserace.start="+startID)})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("Docker never listed the child's container")
}

// needLocal skips the test, or fails it under LEASERACE_REQUIRE_POSTGRES=1,
// when this machine cannot start a local cluster.
func needLocal(t *testing.T) {
	t.Helper()
	if _, err := mustHarness(t).local.get(); err != nil {
		unavailable(t, fmt.Sprintf("no local PostgreSQL cluster: %v", err))
	}
}

// startChild runs TestCrashingChild in this test binary with env added.
// The child and its watcher both write to out; reading it to the end means
// waiting for the watcher to finish too. The child starts servers of its
// own even when LEASERACE_TEST_DSN names one: what these tests watch is
// what pgtest starts.
func startChild(t *testing.T, ctx context.Context, env ...string) (*exec.Cmd, io.Reader) {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashingChild$", "-test.v")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, envTestDSN+"=")
	}), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

func assertLocalGone(t *testing.T, dsn string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	dir := u.Query().Get("host")
	if !strings.Contains(dir, "leaserace-pg-") {
		return // LEASERACE_TEST_DSN: not ours
	}
	assertClusterGone(t, dir)
}

// assertClusterGone checks a local cluster's directory and processes are
// gone. The processes may take a moment more: the server dies of the
// parent-death signal the kernel sends while the test process exits, after
// it has closed the pipe whose end wakes the watcher, so the watcher can
// remove the directory before the server has finished dying.
func assertClusterGone(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s survived the crash (stat: %v)", dir, err)
	}
	var left []string
	defer func() {
		for _, p := range left {
			t.Errorf("a process still runs on %s: %s", dir, p)
		}
	}()
	Eventually(t, "no process running on "+dir, func() bool {
		left = processesOn(dir)
		return len(left) == 0
	})
}

// processesOn lists the command lines that mention dir.
func processesOn(dir string) []string {
	var out []string
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), dir) {
			out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

func assertContainerGone(t *testing.T, ctx context.Context, dsn string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		for _, p := range c.Ports {
			if fmt.Sprint(p.PublicPort) == u.Port() {
				t.Errorf("container %s on port %s survived the crash", c.ID, u.Port())
			}
		}
	}
}

func TestDSNFromEnvironmentLeavesEnvironmentAlone(t *testing.T) {
	dsn := DSN(t)
	if !strings.Contains(dsn, "leaserace-pg-") {
		t.Skip("needs the local cluster")
	}
	t.Setenv("DATABASE_URL", "postgres://elsewhere/db")
	t.Setenv("PGHOST", "")
	os.Unsetenv("PGHOST")
	srv, err := dsnFromEnvironment(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Provider != "dsn" || !strings.Contains(srv.DSN, "leaserace-pg-") {
		t.Errorf("server %+v", srv)
	}
	if got := os.Getenv("DATABASE_URL"); got != "postgres://elsewhere/db" {
		t.Errorf("DATABASE_URL became %q", got)
	}
	if _, set := os.LookupEnv("PGHOST"); set {
		t.Error("PGHOST stayed set")
	}
}

// TestSharedIsMadeOnceAndClosedLastFirst: tests asking for one key get
// what one open made; the close, after the tests, runs each close once,
// the last made first, and reports their errors.
func TestSharedIsMadeOnceAndClosedLastFirst(t *testing.T) {
	t.Parallel()
	h := newHarness(nil)
	var opened, closed []string
	open := func(name string, closeErr error) func(context.Context) (string, func(context.Context) error, error) {
		return func(context.Context) (string, func(context.Context) error, error) {
			opened = append(opened, name)
			return name + " value", func(context.Context) error {
				closed = append(closed, name)
				return closeErr
			}, nil
		}
	}
	boom := errors.New("boom")
	if got := sharedOn(t, h, "a", open("a", nil)); got != "a value" {
		t.Fatalf("first a: %q", got)
	}
	if got := sharedOn(t, h, "b", open("b", boom)); got != "b value" {
		t.Fatalf("b: %q", got)
	}
	if got := sharedOn(t, h, "a", open("a again", nil)); got != "a value" {
		t.Fatalf("second a: %q, want what the first open made", got)
	}
	if !slices.Equal(opened, []string{"a", "b"}) {
		t.Fatalf("opened %v, want a and b once each", opened)
	}
	if err := h.closeShared(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("close: %v, want b's error", err)
	}
	if !slices.Equal(closed, []string{"b", "a"}) {
		t.Fatalf("closed %v, want b then a", closed)
	}
	if err := h.closeShared(context.Background()); err != nil || len(closed) != 2 {
		t.Fatalf("a second close: %v, closed %v: nothing should close twice", err, closed)
	}
}
