package pgcontainer_test

import (
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/leaserace/leaserace/engine/pgserver/internal/servertest"
	"github.com/leaserace/leaserace/engine/pgserver/pgcontainer"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// TestForceRemoveWaitsForARemovalUnderWay races ForceRemove with a removal
// another client began, as the pgtest watcher meets when a test process
// died while its own cleanup was removing its container: whether Docker
// answers ForceRemove with a conflict (a removal in progress) or not found
// (already done), ForceRemove returns no error, and only once the
// container is gone.
func TestForceRemoveWaitsForARemovalUnderWay(t *testing.T) {
	t.Parallel()
	srv := startContainer(t, nil)
	ctx := servertest.Ctx(t)
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	began := make(chan struct{})
	other := make(chan error, 1)
	go func() {
		close(began)
		_, err := cli.ContainerRemove(ctx, srv.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		other <- err
	}()
	<-began
	if err := pgcontainer.ForceRemove(ctx, cli.Client, srv.ID); err != nil {
		t.Fatalf("ForceRemove beside another removal: %v", err)
	}
	if _, err := cli.ContainerInspect(ctx, srv.ID, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("container %s still exists when ForceRemove returned (inspect: %v)", srv.ID, err)
	}
	if err := <-other; err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		t.Errorf("the other removal: %v", err)
	}
	// Gone already: no error either.
	if err := pgcontainer.ForceRemove(ctx, cli.Client, srv.ID); err != nil {
		t.Errorf("ForceRemove of a removed container: %v", err)
	}
}
