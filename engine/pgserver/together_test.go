//go:build unix

package pgserver_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/pgserver/internal/servertest"
	"github.com/leaserace/leaserace/engine/pgtest/zonkytest"
)

const (
	waitingForDownload = "waiting for another leaserace that is downloading PostgreSQL "
	waitingForCluster  = "waiting for another leaserace that is making a cluster with the same binaries"
)

// startsTogether runs n starts at once while the test holds the lock they
// need, lets them go once each has said it waits (saying starts with
// waitLine), and returns their servers and progress. Every server is
// closed when the test ends.
func startsTogether(t *testing.T, n int, hold func(context.Context) (func(), error), waitLine string,
	start func(context.Context, func(string)) (*pgserver.Server, error)) ([]*pgserver.Server, []*servertest.Progress) {
	t.Helper()
	ctx := servertest.Ctx(t)
	release, err := hold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	servers, errs := make([]*pgserver.Server, n), make([]error, n)
	logs := make([]*servertest.Progress, n)
	waited := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		logs[i] = &servertest.Progress{}
		var once sync.Once
		progress := func(line string) {
			logs[i].Add(line)
			if strings.HasPrefix(line, waitLine) {
				once.Do(func() { waited <- i })
			}
		}
		wg.Go(func() { servers[i], errs[i] = start(ctx, progress) })
	}
	for range n {
		select {
		case <-waited:
		case <-ctx.Done():
		}
	}
	release()
	wg.Wait()
	for _, srv := range servers {
		if srv != nil {
			t.Cleanup(func() { srv.Close(context.Background()) })
		}
	}
	for i, err := range errs {
		if errors.Is(err, pgserver.ErrNoServerBinaries) {
			servertest.Unavailable(t, "no local PostgreSQL", err)
		}
		if err != nil {
			t.Fatalf("start %d: %v\n%s", i, err, strings.Join(logs[i].All(), "\n"))
		}
	}
	return servers, logs
}

// closeAll closes each server and checks that its cluster and processes
// are gone.
func closeAll(t *testing.T, servers []*pgserver.Server) {
	t.Helper()
	for _, s := range servers {
		if err := s.Close(servertest.Ctx(t)); err != nil {
			t.Errorf("close: %v", err)
		}
		if _, err := os.Stat(s.ID); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after Close (%v)", s.ID, err)
		}
		if left := processesMentioning(t, s.ID); len(left) > 0 {
			t.Errorf("processes left on %s: %v", s.ID, left)
		}
	}
}

// Starts on one empty cache at once download the binaries once: the
// first to get the lock downloads, the others wait for it and take the
// cache.
func TestEmbeddedStartsTogetherDownloadOnce(t *testing.T) {
	t.Parallel()
	jar := zonkytest.Get(t)
	cache := zonkytest.OpenDir(t, "lremb")
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: jar.Bytes, Sum: jar.Sum})
	p := embedded(t, mirror.URL, cache)
	hold := func(ctx context.Context) (func(), error) { return pgserver.HoldDownloadLock(ctx, p) }
	servers, logs := startsTogether(t, 3, hold, waitingForDownload, p.Start)

	if n := mirror.JarRequests(); n != 1 {
		t.Errorf("the jar was downloaded %d times, want once", n)
	}
	downloaded := 0
	for i, l := range logs {
		lines := strings.Join(l.Own(), "\n")
		if n := strings.Count(lines, waitingForDownload); n != 1 {
			t.Errorf("start %d said it waited %d times, want once:\n%s", i, n, lines)
		}
		switch {
		case strings.Contains(lines, "downloading PostgreSQL "+zonkytest.Version+" once"):
			downloaded++
		case !strings.Contains(lines, "from the cache"):
			t.Errorf("start %d neither downloaded nor took the cache:\n%s", i, lines)
		}
		servertest.SelectOne(t, servers[i].DSN)
	}
	if downloaded != 1 {
		t.Errorf("%d starts downloaded, want 1", downloaded)
	}
	closeAll(t, servers)
	// The lock file goes with the last start that held it.
	if got := cacheEntries(t, cache); len(got) != 1 || got[0] != zonkytest.Version {
		t.Errorf("the cache holds %v, want just %s", got, zonkytest.Version)
	}
}

// A start waiting for another's download ends as soon as its context
// does (Ctrl-C), having asked the mirror nothing and left nothing.
func TestEmbeddedWaitForTheDownloadStopsOnCancel(t *testing.T) {
	t.Parallel()
	cache, clusters := zonkytest.OpenDir(t, "lremb"), zonkytest.OpenDir(t, "lremb")
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Hang: true})
	p := embedded(t, mirror.URL, cache)
	p.Dir = clusters
	release, err := pgserver.HoldDownloadLock(servertest.Ctx(t), p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(servertest.Ctx(t))
	var cancelled time.Time
	srv, err := p.Start(ctx, func(line string) {
		if strings.HasPrefix(line, waitingForDownload) && cancelled.IsZero() {
			cancelled = time.Now()
			cancel()
		}
	})
	if err == nil {
		srv.Close(context.Background())
		t.Fatal("the start succeeded")
	}
	if !errors.Is(err, context.Canceled) || cancelled.IsZero() {
		t.Errorf("got %v (waited: %v), want context.Canceled while waiting", err, !cancelled.IsZero())
	}
	if took := time.Since(cancelled); took > 5*time.Second {
		t.Errorf("the start took %s to end after its cancel", took)
	}
	if n := mirror.Requests(); n != 0 {
		t.Errorf("a waiting start asked the mirror %d times", n)
	}
	if left := cacheEntries(t, clusters); len(left) > 0 {
		t.Errorf("the cancelled start left %v", left)
	}
	release()
	if left := cacheEntries(t, cache); len(left) > 0 {
		t.Errorf("the cache holds %v", left)
	}
}

// envHoldLock names, for the helper process, the cache whose download
// lock it holds until it is killed.
const envHoldLock = "LEASERACE_TEST_HOLD_DOWNLOAD_LOCK"

// TestHoldTheDownloadLockHelper is not a test: run by
// TestEmbeddedStartOutlivesAKilledDownloader as a process of its own, it
// takes the download lock, says so, and holds it until its stdin closes.
func TestHoldTheDownloadLockHelper(t *testing.T) {
	cache := os.Getenv(envHoldLock)
	if cache == "" {
		return
	}
	release, err := pgserver.HoldDownloadLock(context.Background(), embedded(t, "", cache))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	fmt.Println("holding the lock")
	io.Copy(io.Discard, os.Stdin)
}

// A leaserace killed while it downloads (SIGKILL: no clean-up) loses its
// lock with its life: the start waiting for it goes on and downloads.
func TestEmbeddedStartOutlivesAKilledDownloader(t *testing.T) {
	t.Parallel()
	jar := zonkytest.Get(t)
	cache := zonkytest.OpenDir(t, "lremb")
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: jar.Bytes, Sum: jar.Sum})

	holder := exec.Command(os.Args[0], "-test.run=^TestHoldTheDownloadLockHelper$", "-test.count=1")
	holder.Env = append(os.Environ(), envHoldLock+"="+cache)
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			holder.Process.Kill()
			holder.Wait()
		}
	}()
	said, holding := bufio.NewScanner(stdout), false
	for !holding && said.Scan() {
		holding = said.Text() == "holding the lock"
	}
	if !holding {
		t.Fatalf("the helper never took the lock (%v)", said.Err())
	}
	go io.Copy(io.Discard, stdout) // whatever else it says as it dies

	waiting := make(chan struct{})
	var once sync.Once
	var progress servertest.Progress
	type result struct {
		srv *pgserver.Server
		err error
	}
	done := make(chan result, 1)
	go func() {
		srv, err := embedded(t, mirror.URL, cache).Start(servertest.Ctx(t), func(line string) {
			progress.Add(line)
			if strings.HasPrefix(line, waitingForDownload) {
				once.Do(func() { close(waiting) })
			}
		})
		done <- result{srv, err}
	}()
	select {
	case <-waiting:
	case r := <-done:
		if r.srv != nil {
			r.srv.Close(context.Background())
		}
		t.Fatalf("the start did not wait for the helper's lock: %v\n%s", r.err, strings.Join(progress.All(), "\n"))
	}
	holder.Process.Kill()
	holder.Wait()
	killed = true
	r := <-done
	if r.err != nil {
		t.Fatalf("the start after the holder died: %v", r.err)
	}
	t.Cleanup(func() { r.srv.Close(context.Background()) })
	servertest.SelectOne(t, r.srv.DSN)
	if n := mirror.JarRequests(); n != 1 {
		t.Errorf("the jar was downloaded %d times, want once", n)
	}
	if lines := strings.Join(progress.Own(), "\n"); !strings.Contains(lines, "downloading PostgreSQL") {
		t.Errorf("the start did not download:\n%s", lines)
	}
	closeAll(t, []*pgserver.Server{r.srv})
	// The killed holder's lock file went with the next start's release.
	if got := cacheEntries(t, cache); len(got) != 1 || got[0] != zonkytest.Version {
		t.Errorf("the cache holds %v, want just %s", got, zonkytest.Version)
	}
}

// Local starts that find the cluster cache empty at once run initdb once:
// the others wait and copy what it made.
func TestLocalProviderStartsTogetherRunInitdbOnce(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	hold := func(ctx context.Context) (func(), error) { return pgserver.HoldClusterLock(ctx, cache) }
	p := pgserver.LocalProvider{ClusterCache: cache}
	// Once alone, to skip where there is no local PostgreSQL.
	release, err := hold(servertest.Ctx(t))
	if errors.Is(err, pgserver.ErrNoServerBinaries) {
		servertest.Unavailable(t, "no local PostgreSQL", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	release()
	servers, logs := startsTogether(t, 3, hold, waitingForCluster, p.Start)
	ran := 0
	for i, l := range logs {
		got := l.Own()
		if len(got) != 3 || !strings.HasPrefix(got[0], waitingForCluster) || got[2] != "starting postgres" {
			t.Errorf("start %d: progress %q, want waiting, initdb or its copy, starting postgres", i, got)
			continue
		}
		switch got[1] {
		case "initdb":
			ran++
		case "initdb: copying the cluster it made before":
		default:
			t.Errorf("start %d: progress %q", i, got)
		}
		servertest.SelectOne(t, servers[i].DSN)
	}
	if ran != 1 {
		t.Errorf("initdb ran %d times, want once", ran)
	}
	closeAll(t, servers)
	entries, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "cluster-") {
		t.Errorf("the cache holds %v, want one cluster-* entry", entries)
	}
}

// A local start waiting for another's initdb ends with its context and
// leaves no cluster directory.
func TestLocalProviderWaitForInitdbStopsOnCancel(t *testing.T) {
	t.Parallel()
	cache, clusters := t.TempDir(), zonkytest.OpenDir(t, "lrloc")
	release, err := pgserver.HoldClusterLock(servertest.Ctx(t), cache)
	if errors.Is(err, pgserver.ErrNoServerBinaries) {
		servertest.Unavailable(t, "no local PostgreSQL", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithCancel(servertest.Ctx(t))
	var cancelled time.Time
	srv, err := pgserver.LocalProvider{ClusterCache: cache, Dir: clusters}.Start(ctx, func(line string) {
		if strings.HasPrefix(line, waitingForCluster) && cancelled.IsZero() {
			cancelled = time.Now()
			cancel()
		}
	})
	if err == nil {
		srv.Close(context.Background())
		t.Fatal("the start succeeded")
	}
	if !errors.Is(err, context.Canceled) || cancelled.IsZero() {
		t.Errorf("got %v (waited: %v), want context.Canceled while waiting", err, !cancelled.IsZero())
	}
	if took := time.Since(cancelled); took > 5*time.Second {
		t.Errorf("the start took %s to end after its cancel", took)
	}
	if left := cacheEntries(t, clusters); len(left) > 0 {
		t.Errorf("the cancelled start left %v", left)
	}
}
