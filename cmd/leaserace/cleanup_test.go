package main

// The cleanup suite: leaserace run is ended every way it can end (normal
// exit, an error mid-run, a panic inside a step, SIGINT and SIGTERM while
// PostgreSQL is starting and while the scenario runs, SIGHUP while it
// runs), on a local cluster, a DSN and a container, and after every run
// the leftovers are counted:
// cluster processes, temp directories, containers, listening ports and
// schemas. The count must be zero.
//
// go test runs each ending once per provider; LEASERACE_SOAK=N runs each N
// times (CI's soak phase uses 10), with the moment of the signal and the
// step that panics varied from run to run.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine/pgserver/pgcontainer"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/moby/moby/client"
	"github.com/shirou/gopsutil/v4/process"
	"github.com/testcontainers/testcontainers-go"
)

// cleanupRepeats is how often each way of ending is tried: once, or
// LEASERACE_SOAK times (pgtest.Soak). The soak is where the rarer timings
// (a signal a little later, a panic in another kind of step) get their
// turn; once is enough to prove every ending cleans up.
func cleanupRepeats(t *testing.T) int {
	t.Helper()
	return pgtest.Soak(t)
}

// panicTimes are the renewal race's step times, one per kind of step (send,
// expire, acquire, deliver, effect): the panic ending hits them in turn.
var panicTimes = [...]int64{1055, 1060, 1070, 1075, 1080}

// ending is one way a run of the binary ends.
type ending struct {
	name string
	// signal is sent once the run reaches stage: "start" (PostgreSQL is
	// starting) or "run" (the scenario is running); nil sends none.
	signal os.Signal
	stage  string
	// killServer stops the run's own local cluster mid-run instead.
	killServer bool
	// badValue plays a scenario whose write PostgreSQL refuses mid-run.
	badValue bool
	// panics makes the binary (built with the leaserace_faults tag) panic
	// inside a step of the renewal race, after that step's SQL ran.
	panics bool
	codes  []int
	// halfAsOften tries the ending half as many times (rounded up).
	halfAsOften bool
	// env is added to the binary's environment.
	env []string
}

func endings(provider string) []ending {
	out := []ending{
		{name: "normal exit", codes: []int{0}},
		{name: "error mid-run", badValue: true, codes: []int{1}},
		{name: "panic inside a step", panics: true, codes: []int{cli.ExitBug}},
		{name: "SIGINT mid-run", signal: os.Interrupt, stage: "run", codes: []int{130}},
		{name: "SIGTERM mid-run", signal: syscall.SIGTERM, stage: "run", codes: []int{143}},
		// The terminal closing under a run.
		{name: "SIGHUP mid-run", signal: syscall.SIGHUP, stage: "run", codes: []int{cli.ExitHangup}},
	}
	if provider == "dsn" {
		return out
	}
	out = append(out,
		ending{name: "SIGINT mid-start", signal: os.Interrupt, stage: "start", codes: []int{130}},
		ending{name: "SIGTERM mid-start", signal: syscall.SIGTERM, stage: "start", codes: []int{143}},
	)
	if provider == "local" {
		// On top of the error above, which covers error exits as often:
		// fewer, as each costs a whole cluster.
		out = append(out, ending{name: "server killed mid-run", killServer: true, codes: []int{1}, halfAsOften: true})
	}
	return out
}

func TestCleanupLocal(t *testing.T) {
	t.Parallel()
	for _, e := range endings("local") {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			n := cleanupRepeats(t)
			if e.halfAsOften {
				n = (n + 1) / 2
			}
			repeatEnding(t, e, n, func(t *testing.T, i int) []string {
				return []string{"--pg", "local"}
			})
		})
	}
}

func TestCleanupDSN(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	for _, e := range endings("dsn") {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			// A database of its own per ending, so any schema or session
			// left is this ending's.
			db := pgtest.ScratchDatabase(t, dsn, "lr_cli_")
			scratch := pgtest.WithDatabase(t, dsn, db)
			repeatEnding(t, e, cleanupRepeats(t), func(t *testing.T, i int) []string {
				return []string{"--pg", "dsn", "--dsn", scratch}
			}, dsnLeftovers(scratch, db))
		})
	}
}

func TestCleanupContainer(t *testing.T) {
	t.Parallel()
	// The binary would pull a missing image; tests never do.
	pgtest.ContainerReady(t)
	// Containers are slow to start; the endings share go test's -parallel
	// slots with the rest of the package, and each run's containers are
	// told apart by their session label.
	for _, e := range endings("container") {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			repeatEnding(t, e, cleanupRepeats(t), func(t *testing.T, i int) []string {
				return []string{"--pg", "container"}
			})
		})
	}
}

// repeatEnding runs the binary n times, ended the way e says, and counts
// what each run left behind. extra checks add provider-specific counts.
func repeatEnding(t *testing.T, e ending, n int, pgArgs func(*testing.T, int) []string, extra ...func(*testing.T) []string) {
	t.Helper()
	var left []string
	began := time.Now()
	for i := range n {
		left = append(left, runAndCount(t, e, i, pgArgs(t, i), extra...)...)
	}
	t.Logf("%d runs × %s: %d leftovers in %s", n, e.name, len(left), time.Since(began).Round(time.Millisecond))
	for _, l := range left {
		t.Errorf("left behind: %s", l)
	}
}

// runAndCount runs the binary once and returns what it left behind, after
// removing it so that a failing test leaves nothing either.
func runAndCount(t *testing.T, e ending, i int, pgArgs []string, extra ...func(*testing.T) []string) []string {
	t.Helper()
	tmp, err := os.MkdirTemp("", "lrc-")
	if err != nil {
		t.Fatal(err)
	}
	// The local cluster runs as the postgres user and must reach it.
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	scenarioFile := longScenario(t, 1000)
	if e.badValue {
		scenarioFile = badValueScenario(t)
	}
	container := containsString(pgArgs, "container")
	args := append([]string{"run", "--scenario", scenarioFile}, pgArgs...)
	if e.signal == nil && !e.killServer && !e.badValue {
		args = append([]string{"run"}, pgArgs...) // the short built-in race
	}
	var fault string
	if e.panics {
		fault = fmt.Sprintf("panic@%d", panicTimes[i%len(panicTimes)])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command(built.path, args...)
	if container {
		// Through a shell that waits for it: testcontainers labels the
		// containers with a session derived from the binary's parent, so
		// a parent of its own makes this run's containers countable apart
		// from any other test's.
		cmd = exec.Command("sh", append([]string{"-c", `"$0" "$@"; exit $?`, built.path}, args...)...)
	}
	cmd.Env = append(append(childEnv(), "TMPDIR="+tmp, "NO_COLOR=1", "LEASERACE_FAULT="+fault), e.env...)
	stderr := &lockedWriter{w: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	tree := watchTree(ctx, cmd.Process.Pid, done)
	if container {
		tree.session = sessionOf(t, cmd.Process.Pid)
	}
	defer func() {
		select {
		case <-done:
		default:
			_ = syscall.Kill(tree.binaryPID(t, cmd.Process.Pid), syscall.SIGKILL)
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	signal := func(sig os.Signal) {
		p, err := os.FindProcess(tree.binaryPID(t, cmd.Process.Pid))
		if err == nil {
			_ = p.Signal(sig)
		}
	}

	// Vary the moment a little from run to run.
	jitter := time.Duration(i%5) * 60 * time.Millisecond
	switch {
	case e.stage == "start":
		if !waitForAny(stderr, time.Minute, "initdb", "starting container") {
			skipOrFailNoServer(t, cmd, done, stderr)
		}
		time.Sleep(50*time.Millisecond + jitter)
		signal(e.signal)
	case e.stage == "run" || e.killServer:
		if !stderr.waitFor("PostgreSQL via", 3*time.Minute) {
			skipOrFailNoServer(t, cmd, done, stderr)
		}
		time.Sleep(300*time.Millisecond + jitter)
		if container {
			// The count below can see this run's container: mid-run
			// there is exactly one with its session label.
			if n := tree.noteContainers(t); n != 1 {
				t.Errorf("run %d: mid-run %d containers carry its session label, want 1", i, n)
			}
		}
		if e.killServer {
			killLocalServer(t, tmp)
		} else {
			signal(e.signal)
		}
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("run %d did not exit in time\n%s", i, stderr.String())
	}
	code := cmd.ProcessState.ExitCode()
	if !containsInt(e.codes, code) {
		t.Errorf("run %d: exit %d, want %v\n%s", i, code, e.codes, stderr.String())
	}
	if e.killServer && !strings.Contains(stderr.String(), "PostgreSQL") {
		t.Errorf("run %d: the message does not name PostgreSQL:\n%s", i, stderr.String())
	}
	if e.killServer && strings.Contains(stderr.String(), "warning") {
		// The cluster goes with its data directory: nothing to warn about.
		t.Errorf("run %d: a warning about cleaning up a server that is removed anyway:\n%s", i, stderr.String())
	}
	if e.panics {
		for _, want := range []string{"injected fault: panic inside the step at t=", "This is a bug in leaserace", "goroutine "} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("run %d (%s): the bug report lacks %q:\n%s", i, fault, want, stderr.String())
			}
		}
	}

	var left []string
	left = append(left, tree.survivors(t)...)
	left = append(left, processesUnder(t, tmp)...)
	entries, _ := os.ReadDir(tmp)
	for _, en := range entries {
		left = append(left, "temp directory "+filepath.Join(tmp, en.Name()))
	}
	if container {
		left = append(left, tree.containerLeftovers(t)...)
	}
	for _, f := range extra {
		left = append(left, f(t)...)
	}
	if len(left) > 0 {
		t.Logf("run %d (exit %d) stderr:\n%s", i, code, stderr.String())
	}
	return left
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// waitForAny polls until one of subs shows up in w or the time is up.
func waitForAny(w *lockedWriter, d time.Duration, subs ...string) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		out := w.String()
		for _, s := range subs {
			if strings.Contains(out, s) {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// skipOrFailNoServer ends a run whose PostgreSQL never came up.
func skipOrFailNoServer(t *testing.T, cmd *exec.Cmd, done chan struct{}, stderr *lockedWriter) {
	t.Helper()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
	<-done
	skipWithoutLocal(t, cmd.ProcessState.ExitCode(), stderr.String())
	t.Fatalf("PostgreSQL never came up (exit %d):\n%s", cmd.ProcessState.ExitCode(), stderr.String())
}

// badValueScenario writes a value PostgreSQL's jsonb refuses (a NUL
// character): the resource answers 400 and the run fails mid-scenario,
// after PostgreSQL and the resource are up.
func badValueScenario(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bad-value.yaml")
	writeScenario(t, path, `name: bad-value
window: {from: 0, to: 10}
ttl: 60
initial:
  resource: {epoch: 0, value: null}
events:
  - {t: 1, actor: W, action: write, epoch: 1, value: "fine"}
  - {t: 2, actor: W, action: write, epoch: 2, value: "nul \u0000 here"}
expect:
  - {renewal: "*", fencing: "*", effects: 2, verdict: safe}
`)
	return path
}

// proc is one process of the binary's tree, named by pid and start time so
// that a reused pid is not mistaken for it.
type proc struct {
	pid   int
	start string
	cmd   string
}

// tree records every process descended from the binary while it runs, and
// the containers of its testcontainers session.
type tree struct {
	// session is the testcontainers session of the run's containers.
	session    string
	mu         sync.Mutex
	procs      map[proc]bool
	containers map[string]uint16 // id → published host port
	stopped    chan struct{}
}

// watchTree polls the process tree under root until done closes.
func watchTree(ctx context.Context, root int, done <-chan struct{}) *tree {
	tr := &tree{procs: map[proc]bool{}, containers: map[string]uint16{}, stopped: make(chan struct{})}
	go func() {
		defer close(tr.stopped)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, p := range descendants(root) {
				tr.mu.Lock()
				tr.procs[p] = true
				tr.mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return tr
}

// descendants lists the processes below root, from /proc. A process
// below root was started after it, so its pid is higher, unless the
// kernel's pids have wrapped around since (the last pid it handed out is
// then below root's): only then does it read every process. Each run's
// watcher does this ten times a second, and reading every process's stat
// was most of the cleanup tests' CPU.
func descendants(root int) []proc {
	parent := map[int]int{}
	info := map[int]proc{}
	every := pidsWrappedSince(root)
	for _, pid := range pids() {
		if n, err := strconv.Atoi(pid); err == nil && n <= root && !every {
			continue
		}
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue
		}
		p, ppid, ok := parseStat(b)
		if !ok {
			continue
		}
		parent[p.pid] = ppid
		info[p.pid] = p
	}
	var out []proc
	for pid, p := range info {
		for a, hops := parent[pid], 0; a > 1 && hops < 64; a, hops = parent[a], hops+1 {
			if a == root {
				// The command line only for the few that are ours.
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				p.cmd = strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// pidsWrappedSince says whether the kernel's pids may have wrapped around
// since root started: the last pid it handed out (/proc/loadavg's fifth
// field) is below root's, or cannot be read.
func pidsWrappedSince(root int) bool {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	if len(f) < 5 {
		return true
	}
	last, err := strconv.Atoi(f[4])
	return err != nil || last < root
}

// pids are the names of /proc's process directories. (filepath.Glob of
// "/proc/[0-9]*/stat" would list every process's directory to find its
// stat file: each cleanup run's watcher does this ten times a second, and
// those listings were most of the package's system time.)
func pids() []string {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := names[:0]
	for _, n := range names {
		if n != "" && n[0] >= '0' && n[0] <= '9' {
			out = append(out, n)
		}
	}
	return out
}

// parseStat reads pid, start time and parent pid from /proc/PID/stat.
func parseStat(b []byte) (proc, int, bool) {
	s := string(b)
	lp, rp := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if lp < 0 || rp < lp {
		return proc{}, 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:lp]))
	if err != nil {
		return proc{}, 0, false
	}
	// After ") ": state, ppid, ... starttime is the 20th field.
	f := strings.Fields(s[rp+1:])
	if len(f) < 20 || f[0] == "Z" {
		return proc{}, 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return proc{}, 0, false
	}
	return proc{pid: pid, start: f[19]}, ppid, true
}

// survivors are recorded processes still alive, and the TCP ports they
// listen on.
func (tr *tree) survivors(t *testing.T) []string {
	t.Helper()
	<-tr.stopped
	// A process being torn down may take a moment to go.
	var left []string
	for range 50 {
		left = left[:0]
		tr.mu.Lock()
		for p := range tr.procs {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
			if err != nil {
				continue
			}
			if q, _, ok := parseStat(b); ok && q.start == p.start {
				left = append(left, fmt.Sprintf("process %d (%s)%s", p.pid, p.cmd, listeningPorts(p.pid)))
			}
		}
		tr.mu.Unlock()
		if len(left) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return left
}

// listeningPorts names the TCP ports pid listens on, if any.
func listeningPorts(pid int) string {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	inodes := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var ports []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(file)
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// st 0A is LISTEN.
			if len(f) > 9 && f[3] == "0A" && inodes[f[9]] {
				_, port, _ := strings.Cut(f[1], ":")
				n, _ := strconv.ParseUint(port, 16, 16)
				ports = append(ports, strconv.FormatUint(n, 10))
			}
		}
	}
	if len(ports) == 0 {
		return ""
	}
	return ", listening on TCP " + strings.Join(ports, ", ")
}

// processesUnder finds processes running from, or naming, dir: a cluster
// whose data directory is there, whoever its parent is now.
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var left []string
	for range 50 {
		left = left[:0]
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
			cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
			if strings.HasPrefix(cwd, dir) || bytes.Contains(cmdline, []byte(dir)) {
				left = append(left, fmt.Sprintf("process %s running from %s: %q", filepath.Base(p), dir, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
			}
		}
		if len(left) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return left
}

// killLocalServer stops the binary's own cluster under tmp while the
// scenario runs.
func killLocalServer(t *testing.T, tmp string) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(tmp, "leaserace-pg-*"))
	if len(dirs) != 1 {
		t.Fatalf("want one cluster under %s, found %v", tmp, dirs)
	}
	stopCluster(t, dirs[0])
}

// stopCluster shuts the local cluster in dir down the hard way: SIGQUIT,
// what pg_ctl -m immediate sends, to the postmaster named in its lock file.
func stopCluster(t *testing.T, dir string) {
	t.Helper()
	lock := filepath.Join(dir, "data", "postmaster.pid")
	b, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		t.Fatalf("%s starts with %q", lock, first)
	}
	if err := syscall.Kill(pid, syscall.SIGQUIT); err != nil {
		t.Fatalf("stopping the server %d: %v", pid, err)
	}
}

// sessionOf is the testcontainers session of the containers made by a
// child of pid: testcontainers-go derives it from the parent's pid and
// start time (see its internal bootstrap package).
func sessionOf(t *testing.T, pid int) string {
	t.Helper()
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		t.Fatal(err)
	}
	created, err := p.CreateTime()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("testcontainers-go:%d:%d", pid, created)))
	return hex.EncodeToString(sum[:])
}

// binaryPID is the leaserace process itself: root, or the child the
// wrapping shell started.
func (tr *tree) binaryPID(t *testing.T, root int) int {
	t.Helper()
	if tr.session == "" {
		return root
	}
	for range 100 {
		for _, p := range descendants(root) {
			if strings.HasPrefix(p.cmd, built.path) {
				return p.pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the shell never started leaserace")
	return 0
}

// ourContainers lists the containers of a testcontainers session, with
// their published ports.
func ourContainers(t *testing.T, session string) map[string]uint16 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if pgcontainer.DockerAvailable(ctx) != nil {
		return nil
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: client.Filters{}.Add("label", "org.testcontainers.sessionId="+session),
	})
	if err != nil {
		t.Fatalf("listing containers: %v", err)
	}
	out := map[string]uint16{}
	for _, c := range list.Items {
		var port uint16
		for _, p := range c.Ports {
			if p.PublicPort != 0 {
				port = p.PublicPort
			}
		}
		out[c.ID] = port
	}
	return out
}

// noteContainers records the session's containers and their ports while
// the run is under way.
func (tr *tree) noteContainers(t *testing.T) int {
	t.Helper()
	seen := ourContainers(t, tr.session)
	for id, port := range seen {
		tr.mu.Lock()
		tr.containers[id] = port
		tr.mu.Unlock()
	}
	return len(seen)
}

// containerLeftovers counts the session's containers still there, removing
// them, and the ports the run's containers published that still listen.
func (tr *tree) containerLeftovers(t *testing.T) []string {
	t.Helper()
	var left []string
	tr.mu.Lock()
	for _, port := range tr.containers {
		if port == 0 {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			left = append(left, "TCP port "+addr+" still listening")
		}
	}
	tr.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for id, port := range ourContainers(t, tr.session) {
		left = append(left, fmt.Sprintf("container %.12s (port %d)", id, port))
		if cli, err := testcontainers.NewDockerClientWithOpts(ctx); err == nil {
			_, _ = cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			cli.Close()
		}
	}
	return left
}

// dsnLeftovers counts schemas and sessions left in a scratch database,
// on one session of its own.
func dsnLeftovers(dsn, db string) func(*testing.T) []string {
	return func(t *testing.T) []string {
		t.Helper()
		// Twice the wait below: the queries must outlast it.
		ctx, cancel := context.WithTimeout(context.Background(), 2*pgtest.WaitTimeout())
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var left []string
		rows, _ := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lr\_%' ORDER BY 1`)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if len(names) > 0 {
			left = append(left, fmt.Sprintf("%d lr_ schemas in %s: %s", len(names), db, strings.Join(names, ", ")))
		}
		// A session whose client has gone ends a moment later, when its
		// server process reads the end of the connection: nothing tells
		// us when, so look until the one wait timeout.
		sessions := func() int {
			var n int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, db).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		n := sessions()
		for deadline := time.Now().Add(pgtest.WaitTimeout()); n > 0 && time.Now().Before(deadline); n = sessions() {
			time.Sleep(10 * time.Millisecond)
		}
		if n > 0 {
			left = append(left, fmt.Sprintf("%d sessions still connected to %s after %s", n, db, pgtest.WaitTimeout()))
		}
		return left
	}
}
