package choose_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/pgserver/choose"
	"github.com/leaserace/leaserace/engine/pgserver/internal/servertest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/pgtest/containertest"
	"github.com/leaserace/leaserace/engine/pgtest/zonkytest"
)

// TestMain is containertest's: auto tries a container first.
func TestMain(m *testing.M) { containertest.Main(m) }

func TestProviderByName(t *testing.T) {
	for name, want := range map[string]string{"": "auto", "auto": "auto", "container": "container", "local": "local", "embedded": "embedded", "dsn": "dsn"} {
		p, err := choose.ByName(name, choose.Options{})
		if err != nil || p.Name() != want {
			t.Errorf("ProviderByName(%q) = %v, %v; want %s", name, p, err, want)
		}
	}
	if _, err := choose.ByName("cloud", choose.Options{}); err == nil || !strings.Contains(err.Error(), "auto, container, local, embedded or dsn") {
		t.Errorf("an unknown name gave %v", err)
	}
	if _, err := choose.ByName("local", choose.Options{DSN: "postgres://h/db"}); err == nil {
		t.Error("local with a DSN was accepted")
	}
}

func TestAutoProviderPicksTheGivenDSN(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Run("option", func(t *testing.T) {
		srv, err := choose.Auto{Options: choose.Options{DSN: dsn}}.Start(servertest.Ctx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if srv.Provider != "dsn" || srv.DSN != dsn {
			t.Errorf("auto served %s from %s", srv.Provider, srv.Redacted())
		}
	})
	t.Run("DATABASE_URL", func(t *testing.T) {
		t.Setenv("DATABASE_URL", dsn)
		srv, err := choose.Auto{}.Start(servertest.Ctx(t), nil)
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
	// must go on to a server of its own. The Docker engine named is not
	// there either (so auto never pulls an image here, as tests must not),
	// and the embedded provider's mirror refuses: the local cluster serves.
	t.Setenv("DATABASE_URL", "postgres://u:hunter2pw@127.0.0.1:1/db?sslmode=disable&connect_timeout=5")
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	var progress servertest.Progress
	srv, err := choose.Auto{Options: choose.Options{Mirror: "http://127.0.0.1:1/"}}.Start(servertest.Ctx(t), progress.Add)
	if errors.Is(err, pgserver.ErrNoServerBinaries) {
		servertest.Unavailable(t, "no local PostgreSQL", err)
	}
	if err != nil {
		t.Fatalf("auto: %v", err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	if srv.Provider != "local" || srv.Took <= 0 {
		t.Errorf("auto served %s in %s, want local", srv.Provider, srv.Took)
	}
	servertest.SelectOne(t, srv.DSN)
	lines := strings.Join(progress.All(), "\n")
	for _, want := range []string{"dsn did not work", "; trying container", "container did not work (no Docker engine answers", "; trying local"} {
		if !strings.Contains(lines, want) {
			t.Errorf("progress lacks %q:\n%s", want, lines)
		}
	}
	if strings.Contains(lines, "hunter2pw") {
		t.Errorf("progress shows the password:\n%s", lines)
	}
	if err := srv.Close(servertest.Ctx(t)); err != nil {
		t.Errorf("close: %v", err)
	}
}

func TestAutoTakesEmbeddedWhenNothingElseStarts(t *testing.T) {
	jar := zonkytest.Get(t)
	cache := zonkytest.OpenDir(t, "lremb")
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: jar.Bytes, Sum: jar.Sum})
	// No server named, no Docker, no local binaries.
	for _, k := range []string{"DATABASE_URL", "PGHOST", "PGDATABASE"} {
		t.Setenv(k, "")
	}
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(cache, "no-docker.sock"))
	t.Setenv("LEASERACE_PG_BINDIR", "")
	t.Setenv("XDG_CACHE_HOME", cache)
	var progress servertest.Progress
	srv, err := choose.Auto{Options: choose.Options{Mirror: mirror.URL}}.Start(servertest.Ctx(t), progress.Add)
	if err != nil {
		t.Fatalf("auto: %v", err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	if srv.Provider != "embedded" {
		t.Errorf("auto took %s", srv.Provider)
	}
	servertest.SelectOne(t, srv.DSN)
	lines := strings.Join(progress.Own(), "\n")
	order := []string{"trying container", "container did not work (", "; trying local", "trying local", "local did not work (PostgreSQL server binaries not found", "; trying embedded", "trying embedded"}
	at := 0
	for _, want := range order {
		i := strings.Index(lines[at:], want)
		if i < 0 {
			t.Fatalf("auto's progress lacks %q after byte %d:\n%s", want, at, lines)
		}
		at += i
	}
}
