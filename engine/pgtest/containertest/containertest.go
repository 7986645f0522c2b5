// Package containertest gives a package's tests PostgreSQL containers
// besides pgtest's other servers. Such a package's TestMain calls
//
//	func TestMain(m *testing.M) { containertest.Main(m) }
//
// instead of pgtest.Main; then pgtest.Servers includes a container, and
// pgtest.NewContainer and pgtest.ContainerReady work. Only these test
// binaries link Docker's client.
package containertest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/pgserver/pgcontainer"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/testcontainers/testcontainers-go"
)

// Main is pgtest.Main with containers: it runs the tests, removes what
// they started, and exits.
func Main(m *testing.M) {
	setDockerDefaults()
	pgtest.MainWith(m, containers{})
}

// containers runs the container provider the way tests must: from a local
// image only, never pulling.
type containers struct{}

func (containers) Ready(ctx context.Context) error {
	return pgcontainer.ContainerProvider{LocalImageOnly: true}.Ready(ctx)
}

func (containers) Start(ctx context.Context, made func(string)) (*pgserver.Server, error) {
	return pgcontainer.ContainerProvider{LocalImageOnly: true, Made: made}.Start(ctx, nil)
}

func (containers) Remove(ctx context.Context, id string) error {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return fmt.Errorf("reaching Docker: %w", err)
	}
	defer cli.Close()
	return pgcontainer.ForceRemove(ctx, cli.Client, id)
}

func (containers) RemoveStarted(ctx context.Context, startID string) error {
	return pgcontainer.RemoveStarted(ctx, startID)
}

// setDockerDefaults fills in two testcontainers settings unless the person
// running the tests chose otherwise. Tests must reach containers through
// loopback, and the reaper container testcontainers would pull is not
// needed: pgtest and its watcher remove what the tests start.
func setDockerDefaults() {
	host := os.Getenv("DOCKER_HOST")
	if _, set := os.LookupEnv("TESTCONTAINERS_HOST_OVERRIDE"); !set && (host == "" || strings.HasPrefix(host, "unix://")) {
		os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
	}
	if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
}
