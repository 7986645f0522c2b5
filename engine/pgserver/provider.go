package pgserver

import "context"

// Provider starts (or finds) a PostgreSQL server for leaserace to use.
type Provider interface {
	// Name is the word used on the command line: auto, container, local, embedded or dsn.
	Name() string
	// Start brings a server up. progress, if not nil, receives short lines
	// ("initdb", "starting postgres") while it works. The caller must Close
	// the returned Server, also on error paths and signals.
	Start(ctx context.Context, progress func(string)) (*Server, error)
}

// The providers of this package.
var (
	_ Provider = LocalProvider{}
	_ Provider = DSNProvider{}
	_ Provider = EmbeddedProvider{}
)
