// Package pgcontainer is the container provider: PostgreSQL in a Docker
// container through testcontainers-go. It lives apart from pgserver so that
// only what may run a container links Docker's client.
package pgcontainer

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/leaserace/leaserace/engine/pgserver"

	// Before testcontainers-go's init lists the machine's processes.
	_ "github.com/leaserace/leaserace/engine/pgserver/internal/boottime"
)

// DefaultPGImage is the image the container provider runs unless told
// otherwise by ContainerProvider.Image or LEASERACE_PG_IMAGE.
const DefaultPGImage = "postgres:16-alpine"

// ContainerProvider runs PostgreSQL in a Docker container through
// testcontainers-go. Close removes the container. Start first removes the
// containers a killed leaserace on this host left (their owner process is
// gone) and says so through progress.
type ContainerProvider struct {
	// Image is the PostgreSQL image; empty means LEASERACE_PG_IMAGE, then
	// DefaultPGImage. It must behave like the official postgres image.
	Image string
	// LocalImageOnly refuses to start when the image is not already on the
	// Docker engine, instead of letting Docker pull it. Tests set it: they
	// must never reach for a registry.
	LocalImageOnly bool
	// Made, if set, hears the label every container of this start will
	// carry, before Docker is asked for one, so that a caller which may be
	// killed outright can have someone else remove it (RemoveStarted).
	Made func(startID string)
	// MaxConnections, when above PostgreSQL's default of 100, is the
	// server's max_connections (a room of attendees may need more).
	MaxConnections int
}

// Name is the provider's name on the command line.
func (ContainerProvider) Name() string { return "container" }

const (
	// dockerCheckTimeout keeps "is Docker there?" from holding up start-up.
	dockerCheckTimeout = 2 * time.Second
	// containerStopTimeout bounds removal, also when the caller's ctx is done.
	containerStopTimeout = 30 * time.Second
	// containerStartTimeout bounds a start that no longer listens to its
	// caller's cancellation.
	containerStartTimeout = 3 * time.Minute
	containerUser         = "leaserace"
	containerDatabase     = "leaserace"
)

func (p ContainerProvider) image() string {
	if p.Image != "" {
		return p.Image
	}
	if img := os.Getenv("LEASERACE_PG_IMAGE"); img != "" {
		return img
	}
	return DefaultPGImage
}

// Start brings the server up; progress, if not nil, hears what it does.
func (p ContainerProvider) Start(ctx context.Context, progress func(string)) (*pgserver.Server, error) {
	began := time.Now()
	image := p.image()

	say(progress, "checking Docker")
	cli, err := connectDocker(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	if p.LocalImageOnly {
		if err := imagePresent(ctx, cli, image); err != nil {
			return nil, err // it must not be pulled
		}
	}
	// Every container is labelled with its owner, so that if this process
	// is killed during the start, a later start removes the container.
	labels := map[string]string{}
	if me, err := pgserver.CurrentOwner(); err == nil {
		removeAbandonedContainers(ctx, cli, me, progress)
		labels = me.Labels()
	}

	// A fresh password each time: the port is published on the host, and the
	// password is what keeps other local users out. rand.Text is URL-safe.
	password := rand.Text()
	// A cancelled start can leave a container Docker created but
	// testcontainers never handed back; this label finds it.
	startID := rand.Text()
	labels[startLabel] = startID
	if p.Made != nil {
		p.Made(startID)
	}
	cmd := []string{"postgres", "-c", "fsync=off"}
	if p.MaxConnections > pgserver.DefaultMaxConnections {
		cmd = append(cmd, "-c", "max_connections="+strconv.Itoa(p.MaxConnections))
	}
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithCmd(cmd...),
		testcontainers.WithLabels(labels),
		// testcontainers writes to stderr by default, which would tear
		// through a terminal UI; progress lines say what matters.
		testcontainers.WithLogger(tclog.NewNoopLogger()),
		postgres.WithDatabase(containerDatabase),
		postgres.WithUsername(containerUser),
		postgres.WithPassword(password),
		postgres.BasicWaitStrategies(),
		testcontainers.WithAdditionalLifecycleHooks(testcontainers.ContainerLifecycleHooks{
			PostStarts: []testcontainers.ContainerHook{func(context.Context, testcontainers.Container) error {
				say(progress, "waiting for PostgreSQL")
				return nil
			}},
		}),
	}
	if dockerIsLocal() {
		// Only this machine needs the server: publish it on loopback, not
		// on every interface. (A remote engine's port must stay reachable.)
		opts = append(opts, testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{
				network.MustParsePort("5432/tcp"): {{HostIP: netip.MustParseAddr("127.0.0.1")}},
			}
		}))
	}
	say(progress, "starting container "+image)
	// Docker goes on creating a container after the request that asked for
	// it is cancelled, and one created that way has no handle to remove it
	// by. So a start is never abandoned half-way: it runs to the end on a
	// context of its own, and a cancelled caller gets it torn down below.
	runCtx, cancelRun := context.WithTimeout(context.WithoutCancel(ctx), containerStartTimeout)
	defer cancelRun()
	ctr, err := postgres.Run(runCtx, image, opts...)
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("start cancelled: %w", context.Cause(ctx))
	}
	stop := func(ctx context.Context) error {
		if ctr == nil {
			return nil
		}
		// Our own bound, not the caller's ctx alone: after a Ctrl-C that ctx
		// is done, and the container must go all the same.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), containerStopTimeout)
		defer cancel()
		if err := ctr.Terminate(ctx, testcontainers.StopTimeout(time.Second)); err != nil {
			return fmt.Errorf("removing the PostgreSQL container %s: %w", shortID(ctr.GetContainerID()), err)
		}
		return nil
	}
	fail := func(err error) (*pgserver.Server, error) {
		err = errors.Join(err, stop(ctx), RemoveStarted(ctx, startID))
		return nil, pgserver.WithoutSecret(err, password)
	}
	if err != nil {
		return fail(fmt.Errorf("starting a PostgreSQL container from %s: %w%s", image, err, imageHint(image)))
	}

	dsn, err := ctr.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		return fail(fmt.Errorf("finding the PostgreSQL container's address: %w", err))
	}
	version, err := pgserver.ServerVersion(ctx, dsn)
	if err != nil {
		return fail(fmt.Errorf("connecting to the PostgreSQL container: %w", err))
	}
	return pgserver.NewServer("container", dsn, ctr.GetContainerID(), version, time.Since(began), stop), nil
}

// imageHint adds advice when the default image could not be had.
func imageHint(image string) string {
	if image != DefaultPGImage {
		return ""
	}
	return " (if this machine cannot pull images, build a local one and name it with LEASERACE_PG_IMAGE)"
}

// dockerIsLocal tells whether the Docker engine runs on this machine.
func dockerIsLocal() bool {
	host := os.Getenv("DOCKER_HOST")
	return host == "" || strings.HasPrefix(host, "unix://")
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// startLabel marks every container one Start creates.
const startLabel = "org.leaserace.start"

// RemoveStarted force-removes every container of one start (the startID
// Made announced), with a bound of its own: it runs after a Ctrl-C, when
// the caller's ctx is done, and in a process cleaning up after one that died.
func RemoveStarted(ctx context.Context, startID string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), containerStopTimeout)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return fmt.Errorf("cannot reach Docker to remove a half-started container: %w", err)
	}
	defer cli.Close()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", startLabel+"="+startID)})
	if err != nil {
		return fmt.Errorf("cannot list half-started containers: %w", err)
	}
	var errs []error
	for _, c := range list.Items {
		if err := ForceRemove(ctx, cli.Client, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("removing half-started container %s: %w", shortID(c.ID), err))
		}
	}
	return errors.Join(errs...)
}

// ForceRemove removes a container and its volumes, whatever its state, and
// returns once it is gone. A container already gone is no error. One whose
// removal another client began (Docker answers a conflict: a process that
// died while its cleanup ran, say) is waited for until Docker says it is
// removed, so the caller never returns while the container still exists.
func ForceRemove(ctx context.Context, cli *client.Client, id string) error {
	_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
		return nil
	case !cerrdefs.IsConflict(err):
		return err
	}
	w := cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionRemoved})
	select {
	case <-w.Result:
		return nil
	case werr := <-w.Error:
		if cerrdefs.IsNotFound(werr) {
			return nil // removed before the wait began
		}
		return fmt.Errorf("%w; then waiting for that removal: %w", err, werr)
	}
}

// removeAbandonedContainers force-removes the containers whose owner label
// names a process of ours that is gone (killed while its container started),
// and says which through progress. Containers of a live process, of another
// host or user, or without owner labels are left alone.
func removeAbandonedContainers(ctx context.Context, cli *testcontainers.DockerClient, me pgserver.Owner, progress func(string)) {
	ctx, cancel := context.WithTimeout(ctx, containerStopTimeout)
	defer cancel()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", pgserver.OwnerPIDLabel)})
	if err != nil {
		say(progress, fmt.Sprintf("could not look for containers a killed leaserace left: %v", err))
		return
	}
	for _, c := range list.Items {
		o, gone := me.Gone(c.Labels)
		if !gone {
			continue
		}
		_, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case cerrdefs.IsNotFound(err):
			// Someone else removed it meanwhile.
		case err != nil:
			say(progress, fmt.Sprintf("could not remove container %s, left by %s, which is gone: %v", shortID(c.ID), o, err))
		default:
			say(progress, fmt.Sprintf("removed container %s, left by %s, which is gone", shortID(c.ID), o))
		}
	}
}

// Ready says whether Start could run a container without pulling: a Docker
// engine answers (else pgserver.ErrNoDocker) and already holds the image
// (else pgserver.ErrNoImage). Tests ask it before they start one, since they never pull.
func (p ContainerProvider) Ready(ctx context.Context) error {
	cli, err := connectDocker(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	return imagePresent(ctx, cli, p.image())
}

// imagePresent asks the engine whether it already holds image.
func imagePresent(ctx context.Context, cli *testcontainers.DockerClient, image string) error {
	ctx, cancel := context.WithTimeout(ctx, dockerCheckTimeout)
	defer cancel()
	_, err := cli.ImageInspect(ctx, image)
	switch {
	case err == nil:
		return nil
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%w: %s is not there, and pulling is off: pull it (docker pull %s), build one (.ci/run builds local/postgres:15 from Debian's packages) or name a local one with LEASERACE_PG_IMAGE", pgserver.ErrNoImage, image, image)
	default:
		return fmt.Errorf("asking the Docker engine for image %s: %w", image, err)
	}
}

// DockerAvailable reports whether a Docker engine answers, within about two
// seconds. It finds the engine the way testcontainers-go does (DOCKER_HOST,
// the Docker context, the usual sockets).
func DockerAvailable(ctx context.Context) error {
	cli, err := connectDocker(ctx)
	if err == nil {
		cli.Close()
	}
	return err
}

// connectDocker is a client of the Docker engine once it has answered,
// within about two seconds; else an error wrapping pgserver.ErrNoDocker.
// The caller closes it.
func connectDocker(ctx context.Context) (_ *testcontainers.DockerClient, err error) {
	// testcontainers-go panics (MustExtractDockerSocket) when the engine
	// it found does not answer docker info in time, as a busy engine may
	// not: that is an engine not answering, not a bug of ours.
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: the Docker engine did not answer in time (%v)", pgserver.ErrNoDocker, v)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, dockerCheckTimeout)
	defer cancel()
	const advice = "install Docker and start it (docker info must work), or use --pg local / --dsn"
	if host := os.Getenv("DOCKER_HOST"); host != "" {
		// testcontainers would quietly go on to the default socket; whoever
		// named an engine means that one, as the docker command does.
		if err := pingHost(ctx, host); err != nil {
			return nil, fmt.Errorf("%w at DOCKER_HOST=%s: %s: %w", pgserver.ErrNoDocker, host, advice, err)
		}
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", pgserver.ErrNoDocker, advice, err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: %s: %w", pgserver.ErrNoDocker, advice, err)
	}
	return cli, nil
}

// pingHost asks the Docker engine at host (a DOCKER_HOST value) to answer.
func pingHost(ctx context.Context, host string) error {
	cli, err := client.New(client.FromEnv, client.WithHost(host))
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.Ping(ctx, client.PingOptions{})
	return err
}

// say sends one progress line if anyone listens.
func say(progress func(string), line string) {
	if progress != nil {
		progress(line)
	}
}

var _ pgserver.Provider = ContainerProvider{}
