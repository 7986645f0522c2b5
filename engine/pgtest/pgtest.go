// Package pgtest gives tests real PostgreSQL servers and makes sure they go
// away afterwards.
//
// A package that uses it calls Main from its TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// A package whose tests also run PostgreSQL in containers calls
// containertest.Main instead, which hands Main's twin MainWith the
// container provider: pgtest itself does not link Docker's client, so the
// many test binaries that never run a container build and start without it.
//
// Servers start on first use and are shared by the package's tests; Main
// stops them when the tests end. Should the test process die first (a
// panic, a -timeout, Ctrl-C), a small watcher process removes them.
//
// Environment:
//
//	LEASERACE_TEST_DSN          use this server instead of starting one
//	LEASERACE_REQUIRE_POSTGRES  "1": a missing server fails the test instead of skipping it
//	LEASERACE_PG_IMAGE          the image for the container provider
package pgtest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgserver"
)

const (
	envTestDSN = "LEASERACE_TEST_DSN"
	envRequire = "LEASERACE_REQUIRE_POSTGRES"

	// startTimeout is generous: a container's first start on a busy CI
	// machine can take a while.
	startTimeout = 4 * time.Minute
	closeTimeout = time.Minute
)

// NamedDSN is a server for a test and the provider that gave it.
type NamedDSN struct {
	Provider string
	DSN      string
}

// current is what Main set up for this test binary. It is the package's one
// mutable global: DSN and Servers get only a testing.TB, so they need a
// place to find the servers Main will stop.
var current *harness

// Main runs the package's tests, then stops every server they started,
// fails the run if any goroutine outlived the tests (goleak), and exits.
// Call it from TestMain. Its tests get no containers: see MainWith.
func Main(m *testing.M) { MainWith(m, nil) }

// Containers starts and removes the tests' PostgreSQL containers.
// containertest gives one to MainWith; with none, the tests of the binary
// run no containers, and Servers, NewContainer and ContainerReady fail.
type Containers interface {
	// Ready is nil when Start could run a container without pulling an
	// image; else it says why not (pgserver.ErrNoDocker, pgserver.ErrNoImage).
	Ready(ctx context.Context) error
	// Start runs a container from a local image. made hears the label of
	// the start before Docker is asked for a container.
	Start(ctx context.Context, made func(startID string)) (*pgserver.Server, error)
	// Remove removes one container by its id, and returns once it is gone.
	Remove(ctx context.Context, id string) error
	// RemoveStarted removes every container of one start (made's label).
	RemoveStarted(ctx context.Context, startID string) error
}

// MainWith is Main for a test binary whose tests also run containers,
// which c starts and removes.
func MainWith(m *testing.M, c Containers) {
	if os.Getenv(envWatcher) != "" {
		os.Exit(watch(os.Stdin, os.Stderr, os.Getenv(envWatcherVerbose) != "", c))
	}
	os.Exit(run(m, c))
}

// errNoContainers is a test that asks for a container in a binary whose
// TestMain gave pgtest none: a mistake in the test, not a missing Docker.
var errNoContainers = errors.New("pgtest: this test binary runs no containers: its TestMain must call containertest.Main instead of pgtest.Main")

func run(m *testing.M, c Containers) (code int) {
	h := newHarness(c)
	// Made before anything else, removed after everything else: the
	// servers' directories and the tests' temporary files live in it.
	h.tmp, h.tmpWhy = useMemoryTmpdir()
	defer func() {
		if h.tmp.dir != "" {
			os.Unsetenv(envTmpdir)
		}
		if err := h.tmp.close(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}()
	if h.tmp.dir != "" {
		// Should the test process die, the watcher removes it.
		h.watcher.addLine(scratchDir, h.tmp.dir)
	}
	current = h
	// Deferred so a panic on the main goroutine still stops the servers;
	// panics inside tests kill the process, and the watcher covers those.
	defer func() {
		current = nil
		if err := h.close(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
		// After the servers stop: a goroutine still running now is one
		// the tests started and never ended. Only a passing run is
		// judged; a failed test may leave anything behind.
		if code == 0 {
			if err := findLeaks(); err != nil {
				fmt.Fprintf(os.Stderr, "pgtest: goroutines outlived the tests (goleak):\n%v\n", err)
				code = 1
			}
		}
	}()
	return m.Run()
}

// DSN returns a connection string for a real server: LEASERACE_TEST_DSN if
// set, else the package's local cluster. Without one the test is skipped,
// or failed under LEASERACE_REQUIRE_POSTGRES=1.
func DSN(t testing.TB) string {
	t.Helper()
	if dsn := os.Getenv(envTestDSN); dsn != "" {
		return dsn
	}
	srv, err := mustHarness(t).local.get()
	if err != nil {
		unavailable(t, fmt.Sprintf("no PostgreSQL server for this test (set %s, or install PostgreSQL): %v", envTestDSN, err))
	}
	return srv.DSN
}

// Servers returns a server from every provider this machine offers: "local"
// (the package's local cluster), "container" (when a Docker engine
// answers and holds the image; the binary's TestMain must call
// containertest.Main) and "dsn" (LEASERACE_TEST_DSN, or else the local cluster reached
// through the dsn provider's PG* variables path). A missing provider is
// logged, or fails the test under LEASERACE_REQUIRE_POSTGRES=1; with none
// at all the test is skipped.
func Servers(t testing.TB) []NamedDSN {
	t.Helper()
	return serversOn(t, mustHarness(t))
}

func serversOn(t testing.TB, h *harness) []NamedDSN {
	t.Helper()
	if h.containers == nil {
		t.Fatal(errNoContainers)
	}
	var out []NamedDSN
	var missing []string
	for _, p := range []struct {
		name string
		l    *lazyServer
	}{{"local", &h.local}, {"container", &h.container}, {"dsn", &h.dsn}} {
		srv, err := p.l.get()
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s: %v", p.name, err))
			continue
		}
		out = append(out, NamedDSN{Provider: p.name, DSN: srv.DSN})
	}
	if len(missing) > 0 {
		msg := "providers not available here:\n  " + strings.Join(missing, "\n  ")
		if required() {
			t.Errorf("%s\n(%s=1 requires all of them)", msg, envRequire)
		} else {
			t.Log(msg)
		}
	}
	if len(out) == 0 {
		unavailable(t, "no PostgreSQL provider works on this machine")
	}
	return out
}

func required() bool { return os.Getenv(envRequire) == "1" }

// unavailable skips the test, or fails it when servers are required.
func unavailable(t testing.TB, why string) {
	t.Helper()
	if required() {
		t.Fatalf("%s (%s=1)", why, envRequire)
	}
	t.Skip(why)
}

func mustHarness(t testing.TB) *harness {
	t.Helper()
	h := current
	if h == nil {
		t.Fatal("pgtest: this package needs func TestMain(m *testing.M) { pgtest.Main(m) }")
	}
	return h
}

// harness holds the servers of one test binary, and what its tests share
// on them.
type harness struct {
	local, container, dsn lazyServer
	containers            Containers // nil: no container support
	watcher               watcherLink
	// tmp is the test process's temporary directory, if Main made one;
	// tmpWhy says why it did or did not.
	tmp    scratchTmp
	tmpWhy string

	mu     sync.Mutex
	shared map[string]*sharedValue
	order  []*sharedValue // closed last first
	sealed bool
}

// sharedValue is one thing the package's tests share (see Shared).
type sharedValue struct {
	once  sync.Once
	val   any
	close func(context.Context) error
	err   error
}

// Shared returns what open made for key, made the first time a test of the
// package asks for it and shared by every test after: a pool of
// connections, say, where a pool per test would only cost the server more
// sessions. Main closes each after the tests, before it stops the servers.
// A failed open fails every test that asks.
func Shared[T any](t testing.TB, key string, open func(context.Context) (T, func(context.Context) error, error)) T {
	t.Helper()
	return sharedOn(t, mustHarness(t), key, open)
}

func sharedOn[T any](t testing.TB, h *harness, key string, open func(context.Context) (T, func(context.Context) error, error)) T {
	t.Helper()
	h.mu.Lock()
	if h.sealed {
		h.mu.Unlock()
		t.Fatal(errClosed)
	}
	if h.shared == nil {
		h.shared = map[string]*sharedValue{}
	}
	v, ok := h.shared[key]
	if !ok {
		v = &sharedValue{}
		h.shared[key] = v
		h.order = append(h.order, v)
	}
	h.mu.Unlock()
	v.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		var val T
		val, v.close, v.err = open(ctx)
		v.val = val
	})
	if v.err != nil {
		t.Fatalf("pgtest: cannot make the shared %s: %v", key, v.err)
	}
	return v.val.(T)
}

// closeShared closes what the tests shared, last made first.
func (h *harness) closeShared(ctx context.Context) error {
	h.mu.Lock()
	h.sealed = true
	order := h.order
	h.order = nil
	h.mu.Unlock()
	var errs []error
	for i := len(order) - 1; i >= 0; i-- {
		v := order[i]
		v.once.Do(func() { v.err = errClosed })
		if v.err == nil && v.close != nil {
			if err := v.close(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func newHarness(c Containers) *harness {
	h := &harness{containers: c}
	h.local.start = func(ctx context.Context) (*pgserver.Server, error) {
		// The watcher hears of the directory before initdb: a test process
		// killed while the cluster is being made (a fuzz worker stopped by
		// its coordinator, a -timeout) would otherwise leave it behind.
		made := func(dir string) { h.watcher.addLine("local", dir) }
		return h.started(pgserver.LocalProvider{Made: made}.Start(ctx, nil))
	}
	h.container.start = func(ctx context.Context) (*pgserver.Server, error) {
		if c == nil {
			return nil, errNoContainers
		}
		// Start asks Docker first, so a machine without it answers at once.
		// As with the cluster, the watcher hears of the start first.
		return h.started(c.Start(ctx, h.madeContainer))
	}
	h.dsn.start = func(ctx context.Context) (*pgserver.Server, error) {
		if dsn := os.Getenv(envTestDSN); dsn != "" {
			return pgserver.DSNProvider{DSN: dsn}.Start(ctx, nil)
		}
		local, err := h.local.get()
		if err != nil {
			return nil, err
		}
		return dsnFromEnvironment(ctx, local.DSN)
	}
	return h
}

// madeContainer tells the watcher of a container start before Docker is
// asked for one.
func (h *harness) madeContainer(startID string) { h.watcher.addLine(startedContainers, startID) }

// started hands a new server to the watcher before anyone uses it.
func (h *harness) started(srv *pgserver.Server, err error) (*pgserver.Server, error) {
	if err == nil {
		h.watcher.add(srv)
	}
	return srv, err
}

// close closes what the tests shared, then stops the servers: the dsn
// one first, as it may ride on the local one. It waits for a server still
// starting, and no new one starts after.
func (h *harness) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	var errs []error
	if err := h.closeShared(ctx); err != nil {
		errs = append(errs, err)
	}
	for _, l := range []*lazyServer{&h.dsn, &h.container, &h.local} {
		if srv := l.seal(); srv != nil {
			if err := srv.Close(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		h.watcher.release()
	}
	// Otherwise the watcher stays and tries once more when we exit.
	return errors.Join(errs...)
}

// lazyServer starts one server on first use.
type lazyServer struct {
	once  sync.Once
	start func(context.Context) (*pgserver.Server, error)
	srv   *pgserver.Server
	err   error
}

var errClosed = errors.New("pgtest: the tests are over; no server starts now")

func (l *lazyServer) get() (*pgserver.Server, error) {
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		l.srv, l.err = l.start(ctx)
	})
	return l.srv, l.err
}

// seal waits for a start in progress, stops any later one, and returns the
// server if one started.
func (l *lazyServer) seal() *pgserver.Server {
	l.once.Do(func() { l.err = errClosed })
	return l.srv
}

// dsnFromEnvironment reaches the local cluster the way a person with PG*
// variables would, so the dsn provider's environment path runs for real.
// The variables name only what the cluster's own DSN states outright, so a
// test connecting at the same moment ends up at the same place either way.
func dsnFromEnvironment(ctx context.Context, localDSN string) (*pgserver.Server, error) {
	u, err := url.Parse(localDSN)
	if err != nil {
		return nil, fmt.Errorf("reading the local cluster's DSN: %w", err)
	}
	q := u.Query()
	vars := map[string]string{
		"PGHOST":       q.Get("host"),
		"PGPORT":       q.Get("port"),
		"PGUSER":       u.User.Username(),
		"PGDATABASE":   strings.TrimPrefix(u.Path, "/"),
		"PGSSLMODE":    q.Get("sslmode"),
		"DATABASE_URL": "", // it would win over the PG* variables
	}
	restore := setenv(vars)
	defer restore()
	return pgserver.DSNProvider{}.Start(ctx, nil)
}

// setenv sets (or, for "", unsets) variables and returns how to undo it.
func setenv(vars map[string]string) (restore func()) {
	old := make(map[string]*string, len(vars))
	for k, v := range vars {
		if prev, ok := os.LookupEnv(k); ok {
			old[k] = &prev
		} else {
			old[k] = nil
		}
		if v == "" {
			os.Unsetenv(k)
		} else {
			os.Setenv(k, v)
		}
	}
	return func() {
		for k, v := range old {
			if v == nil {
				os.Unsetenv(k)
			} else {
				os.Setenv(k, *v)
			}
		}
	}
}

// NewLocal starts a local cluster of the test's own, which the test may
// stop, kill or restart; it is removed when the test ends, and by the
// watcher if the test binary dies first.
func NewLocal(t testing.TB) *pgserver.Server {
	t.Helper()
	h := mustHarness(t)
	made := func(dir string) { h.watcher.addLine("local", dir) }
	srv, err := h.started(pgserver.LocalProvider{Made: made}.Start(startCtx(t), nil))
	if errors.Is(err, pgserver.ErrNoServerBinaries) {
		unavailable(t, fmt.Sprintf("no local PostgreSQL: %v", err))
	}
	if err != nil {
		t.Fatalf("local provider: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	return srv
}

// NewContainer starts a container of the test's own from the local image,
// like NewLocal.
func NewContainer(t testing.TB) *pgserver.Server {
	t.Helper()
	h := mustHarness(t)
	containerReadyOn(t, h)
	srv, err := h.started(h.containers.Start(startCtx(t), h.madeContainer))
	if err != nil {
		t.Fatalf("container provider: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	return srv
}

// ContainerReady skips the test, or fails it under
// LEASERACE_REQUIRE_POSTGRES=1, unless a Docker engine answers and already
// holds the container provider's image (LEASERACE_PG_IMAGE, else
// pgcontainer.DefaultPGImage): tests never pull one. Tests that run the
// binary with --pg container ask it first, as NewContainer does. The
// binary's TestMain must call containertest.Main.
func ContainerReady(t testing.TB) {
	t.Helper()
	containerReadyOn(t, mustHarness(t))
}

func containerReadyOn(t testing.TB, h *harness) {
	t.Helper()
	if h.containers == nil {
		t.Fatal(errNoContainers)
	}
	err := h.containers.Ready(startCtx(t))
	switch {
	case errors.Is(err, pgserver.ErrNoImage):
		unavailable(t, fmt.Sprintf("no container for this test (tests never pull an image): %v", err))
	case err != nil:
		unavailable(t, err.Error()) // it says no Docker engine answers, and why
	}
}

func startCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// NewPasswordServer starts a local cluster of the test's own that insists
// on passwords, and returns its socket directory, a role and that role's
// password.
func NewPasswordServer(t testing.TB) (dir, role, password string) {
	t.Helper()
	srv := NewLocal(t)
	role, password = "lr_secret", "right-"+rand.Text()
	ctx := startCtx(t)
	conn, err := pgx.Connect(ctx, srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", role, password)); err != nil {
		t.Fatal(err)
	}
	hba := filepath.Join(srv.ID, "data", "pg_hba.conf")
	if err := os.WriteFile(hba, []byte("local all all scram-sha-256\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	return srv.ID, role, password
}
