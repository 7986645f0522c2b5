package pgserver_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgdsn"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"golang.org/x/sync/errgroup"
)

func providerCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// unavailable skips, or fails when LEASERACE_REQUIRE_POSTGRES=1 says this
// machine must offer every provider.
func unavailable(t testing.TB, why string, err error) {
	t.Helper()
	if os.Getenv("LEASERACE_REQUIRE_POSTGRES") == "1" {
		t.Fatalf("%s (LEASERACE_REQUIRE_POSTGRES=1): %v", why, err)
	}
	t.Skipf("%s: %v", why, err)
}

// progressLog collects progress lines from any goroutine.
type progressLog struct {
	mu    sync.Mutex
	lines []string
}

func (p *progressLog) add(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, line)
}

func (p *progressLog) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

// own is the progress of the start itself, without the lines about what a
// killed leaserace elsewhere on this machine left and the start removed.
func (p *progressLog) own() []string {
	return slices.DeleteFunc(p.all(), func(l string) bool {
		return strings.HasPrefix(l, "removed ") || strings.HasPrefix(l, "could not remove ")
	})
}

func startLocal(t testing.TB, progress func(string)) *pgserver.Server {
	t.Helper()
	srv, err := pgserver.LocalProvider{}.Start(providerCtx(t), progress)
	if errors.Is(err, pgserver.ErrNoServerBinaries) {
		unavailable(t, "no local PostgreSQL", err)
	}
	if err != nil {
		t.Fatalf("local provider: %v", err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	return srv
}

func startContainer(t testing.TB, progress func(string)) *pgserver.Server {
	t.Helper()
	ctx := providerCtx(t)
	pgtest.ContainerReady(t)
	srv, err := pgserver.ContainerProvider{LocalImageOnly: true}.Start(ctx, progress)
	if err != nil {
		t.Fatalf("container provider: %v", err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	return srv
}

func selectOne(t testing.TB, dsn string) {
	t.Helper()
	ctx := providerCtx(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to %s: %v", pgdsn.Redact(dsn), err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 gave %d, %v", one, err)
	}
}

// processesMentioning lists processes whose command line holds s, or whose
// working directory is under s: PostgreSQL's children name only their role
// ("postgres: checkpointer") but run in the data directory.
func processesMentioning(t testing.TB, s string) []string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, p := range procs {
		b, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil {
			continue // it exited meanwhile
		}
		cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
		if cmd := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cmd, s) || strings.HasPrefix(cwd, s) {
			found = append(found, filepath.Base(p)+": "+cmd)
		}
	}
	return found
}

func TestLocalProviderStartsAndCleansUp(t *testing.T) {
	t.Parallel() // a cluster, and any directory it sweeps, of its own
	var progress progressLog
	// A cache of its own, empty: initdb runs.
	srv, err := pgserver.LocalProvider{ClusterCache: t.TempDir()}.Start(providerCtx(t), progress.add)
	if errors.Is(err, pgserver.ErrNoServerBinaries) {
		unavailable(t, "no local PostgreSQL", err)
	}
	if err != nil {
		t.Fatalf("local provider: %v", err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })

	if got := progress.own(); !slices.Equal(got, []string{"initdb", "starting postgres"}) {
		t.Errorf("progress %q", got)
	}
	if srv.Provider != "local" || srv.Version == "" || srv.Took <= 0 {
		t.Errorf("server %+v", srv)
	}
	selectOne(t, srv.DSN)

	u, err := url.Parse(srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	dir := u.Query().Get("host")
	if dir == "" || dir != srv.ID {
		t.Fatalf("socket directory %q, ID %q", dir, srv.ID)
	}
	if procs := processesMentioning(t, dir); len(procs) == 0 {
		t.Fatalf("no process runs on %s", dir)
	}
	// Its dynamic shared memory is files in its directory, which go with
	// it even when the server is killed outright, not in /dev/shm.
	if got := showSetting(t, srv.DSN, "dynamic_shared_memory_type"); got != "mmap" {
		t.Errorf("dynamic_shared_memory_type = %s, want mmap", got)
	}
	if segs, _ := filepath.Glob(filepath.Join(dir, "data", "pg_dynshmem", "mmap.*")); len(segs) == 0 {
		t.Errorf("no dynamic shared memory segment in %s", filepath.Join(dir, "data", "pg_dynshmem"))
	}

	// Close from two goroutines at once, as a signal handler and the normal
	// exit path might.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { errs[i] = srv.Close(providerCtx(t)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there after Close: %v", dir, err)
	}
	if procs := processesMentioning(t, dir); len(procs) > 0 {
		t.Errorf("processes still run on %s after Close:\n%s", dir, strings.Join(procs, "\n"))
	}
	if err := srv.Close(providerCtx(t)); err != nil {
		t.Errorf("second close: %v", err)
	}
}

func showMaxConnections(t testing.TB, dsn string) string {
	t.Helper()
	return showSetting(t, dsn, "max_connections")
}

// showSetting is the server's value of a setting (name is a constant of
// the test's, never a file's).
func showSetting(t testing.TB, dsn, name string) string {
	t.Helper()
	ctx := providerCtx(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to %s: %v", pgdsn.Redact(dsn), err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SHOW "+name).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func startLocalWith(t testing.TB, p pgserver.LocalProvider, progress ...func(string)) *pgserver.Server {
	t.Helper()
	var hear func(string)
	if len(progress) > 0 {
		hear = progress[0]
	}
	srv, err := p.Start(providerCtx(t), hear)
	if errors.Is(err, pgserver.ErrNoServerBinaries) {
		unavailable(t, "no local PostgreSQL", err)
	}
	if err != nil {
		t.Fatalf("local provider: %v", err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	return srv
}

// The first start keeps the cluster initdb made; later starts copy it,
// and each copy is a cluster of its own that works and goes with Close.
// Without a cache, or with another user's binaries, initdb runs each time.
func TestLocalProviderCopiesTheClusterInitdbMade(t *testing.T) {
	t.Parallel() // clusters and a cache of its own
	cache := t.TempDir()
	var first, second, off progressLog
	a := startLocalWith(t, pgserver.LocalProvider{ClusterCache: cache}, first.add)
	b := startLocalWith(t, pgserver.LocalProvider{ClusterCache: cache}, second.add)
	c := startLocalWith(t, pgserver.LocalProvider{ClusterCache: pgserver.NoClusterCache}, off.add)
	for _, tc := range []struct {
		name     string
		progress *progressLog
		want     string
	}{{"first", &first, "initdb"}, {"second", &second, "initdb: copying the cluster it made before"}, {"no cache", &off, "initdb"}} {
		if got := tc.progress.own(); !slices.Equal(got, []string{tc.want, "starting postgres"}) {
			t.Errorf("%s start: progress %q, want %q then starting postgres", tc.name, got, tc.want)
		}
	}
	entries, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "cluster-") {
		t.Fatalf("the cache holds %v, want one cluster-* entry", entries)
	}

	// Each server is its own: a table made on one is not on the other.
	exec := func(srv *pgserver.Server, sql string) error {
		conn, err := pgx.Connect(providerCtx(t), srv.DSN)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		_, err = conn.Exec(providerCtx(t), sql)
		return err
	}
	if err := exec(b, "CREATE TABLE only_on_b (x int)"); err != nil {
		t.Fatal(err)
	}
	for _, srv := range []*pgserver.Server{a, c} {
		if err := exec(srv, "SELECT * FROM only_on_b"); err == nil {
			t.Errorf("%s sees a table made on the copied cluster", srv.ID)
		}
	}
	// The copy goes on Close like any cluster, and the cache stays.
	if err := b.Close(providerCtx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.ID); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there after Close: %v", b.ID, err)
	}
	var third progressLog
	d := startLocalWith(t, pgserver.LocalProvider{ClusterCache: cache}, third.add)
	if got := third.own(); len(got) == 0 || got[0] != "initdb: copying the cluster it made before" {
		t.Errorf("third start: progress %q", got)
	}
	if err := exec(d, "SELECT * FROM only_on_b"); err == nil {
		t.Error("a table made on one copy is in the next: the cache changed")
	}
}

// A room of many attendees needs more connections than PostgreSQL's
// default 100: the local provider raises max_connections when told, and
// the connections beyond the default really open.
func TestLocalProviderRaisesMaxConnections(t *testing.T) {
	t.Parallel() // a cluster, and any directory it sweeps, of its own
	srv := startLocalWith(t, pgserver.LocalProvider{MaxConnections: 150})
	if got := showMaxConnections(t, srv.DSN); got != "150" {
		t.Fatalf("max_connections %s, want 150", got)
	}
	// 120 sessions at once, opened a few at a time: each is a server
	// process of its own, and starting them one after another only waits.
	ctx := providerCtx(t)
	conns := make([]*pgx.Conn, 120)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close(ctx)
			}
		}
	}()
	var g errgroup.Group
	g.SetLimit(8)
	for i := range conns {
		g.Go(func() (err error) {
			if conns[i], err = pgx.Connect(ctx, srv.DSN); err != nil {
				return fmt.Errorf("connection %d of %d: %w", i+1, len(conns), err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}

	// At or below the default, the cluster keeps the default initdb chose
	// and wrote into its postgresql.conf, as a cluster started without the
	// option does.
	low := startLocalWith(t, pgserver.LocalProvider{MaxConnections: 50})
	want := initdbMaxConnections(t, filepath.Join(low.ID, "data", "postgresql.conf"))
	if got := showMaxConnections(t, low.DSN); got != want || got == "50" {
		t.Errorf("max_connections %s with MaxConnections 50, want the default %s", got, want)
	}
}

// initdbMaxConnections is the max_connections initdb wrote into a
// cluster's postgresql.conf.
func initdbMaxConnections(t *testing.T, conf string) string {
	t.Helper()
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "max_connections = "); ok {
			return strings.Fields(v)[0]
		}
	}
	t.Fatalf("%s sets no max_connections", conf)
	return ""
}

func TestLocalProviderCloseAfterCancel(t *testing.T) {
	t.Parallel() // a cluster, and any directory it sweeps, of its own
	srv := startLocal(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // as after a Ctrl-C
	if err := srv.Close(ctx); err != nil {
		t.Fatalf("close with a done context: %v", err)
	}
	if _, err := os.Stat(srv.ID); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there: %v", srv.ID, err)
	}
	if procs := processesMentioning(t, srv.ID); len(procs) > 0 {
		t.Errorf("processes still run on %s:\n%s", srv.ID, strings.Join(procs, "\n"))
	}
}

func TestLocalProviderRemovesAbandonedClusters(t *testing.T) {
	t.Parallel() // a cluster, and any directory it sweeps, of its own
	// A short parent keeps socket paths short; the postgres user must be
	// able to reach into it.
	parent, err := os.MkdirTemp("", "lrjan")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	// A pid that surely ran and is gone.
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := fmt.Sprintf("%d\n", done.Process.Pid)
	old := time.Now().Add(-2 * time.Minute)
	lockFile := func(name, content string, mtime time.Time) string {
		dir := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		if content != "" {
			lock := filepath.Join(dir, "data", "postmaster.pid")
			if err := os.WriteFile(lock, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(lock, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	abandoned := lockFile("leaserace-pg-killed", deadPID, old)
	kept := []string{
		lockFile("leaserace-pg-stopping", deadPID, time.Now()), // its owner may be removing it
		lockFile("leaserace-pg-making", "", old),               // initdb still at work
		lockFile("someone-elses", deadPID, old),                // not ours at all
	}

	live, err := pgserver.LocalProvider{Dir: parent}.Start(providerCtx(t), nil)
	if errors.Is(err, pgserver.ErrNoServerBinaries) {
		unavailable(t, "no local PostgreSQL", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close(context.Background()) })
	// Old enough to be looked at, but its server runs: it must stay.
	if err := os.Chtimes(filepath.Join(live.ID, "data", "postmaster.pid"), old, old); err != nil {
		t.Fatal(err)
	}
	second, err := pgserver.LocalProvider{Dir: parent}.Start(providerCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { second.Close(context.Background()) })

	if _, err := os.Stat(abandoned); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the abandoned cluster %s is still there (%v)", abandoned, err)
	}
	for _, dir := range kept {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed: %v", dir, err)
		}
	}
	selectOne(t, live.DSN)
}

// An image the engine lacks, with pulling off, is refused before any
// container is asked for, with a typed error that says how to get one.
func TestContainerProviderWithoutTheImage(t *testing.T) {
	t.Parallel()
	pgtest.ContainerReady(t) // an engine with the image tests use: Ready agrees
	ctx := providerCtx(t)
	if err := (pgserver.ContainerProvider{}).Ready(ctx); err != nil {
		t.Fatalf("Ready with the tests' image: %v", err)
	}
	const absent = "leaserace-test/no-such-image:0"
	p := pgserver.ContainerProvider{Image: absent, LocalImageOnly: true, Made: func(id string) {
		t.Errorf("a container start %s was begun for an image that is not there", id)
	}}
	if err := p.Ready(ctx); !errors.Is(err, pgserver.ErrNoImage) {
		t.Errorf("Ready: %v, want ErrNoImage", err)
	}
	srv, err := p.Start(ctx, nil)
	if srv != nil {
		_ = srv.Close(ctx)
	}
	if !errors.Is(err, pgserver.ErrNoImage) || errors.Is(err, pgserver.ErrNoDocker) {
		t.Fatalf("Start: %v, want ErrNoImage alone", err)
	}
	if !strings.Contains(err.Error(), "docker pull "+absent) {
		t.Errorf("the error does not say how to get the image: %v", err)
	}
}

func TestContainerProviderStartsAndCleansUp(t *testing.T) {
	t.Parallel() // a container of its own; the package's servers are shared
	var progress progressLog
	srv := startContainer(t, progress.add)

	want := []string{"checking Docker", "starting container " + os.Getenv("LEASERACE_PG_IMAGE"), "waiting for PostgreSQL"}
	if os.Getenv("LEASERACE_PG_IMAGE") == "" {
		want[1] += pgserver.DefaultPGImage
	}
	if got := progress.own(); !slices.Equal(got, want) {
		t.Errorf("progress %q, want %q", got, want)
	}
	if srv.Provider != "container" || srv.Version == "" || srv.Took <= 0 || srv.ID == "" {
		t.Errorf("server %+v", srv)
	}
	selectOne(t, srv.DSN)

	u, err := url.Parse(srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	password, ok := u.User.Password()
	if !ok || len(password) < 16 {
		t.Fatalf("the container's password is weak or missing: %q", password)
	}
	if host := u.Hostname(); host != "127.0.0.1" && host != "localhost" {
		t.Errorf("the container is reached at %s, not loopback", host)
	}
	if r := srv.Redacted(); strings.Contains(r, password) {
		t.Errorf("Redacted() shows the password: %s", r)
	}

	// A failing connection to the container must not quote its password.
	wrongDB := *u
	wrongDB.Path = "/no_such_database"
	_, err = pgserver.DSNProvider{DSN: wrongDB.String()}.Start(providerCtx(t), nil)
	if err == nil {
		t.Fatal("a missing database was accepted")
	}
	if strings.Contains(err.Error(), password) {
		t.Errorf("the error shows the password: %v", err)
	}

	ctx := providerCtx(t)
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if h := os.Getenv("DOCKER_HOST"); h == "" || strings.HasPrefix(h, "unix://") {
		info, err := cli.ContainerInspect(ctx, srv.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bindings := info.Container.NetworkSettings.Ports[network.MustParsePort("5432/tcp")]
		for _, b := range bindings {
			if !b.HostIP.IsLoopback() {
				t.Errorf("PostgreSQL is published on %s:%s, not on loopback only", b.HostIP, b.HostPort)
			}
		}
		if len(bindings) == 0 {
			t.Error("PostgreSQL's port is not published")
		}
	}

	if err := srv.Close(providerCtx(t)); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := cli.ContainerInspect(ctx, srv.ID, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("container %s still exists after Close (inspect: %v)", srv.ID, err)
	}
	if err := srv.Close(ctx); err != nil {
		t.Errorf("second close: %v", err)
	}
}

func TestServersFromEveryProvider(t *testing.T) {
	t.Parallel()
	for _, s := range pgtest.Servers(t) {
		t.Run(s.Provider, func(t *testing.T) { selectOne(t, s.DSN) })
	}
}

func TestDSNProviderUsesTheGivenServer(t *testing.T) {
	dsn := pgtest.DSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, p pgserver.DSNProvider) {
		srv, err := p.Start(providerCtx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if srv.Provider != "dsn" || srv.Version == "" {
			t.Errorf("server %+v", srv)
		}
		if err := srv.Close(providerCtx(t)); err != nil {
			t.Errorf("close: %v", err)
		}
		// Close leaves someone else's server alone.
		selectOne(t, srv.DSN)
	}
	t.Run("field", func(t *testing.T) { check(t, pgserver.DSNProvider{DSN: dsn}) })
	t.Run("DATABASE_URL", func(t *testing.T) {
		t.Setenv("DATABASE_URL", dsn)
		check(t, pgserver.DSNProvider{})
	})
	t.Run("PG variables", func(t *testing.T) {
		t.Setenv("DATABASE_URL", "")
		t.Setenv("PGHOST", cfg.Host)
		t.Setenv("PGPORT", fmt.Sprint(cfg.Port))
		t.Setenv("PGUSER", cfg.User)
		t.Setenv("PGDATABASE", cfg.Database)
		t.Setenv("PGPASSWORD", cfg.Password)
		if cfg.TLSConfig == nil {
			t.Setenv("PGSSLMODE", "disable")
		}
		check(t, pgserver.DSNProvider{})
	})
}

func TestDSNProviderKeepsPasswordsOutOfErrors(t *testing.T) {
	dir, role, right := pgtest.NewPasswordServer(t)
	asURL := func(pw string) string {
		return fmt.Sprintf("postgres://%s:%s@/postgres?host=%s&port=5432&sslmode=disable", role, url.QueryEscape(pw), dir)
	}
	// The right password works, so the failures below are about passwords.
	srv, err := pgserver.DSNProvider{DSN: asURL(right)}.Start(providerCtx(t), nil)
	if err != nil {
		t.Fatalf("the right password: %v", err)
	}
	if strings.Contains(srv.Redacted(), right) {
		t.Errorf("Redacted() shows the password: %s", srv.Redacted())
	}

	wrong := "wrong-" + rand.Text()
	for _, tc := range []struct {
		name string
		dsn  string
		env  map[string]string
	}{
		{"URL", asURL(wrong), nil},
		{"keywords", fmt.Sprintf("host=%s port=5432 user=%s dbname=postgres sslmode=disable password='%s'", dir, role, wrong), nil},
		{"PGPASSWORD", "", map[string]string{"PGHOST": dir, "PGPORT": "5432", "PGUSER": role, "PGDATABASE": "postgres", "PGSSLMODE": "disable", "PGPASSWORD": wrong}},
		{"unparsable URL", fmt.Sprintf("postgres://%s:%s@127.0.0.1:notaport/postgres", role, wrong), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("DATABASE_URL", "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := pgserver.DSNProvider{DSN: tc.dsn}.Start(providerCtx(t), nil)
			if err == nil {
				t.Fatal("a wrong password was accepted")
			}
			t.Logf("error: %v", err)
			if strings.Contains(err.Error(), wrong) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

func TestProviderByName(t *testing.T) {
	for name, want := range map[string]string{"": "auto", "auto": "auto", "container": "container", "local": "local", "embedded": "embedded", "dsn": "dsn"} {
		p, err := pgserver.ByName(name, pgserver.Options{})
		if err != nil || p.Name() != want {
			t.Errorf("ProviderByName(%q) = %v, %v; want %s", name, p, err, want)
		}
	}
	if _, err := pgserver.ByName("cloud", pgserver.Options{}); err == nil || !strings.Contains(err.Error(), "auto, container, local, embedded or dsn") {
		t.Errorf("an unknown name gave %v", err)
	}
	if _, err := pgserver.ByName("local", pgserver.Options{DSN: "postgres://h/db"}); err == nil {
		t.Error("local with a DSN was accepted")
	}
}

func TestAutoProviderPicksTheGivenDSN(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Run("option", func(t *testing.T) {
		srv, err := pgserver.AutoProvider{Options: pgserver.Options{DSN: dsn}}.Start(providerCtx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if srv.Provider != "dsn" || srv.DSN != dsn {
			t.Errorf("auto served %s from %s", srv.Provider, srv.Redacted())
		}
	})
	t.Run("DATABASE_URL", func(t *testing.T) {
		t.Setenv("DATABASE_URL", dsn)
		srv, err := pgserver.AutoProvider{}.Start(providerCtx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if srv.Provider != "dsn" {
			t.Errorf("auto served %s", srv.Provider)
		}
	})
}

func TestAutoProviderHandsOver(t *testing.T) {
	// Port 1 on loopback refuses at once: the dsn provider fails and auto
	// must go on to a server of its own.
	t.Setenv("DATABASE_URL", "postgres://u:hunter2pw@127.0.0.1:1/db?sslmode=disable&connect_timeout=5")
	var progress progressLog
	srv, err := pgserver.AutoProvider{}.Start(providerCtx(t), progress.add)
	if err != nil {
		unavailable(t, "neither Docker nor local PostgreSQL", err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	if srv.Provider == "dsn" || srv.Took <= 0 {
		t.Errorf("auto served %s in %s", srv.Provider, srv.Took)
	}
	selectOne(t, srv.DSN)
	lines := strings.Join(progress.all(), "\n")
	if !strings.Contains(lines, "dsn did not work") {
		t.Errorf("progress does not say why dsn was passed over:\n%s", lines)
	}
	if strings.Contains(lines, "hunter2pw") {
		t.Errorf("progress shows the password:\n%s", lines)
	}
	if err := srv.Close(providerCtx(t)); err != nil {
		t.Errorf("close: %v", err)
	}
}

func benchmarkStart(b *testing.B, start func(testing.TB) *pgserver.Server) {
	var took, closing time.Duration
	for b.Loop() {
		srv := start(b)
		took += srv.Took
		t0 := time.Now()
		if err := srv.Close(providerCtx(b)); err != nil {
			b.Fatal(err)
		}
		closing += time.Since(t0)
	}
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "start-ms/op")
	b.ReportMetric(float64(closing.Milliseconds())/float64(b.N), "close-ms/op")
}

func BenchmarkProviderStartLocal(b *testing.B) {
	benchmarkStart(b, func(tb testing.TB) *pgserver.Server { return startLocal(tb, nil) })
}

func BenchmarkProviderStartContainer(b *testing.B) {
	benchmarkStart(b, func(tb testing.TB) *pgserver.Server { return startContainer(tb, nil) })
}
