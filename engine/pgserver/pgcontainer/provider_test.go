package pgcontainer_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/pgserver/internal/servertest"
	"github.com/leaserace/leaserace/engine/pgserver/pgcontainer"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/pgtest/containertest"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// TestMain gives the tests a container of the package's own through
// pgtest, and removes what they start.
func TestMain(m *testing.M) { containertest.Main(m) }

func startContainer(t testing.TB, progress func(string)) *pgserver.Server {
	t.Helper()
	ctx := servertest.Ctx(t)
	pgtest.ContainerReady(t)
	srv, err := pgcontainer.ContainerProvider{LocalImageOnly: true}.Start(ctx, progress)
	if err != nil {
		t.Fatalf("container provider: %v", err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	return srv
}

// An image the engine lacks, with pulling off, is refused before any
// container is asked for, with a typed error that says how to get one.
func TestContainerProviderWithoutTheImage(t *testing.T) {
	t.Parallel()
	pgtest.ContainerReady(t) // an engine with the image tests use: Ready agrees
	ctx := servertest.Ctx(t)
	if err := (pgcontainer.ContainerProvider{}).Ready(ctx); err != nil {
		t.Fatalf("Ready with the tests' image: %v", err)
	}
	const absent = "leaserace-test/no-such-image:0"
	p := pgcontainer.ContainerProvider{Image: absent, LocalImageOnly: true, Made: func(id string) {
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
	var progress servertest.Progress
	srv := startContainer(t, progress.Add)

	want := []string{"checking Docker", "starting container " + os.Getenv("LEASERACE_PG_IMAGE"), "waiting for PostgreSQL"}
	if os.Getenv("LEASERACE_PG_IMAGE") == "" {
		want[1] += pgcontainer.DefaultPGImage
	}
	if got := progress.Own(); !slices.Equal(got, want) {
		t.Errorf("progress %q, want %q", got, want)
	}
	if srv.Provider != "container" || srv.Version == "" || srv.Took <= 0 || srv.ID == "" {
		t.Errorf("server %+v", srv)
	}
	servertest.SelectOne(t, srv.DSN)

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
	_, err = pgserver.DSNProvider{DSN: wrongDB.String()}.Start(servertest.Ctx(t), nil)
	if err == nil {
		t.Fatal("a missing database was accepted")
	}
	if strings.Contains(err.Error(), password) {
		t.Errorf("the error shows the password: %v", err)
	}

	ctx := servertest.Ctx(t)
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

	if err := srv.Close(servertest.Ctx(t)); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := cli.ContainerInspect(ctx, srv.ID, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("container %s still exists after Close (inspect: %v)", srv.ID, err)
	}
	if err := srv.Close(ctx); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// BenchmarkProviderStartContainer: a start from the local image and a
// removal, as each of the tests' containers costs.
func BenchmarkProviderStartContainer(b *testing.B) {
	servertest.BenchmarkStart(b, func(tb testing.TB) *pgserver.Server { return startContainer(tb, nil) })
}
