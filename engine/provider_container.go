package engine

import (
	"context"

	"github.com/leaserace/leaserace/engine/internal/pgserver"
)

// ContainerProvider runs PostgreSQL in a Docker container through
// testcontainers-go; Close removes the container. Its Image field chooses
// the image, else LEASERACE_PG_IMAGE, else DefaultPGImage.
type ContainerProvider = pgserver.ContainerProvider

// DefaultPGImage is the image the container provider runs unless told
// otherwise.
const DefaultPGImage = pgserver.DefaultPGImage

// DockerAvailable reports, within about two seconds, whether a Docker engine
// answers.
func DockerAvailable(ctx context.Context) error { return pgserver.DockerAvailable(ctx) }
