package engine

import (
	"context"

	"github.com/leaserace/leaserace/engine/internal/pgserver"
)

// Provider starts (or finds) a PostgreSQL server for leaserace to use.
type Provider interface {
	// Name is the word used on the command line: container, local or dsn.
	Name() string
	// Start brings a server up. progress, if not nil, receives short lines
	// ("initdb", "starting postgres") while it works. The caller must Close
	// the returned Server, also on error paths and signals.
	Start(ctx context.Context, progress func(string)) (*Server, error)
}

// Server is a running PostgreSQL server and how to reach it: its Provider,
// DSN, how long Start Took, the server's Version, and the ID of what was
// started. Close stops it if leaserace started it; Redacted is the DSN safe
// to print. The providers live in engine/internal/pgserver so that
// engine/pgtest can use them without importing engine.
type Server = pgserver.Server

// RedactDSN hides the password in a URL or key=value connection string.
func RedactDSN(dsn string) string { return pgserver.RedactDSN(dsn) }

// The providers ProviderByName hands out.
var (
	_ Provider = LocalProvider{}
	_ Provider = ContainerProvider{}
	_ Provider = DSNProvider{}
	_ Provider = AutoProvider{}
)
