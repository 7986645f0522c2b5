package pgserver_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgdsn"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/pgserver/internal/servertest"
	"github.com/leaserace/leaserace/engine/pgserver/zonky"
	"github.com/leaserace/leaserace/engine/pgtest/zonkytest"
)

// embedded is the provider with the binaries in cache and the clusters
// initdb makes kept in a directory of the test's own: each test's binaries
// are new ones, so in the user's cache their clusters would only be left
// for the next run to find and remove.
func embedded(tb testing.TB, mirror, cache string) pgserver.EmbeddedProvider {
	return pgserver.EmbeddedProvider{
		Version: zonkytest.Version, Mirror: mirror, CacheDir: cache, StallTimeout: 5 * time.Second,
		ClusterCache: zonkytest.OpenDir(tb, "lrini"),
	}
}

// cacheEntries lists what the cache root holds.
func cacheEntries(t testing.TB, cache string) []string {
	t.Helper()
	entries, err := os.ReadDir(cache)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func startEmbedded(t testing.TB, p pgserver.EmbeddedProvider, progress func(string)) *pgserver.Server {
	t.Helper()
	srv, err := p.Start(servertest.Ctx(t), progress)
	if err != nil {
		t.Fatalf("embedded provider: %v", err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	return srv
}

func TestEmbeddedDownloadsOnceThenRunsOffline(t *testing.T) {
	t.Parallel()
	// Compressed, as zonky's jars are: this start decompresses real LZMA2.
	// Not under the race detector: there decoding LZMA2, one goroutine's
	// arithmetic inside the xz package, took 25 of the test's 30 s, and
	// the stored jar goes through the same download, decoder, unpacking
	// and start. Every plain run decodes the real thing.
	get := zonkytest.Compressed
	if underRace {
		get = zonkytest.Get
	}
	jar := get(t)
	cache := zonkytest.OpenDir(t, "lremb")
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: jar.Bytes, Sum: jar.Sum})

	var first servertest.Progress
	srv := startEmbedded(t, embedded(t, mirror.URL, cache), first.Add)
	if srv.Provider != "embedded" || srv.Version == "" {
		t.Errorf("served by %q, version %q", srv.Provider, srv.Version)
	}
	servertest.SelectOne(t, srv.DSN)
	lines := strings.Join(first.Own(), "\n")
	for _, want := range []string{"downloading PostgreSQL " + zonkytest.Version + " once, from " + mirror.URL, " MB (100%), ", " MB/s", "unpacking", "initdb"} {
		if !strings.Contains(lines, want) {
			t.Errorf("the first start's progress lacks %q:\n%s", want, lines)
		}
	}
	if got := cacheEntries(t, cache); len(got) != 1 || got[0] != zonkytest.Version {
		t.Errorf("the cache holds %v, want just %s", got, zonkytest.Version)
	}
	checkLoopbackOnly(t, srv.DSN)
	checkPsqlLine(t, srv.DSN)

	// The mirror goes away: the second start must not need it.
	asked := mirror.Requests()
	mirror.Close()
	var second servertest.Progress
	again := startEmbedded(t, embedded(t, mirror.URL, cache), second.Add)
	servertest.SelectOne(t, again.DSN)
	if mirror.Requests() != asked {
		t.Errorf("the second start asked the mirror %d more times", mirror.Requests()-asked)
	}
	if l := strings.Join(second.Own(), "\n"); !strings.Contains(l, "from the cache") || strings.Contains(l, "downloading") {
		t.Errorf("the second start's progress:\n%s", l)
	}
	if again.ID == srv.ID {
		t.Errorf("both starts used the data directory %s", srv.ID)
	}

	// Close removes each run's cluster, and only that: the cache stays.
	for _, s := range []*pgserver.Server{srv, again} {
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
	if got := cacheEntries(t, cache); len(got) != 1 {
		t.Errorf("after Close the cache holds %v", got)
	}
}

// checkPsqlLine runs the psql line leaserace shows, as shown: it needs no
// password and reaches the server.
func checkPsqlLine(t *testing.T, dsn string) {
	t.Helper()
	line, needsPassword, err := pgdsn.PsqlCommand(dsn, "public")
	if err != nil || needsPassword {
		t.Fatalf("psql line %q, needs a password %v, %v", line, needsPassword, err)
	}
	if _, err := exec.LookPath("psql"); err != nil {
		t.Logf("no psql on this machine to run %s", line)
		return
	}
	out, err := exec.Command("sh", "-c", line+" -tAc 'select 6*7'").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "42" {
		t.Errorf("%s: %v\n%s", line, err, out)
	}
}

// checkLoopbackOnly: the server listens on 127.0.0.1 only, at a port of its
// own, and lets nobody in over TCP without the password it never shows.
func checkLoopbackOnly(t *testing.T, dsn string) {
	t.Helper()
	ctx := servertest.Ctx(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var listen, port string
	if err := conn.QueryRow(ctx, "SELECT current_setting('listen_addresses'), current_setting('port')").Scan(&listen, &port); err != nil {
		t.Fatal(err)
	}
	if listen != "127.0.0.1" || port == "5432" {
		t.Errorf("listen_addresses=%q port=%s, want 127.0.0.1 and a free port", listen, port)
	}
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 5*time.Second)
	if err != nil {
		t.Fatalf("nothing listens on 127.0.0.1:%s: %v", port, err)
	}
	c.Close()
	tcp := fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable&connect_timeout=5", port)
	if c, err := pgx.Connect(ctx, tcp); err == nil {
		c.Close(ctx)
		t.Errorf("a TCP login without a password was let in")
	}
}

func TestEmbeddedRaisesMaxConnections(t *testing.T) {
	t.Parallel()
	jar := zonkytest.Get(t)
	cache := zonkytest.OpenDir(t, "lremb")
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: jar.Bytes, Sum: jar.Sum})
	p := embedded(t, mirror.URL, cache)
	p.MaxConnections = 157
	srv := startEmbedded(t, p, nil)
	if got := showMaxConnections(t, srv.DSN); got != "157" {
		t.Errorf("max_connections = %s, want 157", got)
	}
}

// refused starts a provider that must fail, and checks that nothing was
// cached: no version directory, no partial download.
func refused(t *testing.T, p pgserver.EmbeddedProvider, ctx context.Context) error {
	t.Helper()
	srv, err := p.Start(ctx, nil)
	if err == nil {
		srv.Close(context.Background())
		t.Fatal("the start succeeded")
	}
	if got := cacheEntries(t, p.CacheDir); len(got) > 0 {
		t.Errorf("after %v the cache holds %v", err, got)
	}
	return err
}

func TestEmbeddedRefusesABadChecksum(t *testing.T) {
	t.Parallel()
	jar := zonkytest.Get(t)
	cache := zonkytest.OpenDir(t, "lremb")
	wrong := sha256.Sum256([]byte("not the jar"))
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: jar.Bytes, Sum: hex.EncodeToString(wrong[:])})
	err := refused(t, embedded(t, mirror.URL, cache), servertest.Ctx(t))
	var bad *zonky.ChecksumError
	if !errors.As(err, &bad) || bad.Got != jar.Sum || bad.Want != hex.EncodeToString(wrong[:]) {
		t.Fatalf("got %v, want a ChecksumError with both sums", err)
	}
	for _, want := range []string{"sha256", jar.Sum, hex.EncodeToString(wrong[:]), "nothing was cached"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
}

func TestEmbeddedRefusesAJarWithoutItsChecksum(t *testing.T) {
	t.Parallel()
	jar := zonkytest.Get(t)
	cache := zonkytest.OpenDir(t, "lremb")
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: jar.Bytes})
	err := refused(t, embedded(t, mirror.URL, cache), servertest.Ctx(t))
	if !strings.Contains(err.Error(), ".sha256") || !strings.Contains(err.Error(), "404") {
		t.Errorf("the error does not name the missing .sha256: %v", err)
	}
}

func TestEmbeddedGivesUpOnAHangingMirror(t *testing.T) {
	t.Parallel()
	cache := zonkytest.OpenDir(t, "lremb")
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Hang: true})
	p := embedded(t, mirror.URL, cache)
	p.StallTimeout = 300 * time.Millisecond
	began := time.Now()
	err := refused(t, p, servertest.Ctx(t))
	var stall *zonky.StallError
	if !errors.As(err, &stall) || !strings.Contains(err.Error(), "sent nothing for 300ms") {
		t.Errorf("got %v, want a StallError", err)
	}
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("giving up took %s", took)
	}
}

func TestEmbeddedDownloadStopsOnCancel(t *testing.T) {
	t.Parallel()
	cache := zonkytest.OpenDir(t, "lremb")
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Hang: true})
	ctx, cancel := context.WithCancel(servertest.Ctx(t))
	go func() {
		// Ctrl-C once the request is in flight.
		for mirror.Requests() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	p := embedded(t, mirror.URL, cache)
	p.StallTimeout = time.Minute
	err := refused(t, p, ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func TestEmbeddedRefusesATruncatedJar(t *testing.T) {
	t.Parallel()
	jar := zonkytest.Get(t)
	t.Run("connection cut", func(t *testing.T) {
		t.Parallel()
		mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: jar.Bytes, Sum: jar.Sum, CutAfter: len(jar.Bytes) / 3})
		err := refused(t, embedded(t, mirror.URL, zonkytest.OpenDir(t, "lremb")), servertest.Ctx(t))
		if !strings.Contains(err.Error(), "could not download PostgreSQL "+zonkytest.Version+" from "+mirror.URL) {
			t.Errorf("the error does not name the download: %v", err)
		}
	})
	t.Run("short jar with a matching checksum", func(t *testing.T) {
		t.Parallel()
		short := jar.Bytes[:len(jar.Bytes)/2]
		sum := sha256.Sum256(short)
		mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: short, Sum: hex.EncodeToString(sum[:])})
		err := refused(t, embedded(t, mirror.URL, zonkytest.OpenDir(t, "lremb")), servertest.Ctx(t))
		if !strings.Contains(err.Error(), "not a jar") {
			t.Errorf("got %v, want it named not a jar", err)
		}
	})
}

func TestEmbeddedRefusesAJarWithoutTxz(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.Create("META-INF/MANIFEST.MF")
	fmt.Fprintln(w, "Manifest-Version: 1.0")
	zw.Close()
	sum := sha256.Sum256(b.Bytes())
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: b.Bytes(), Sum: hex.EncodeToString(sum[:])})
	err := refused(t, embedded(t, mirror.URL, zonkytest.OpenDir(t, "lremb")), servertest.Ctx(t))
	if !errors.Is(err, zonky.ErrNoTxz) {
		t.Errorf("got %v, want ErrNoTxz", err)
	}
}

func TestEmbeddedSaysWhenTheCacheCannotBeWritten(t *testing.T) {
	t.Parallel()
	// A file where the cache directory should be: even root cannot write
	// under it.
	blocker := filepath.Join(zonkytest.OpenDir(t, "lremb"), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{})
	p := embedded(t, mirror.URL, filepath.Join(blocker, "cache"))
	_, err := p.Start(servertest.Ctx(t), nil)
	if err == nil || !strings.Contains(err.Error(), "PostgreSQL cache directory") || !strings.Contains(err.Error(), blocker) {
		t.Errorf("got %v, want an error naming the cache directory", err)
	}
	if mirror.Requests() != 0 {
		t.Errorf("it downloaded %d times with nowhere to put the result", mirror.Requests())
	}
}

// BenchmarkProviderStartEmbedded: "download+unpack" fills an empty cache
// and starts nothing; "first" downloads (from loopback), checks
// and unpacks the binaries into an empty cache, then starts; "cached"
// starts from a filled cache, as every run after the first does.
func BenchmarkProviderStartEmbedded(b *testing.B) {
	jar := zonkytest.Compressed(b)
	mirror := zonkytest.NewMirror(b, zonkytest.Serve{Jar: jar.Bytes, Sum: jar.Sum})
	b.Run("download+unpack", func(b *testing.B) {
		for b.Loop() {
			if _, err := embedded(b, mirror.URL, zonkytest.OpenDir(b, "lremb")).Binaries(servertest.Ctx(b), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("first", func(b *testing.B) {
		servertest.BenchmarkStart(b, func(tb testing.TB) *pgserver.Server {
			return startEmbedded(tb, embedded(tb, mirror.URL, zonkytest.OpenDir(tb, "lremb")), nil)
		})
	})
	b.Run("cached", func(b *testing.B) {
		p := embedded(b, mirror.URL, zonkytest.OpenDir(b, "lremb"))
		if _, err := p.Binaries(servertest.Ctx(b), nil); err != nil {
			b.Fatal(err)
		}
		servertest.BenchmarkStart(b, func(tb testing.TB) *pgserver.Server {
			return startEmbedded(tb, p, nil)
		})
	})
}

// A download a killed leaserace left half-done is removed by a later start
// once nothing has touched it for ten minutes; a younger one may be another
// leaserace's, under way, and stays.
func TestEmbeddedSweepsAbandonedPartialDownloads(t *testing.T) {
	t.Parallel()
	cache := zonkytest.OpenDir(t, "lremb")
	partial := func(name string, age time.Duration) string {
		dir := filepath.Join(cache, ".partial-"+zonkytest.Version+"-"+name)
		if err := os.MkdirAll(filepath.Join(dir, "pg", "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		jar := filepath.Join(dir, "download.jar")
		if err := os.WriteFile(jar, []byte("half a jar"), 0o644); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		for _, p := range []string{jar, filepath.Join(dir, "pg", "bin"), filepath.Join(dir, "pg"), dir} {
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	old, young := partial("killed", 11*time.Minute), partial("running", 9*time.Minute)
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: []byte("not a jar"), Sum: strings.Repeat("0", 64)})
	var progress servertest.Progress
	_, err := embedded(t, mirror.URL, cache).Binaries(servertest.Ctx(t), progress.Add)
	if err == nil {
		t.Fatal("a bad checksum was accepted")
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the abandoned download %s is still there (%v)", old, err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("the recent download %s was removed: %v", young, err)
	}
	if l := strings.Join(progress.All(), "\n"); !strings.Contains(l, "removed "+old) {
		t.Errorf("progress does not say it removed %s:\n%s", old, l)
	}
}

// As root the server runs as the postgres user, who must be able to walk
// into the cache: when it cannot (root's own cache sits in a closed /root),
// the start is refused with that reason, before any cluster is made.
func TestEmbeddedAsRootNeedsACacheThePostgresUserCanReach(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root hands the server to the postgres user")
	}
	jar := zonkytest.Get(t)
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: jar.Bytes, Sum: jar.Sum})
	closed := zonkytest.OpenDir(t, "lremb")
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	clusters := zonkytest.OpenDir(t, "lremb")
	p := embedded(t, mirror.URL, filepath.Join(closed, "cache"))
	p.Dir = clusters
	srv, err := p.Start(servertest.Ctx(t), nil)
	if err == nil {
		srv.Close(context.Background())
		t.Fatal("the server started from a cache its user cannot reach")
	}
	for _, want := range []string{"postgres user", "cannot reach the cached binaries", closed + " is mode -rwx------", "XDG_CACHE_HOME"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
	if left := cacheEntries(t, clusters); len(left) > 0 {
		t.Errorf("a refused start left %v", left)
	}
}
