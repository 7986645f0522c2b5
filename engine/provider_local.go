package engine

import "github.com/leaserace/leaserace/engine/internal/pgserver"

// LocalProvider runs a throwaway PostgreSQL cluster from the server binaries
// installed on this machine, listening only on a Unix socket in a temporary
// directory that Close deletes. Its Dir field chooses where that directory
// is made.
type LocalProvider = pgserver.LocalProvider

// ErrNoServerBinaries means this machine has no PostgreSQL server installed.
var ErrNoServerBinaries = pgserver.ErrNoServerBinaries
