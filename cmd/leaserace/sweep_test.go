package main

// A leaserace killed outright (SIGKILL) cannot clean up: these tests kill
// the real binary while its local cluster is in initdb and while Docker
// starts its container, and check that the next start removes what it left
// and says so.

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/leaserace/leaserace/engine/pgserver/pgcontainer"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// requireOrSkip skips, or fails when LEASERACE_REQUIRE_POSTGRES=1 says this
// machine must offer every provider.
func requireOrSkip(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("LEASERACE_REQUIRE_POSTGRES") == "1" {
		t.Fatalf("%s (LEASERACE_REQUIRE_POSTGRES=1)", why)
	}
	t.Skip(why)
}

// serverBinDir finds the directory of the PostgreSQL server binaries, as
// leaserace itself would: on PATH, else Debian's versioned directories.
func serverBinDir(t *testing.T) string {
	t.Helper()
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.Reverse(debian)
	for _, d := range append(dirs, debian...) {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d
		}
	}
	requireOrSkip(t, "no PostgreSQL server binaries here")
	return ""
}

// stuckInitdb makes a directory for LEASERACE_PG_BINDIR whose initdb does
// the real work, says so with a file in the cluster's directory, and then
// waits, so that a test kills leaserace during initdb at a known point: the
// data directory made, the server never started, no lock file.
func stuckInitdb(t *testing.T, real string) string {
	t.Helper()
	dir := localTempDir(t) // initdb may run as the postgres user
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(gate, 0o666); err != nil { // past the umask
		t.Fatal(err)
	}
	// A FIFO opened for reading and writing never ends: read waits for its
	// timeout, inside the shell, so no child outlives the kill.
	script := fmt.Sprintf("#!/bin/bash\n%q \"$@\" || exit\n: > initdb-finished\nread -r -t 120 <> %q\nexit 1\n",
		filepath.Join(real, "initdb"), gate)
	if err := os.WriteFile(filepath.Join(dir, "initdb"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "postgres"), filepath.Join(dir, "postgres")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSIGKILLDuringInitdbIsSweptByTheNextStart(t *testing.T) {
	t.Parallel()
	real := serverBinDir(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for the stuck initdb")
	}
	tmp := localTempDir(t)
	// The killed run dies holding the cache's lock for binaries that go
	// with the test: that lock file is left in a cache of the test's own,
	// not in the user's.
	cache := "XDG_CACHE_HOME=" + t.TempDir()
	s := startLeaserace(t, []string{"TMPDIR=" + tmp, cache, "LEASERACE_PG_BINDIR=" + stuckInitdb(t, real)}, "run", "--pg", "local")
	var dir string
	for end := time.Now().Add(2 * time.Minute); dir == ""; time.Sleep(10 * time.Millisecond) {
		if found, _ := filepath.Glob(filepath.Join(tmp, "leaserace-pg-*", "initdb-finished")); len(found) > 0 {
			dir = filepath.Dir(found[0])
		}
		select {
		case <-s.done:
			code := s.cmd.ProcessState.ExitCode()
			t.Fatalf("leaserace ended (exit %d) before initdb was stuck:\n%s", code, s.stderr.String())
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("initdb never got stuck:\n%s", s.stderr.String())
		}
	}
	pid := s.cmd.Process.Pid
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.wait(t, time.Minute)
	// What the kill leaves: the directory with a data directory but no lock
	// file, which the lock-file sweep alone never removed.
	if _, err := os.Stat(filepath.Join(dir, "data", "PG_VERSION")); err != nil {
		t.Fatalf("the killed run left no half-made cluster: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "postmaster.pid")); err == nil {
		t.Fatal("the killed cluster has a lock file: the server ran")
	}
	waitNoProcessIn(t, dir)

	res := leaseraceEnv(t, []string{"TMPDIR=" + tmp, "LEASERACE_PG_BINDIR=" + real}, "run", "--pg", "local")
	if res.code != 0 {
		t.Fatalf("the next start: %v", res)
	}
	want := fmt.Sprintf("removed %s, a cluster left by leaserace process %d, which is gone", dir, pid)
	if !strings.Contains(res.stderr, want) {
		t.Errorf("the next start does not say %q:\n%s", want, res.stderr)
	}
	t.Logf("the next start said:\n%s", res.stderr)
	assertNoCluster(t, tmp)
}

// waitNoProcessIn waits for the killed run's children to be gone from dir.
func waitNoProcessIn(t *testing.T, dir string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var left []string
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
			cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
			if strings.HasPrefix(cwd, dir) || bytes.Contains(cmdline, []byte(dir)) {
				left = append(left, string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("processes of the killed run still run in %s: %q", dir, left)
		}
	}
}

// The container test runs leaserace under a host name of its own (a UTS
// namespace): a start only judges containers its own host labelled, so
// another package's tests starting containers at the same time cannot
// remove this one first. That also shows a start on another host leaving
// the container alone.
func TestSIGKILLDuringContainerStartIsSweptByTheNextStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	pgtest.ContainerReady(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root for a host name of its own (unshare --uts)")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux) for a host name of its own")
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the clean-up below has used it (clean-ups run last
	// first): closed before it, its connections outlived the test.
	t.Cleanup(func() { cli.Close() })
	image := os.Getenv("LEASERACE_PG_IMAGE")
	if image == "" {
		image = pgcontainer.DefaultPGImage
	}
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		// Tests never pull.
		requireOrSkip(t, fmt.Sprintf("image %s is not on the Docker engine: %v", image, err))
	}
	host := "lrtest-" + strings.ToLower(rand.Text()[:10])
	labelled := func(ctx context.Context, pid int) []string {
		f := client.Filters{}.Add("label", "org.leaserace.owner.host="+host)
		if pid > 0 {
			f = f.Add("label", fmt.Sprintf("org.leaserace.owner.pid=%d", pid))
		}
		list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range list.Items {
			ids = append(ids, c.ID)
		}
		return ids
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, id := range labelled(ctx, 0) {
			_, _ = cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
	})
	// unshare execs the shell, which execs leaserace: one pid throughout.
	onHost := func(args ...string) []string {
		return append([]string{"--uts", "sh", "-c", `printf %s "$1" >/proc/sys/kernel/hostname && shift && exec "$@"`, "sh", host, built.path}, args...)
	}

	s := startCommand(t, nil, "unshare", onHost("run", "--pg", "container")...)
	pid := s.cmd.Process.Pid
	var ids []string
	for end := time.Now().Add(3 * time.Minute); len(ids) == 0; time.Sleep(20 * time.Millisecond) {
		ids = labelled(ctx, pid)
		select {
		case <-s.done:
			t.Fatalf("leaserace ended (exit %d) before Docker listed its container:\n%s", s.cmd.ProcessState.ExitCode(), s.stderr.String())
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("Docker never listed a container of leaserace %d:\n%s", pid, s.stderr.String())
		}
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.wait(t, time.Minute)
	if !strings.Contains(s.stderr.String(), "starting container") || strings.Contains(s.stderr.String(), "PostgreSQL via") {
		t.Fatalf("not killed during the container start:\n%s", s.stderr.String())
	}
	// Docker may finish what the killed client asked for a moment later.
	time.Sleep(3 * time.Second)
	ids = labelled(ctx, pid)
	if len(ids) == 0 {
		t.Fatal("the killed start left no container: nothing to test")
	}

	// A start on this machine's own host name cannot judge a process of
	// another host: it leaves the container alone.
	other := leaserace(t, "run", "--pg", "container")
	if other.code != 0 {
		t.Fatalf("a start on another host: %v", other)
	}
	for _, id := range ids {
		if strings.Contains(other.stderr, id[:12]) {
			t.Errorf("a start on another host touched container %s:\n%s", id[:12], other.stderr)
		}
	}
	if left := labelled(ctx, pid); !slices.Equal(left, ids) {
		t.Fatalf("after a start on another host the killed run's containers are %q, were %q", left, ids)
	}

	next := startCommand(t, nil, "unshare", onHost("run", "--pg", "container")...)
	if code := next.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("the next start: exit %d\n%s", code, next.stderr.String())
	}
	for _, id := range ids {
		want := fmt.Sprintf("removed container %s, left by leaserace process %d, which is gone", id[:12], pid)
		if !strings.Contains(next.stderr.String(), want) {
			t.Errorf("the next start does not say %q:\n%s", want, next.stderr.String())
		}
		if _, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
			t.Errorf("container %s is still there (inspect: %v)", id[:12], err)
		}
	}
	t.Logf("the next start said:\n%s", next.stderr.String())
	if left := labelled(ctx, 0); len(left) > 0 {
		t.Errorf("containers of host %s left: %q", host, left)
	}
}

// startCommand runs a command in the background like startLeaserace, for
// when leaserace runs under another program.
func startCommand(t *testing.T, env []string, name string, args ...string) *started {
	t.Helper()
	cmd := exec.Command(name, args...)
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
