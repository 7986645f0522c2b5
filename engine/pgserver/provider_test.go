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

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgdsn"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/pgserver/internal/servertest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"golang.org/x/sync/errgroup"
)

func startLocal(t testing.TB, progress func(string)) *pgserver.Server {
	t.Helper()
	srv, err := pgserver.LocalProvider{}.Start(servertest.Ctx(t), progress)
	if errors.Is(err, pgserver.ErrNoServerBinaries) {
		servertest.Unavailable(t, "no local PostgreSQL", err)
	}
	if err != nil {
		t.Fatalf("local provider: %v", err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	return srv
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
	var progress servertest.Progress
	// A cache of its own, empty: initdb runs.
	srv, err := pgserver.LocalProvider{ClusterCache: t.TempDir()}.Start(servertest.Ctx(t), progress.Add)
	if errors.Is(err, pgserver.ErrNoServerBinaries) {
		servertest.Unavailable(t, "no local PostgreSQL", err)
	}
	if err != nil {
		t.Fatalf("local provider: %v", err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })

	if got := progress.Own(); !slices.Equal(got, []string{"initdb", "starting postgres"}) {
		t.Errorf("progress %q", got)
	}
	if srv.Provider != "local" || srv.Version == "" || srv.Took <= 0 {
		t.Errorf("server %+v", srv)
	}
	servertest.SelectOne(t, srv.DSN)

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
		wg.Go(func() { errs[i] = srv.Close(servertest.Ctx(t)) })
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
	if err := srv.Close(servertest.Ctx(t)); err != nil {
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
	ctx := servertest.Ctx(t)
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
	srv, err := p.Start(servertest.Ctx(t), hear)
	if errors.Is(err, pgserver.ErrNoServerBinaries) {
		servertest.Unavailable(t, "no local PostgreSQL", err)
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
	var first, second, off servertest.Progress
	a := startLocalWith(t, pgserver.LocalProvider{ClusterCache: cache}, first.Add)
	b := startLocalWith(t, pgserver.LocalProvider{ClusterCache: cache}, second.Add)
	c := startLocalWith(t, pgserver.LocalProvider{ClusterCache: pgserver.NoClusterCache}, off.Add)
	for _, tc := range []struct {
		name     string
		progress *servertest.Progress
		want     string
	}{{"first", &first, "initdb"}, {"second", &second, "initdb: copying the cluster it made before"}, {"no cache", &off, "initdb"}} {
		if got := tc.progress.Own(); !slices.Equal(got, []string{tc.want, "starting postgres"}) {
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
		conn, err := pgx.Connect(servertest.Ctx(t), srv.DSN)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		_, err = conn.Exec(servertest.Ctx(t), sql)
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
	if err := b.Close(servertest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.ID); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there after Close: %v", b.ID, err)
	}
	var third servertest.Progress
	d := startLocalWith(t, pgserver.LocalProvider{ClusterCache: cache}, third.Add)
	if got := third.Own(); len(got) == 0 || got[0] != "initdb: copying the cluster it made before" {
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
	ctx := servertest.Ctx(t)
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

	live, err := pgserver.LocalProvider{Dir: parent}.Start(servertest.Ctx(t), nil)
	if errors.Is(err, pgserver.ErrNoServerBinaries) {
		servertest.Unavailable(t, "no local PostgreSQL", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close(context.Background()) })
	// Old enough to be looked at, but its server runs: it must stay.
	if err := os.Chtimes(filepath.Join(live.ID, "data", "postmaster.pid"), old, old); err != nil {
		t.Fatal(err)
	}
	second, err := pgserver.LocalProvider{Dir: parent}.Start(servertest.Ctx(t), nil)
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
	servertest.SelectOne(t, live.DSN)
}

func TestDSNProviderUsesTheGivenServer(t *testing.T) {
	dsn := pgtest.DSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, p pgserver.DSNProvider) {
		srv, err := p.Start(servertest.Ctx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if srv.Provider != "dsn" || srv.Version == "" {
			t.Errorf("server %+v", srv)
		}
		if err := srv.Close(servertest.Ctx(t)); err != nil {
			t.Errorf("close: %v", err)
		}
		// Close leaves someone else's server alone.
		servertest.SelectOne(t, srv.DSN)
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
	srv, err := pgserver.DSNProvider{DSN: asURL(right)}.Start(servertest.Ctx(t), nil)
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
			_, err := pgserver.DSNProvider{DSN: tc.dsn}.Start(servertest.Ctx(t), nil)
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

func BenchmarkProviderStartLocal(b *testing.B) {
	servertest.BenchmarkStart(b, func(tb testing.TB) *pgserver.Server { return startLocal(tb, nil) })
}
