// Package choose gives the PostgreSQL provider a person asks for: by its
// name on the command line, or the first that works (auto).
package choose

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/pgserver/pgcontainer"
)

// Options are the settings a person can give for any provider.
type Options struct {
	// DSN is a connection string for the dsn provider.
	DSN string
	// Image is the PostgreSQL image for the container provider.
	Image string
	// MaxConnections is the max_connections of a server leaserace starts
	// (0: PostgreSQL's default).
	MaxConnections int
	// Mirror is the Maven repository the embedded provider downloads from
	// (empty: the library's default).
	Mirror string
}

// ByName returns the provider a person asked for by name.
func ByName(name string, opts Options) (pgserver.Provider, error) {
	switch name {
	case "", "auto":
		return Auto{Options: opts}, nil
	case "container", "local", "embedded":
		if opts.DSN != "" {
			return nil, fmt.Errorf("a DSN was given, but the %s provider starts its own server: drop the DSN or choose dsn", name)
		}
		switch name {
		case "local":
			return pgserver.LocalProvider{MaxConnections: opts.MaxConnections}, nil
		case "embedded":
			return opts.embedded(), nil
		}
		return pgcontainer.ContainerProvider{Image: opts.Image, MaxConnections: opts.MaxConnections}, nil
	case "dsn":
		return pgserver.DSNProvider{DSN: opts.DSN}, nil
	}
	return nil, fmt.Errorf("unknown PostgreSQL provider %q: choose auto, container, local, embedded or dsn", name)
}

func (o Options) embedded() pgserver.EmbeddedProvider {
	return pgserver.EmbeddedProvider{Mirror: o.Mirror, MaxConnections: o.MaxConnections}
}

// Auto picks a server the way a person would: the one they pointed
// at (a DSN, DATABASE_URL, PGHOST or PGDATABASE), else a container if Docker
// answers, else a local cluster, else the embedded server (downloaded once
// into the user's cache). A provider that fails hands over to the
// next one and says why through progress.
type Auto struct {
	Options Options
}

// Name implements pgserver.Provider.
func (Auto) Name() string { return "auto" }

// Start implements pgserver.Provider. The Server's Provider field names the one that
// served, and Took counts the whole search.
func (a Auto) Start(ctx context.Context, progress func(string)) (*pgserver.Server, error) {
	began := time.Now()
	if a.Options.DSN != "" {
		// A DSN given outright is what the person wants; falling back to
		// another server would hide their mistake.
		return pgserver.DSNProvider{DSN: a.Options.DSN}.Start(ctx, progress)
	}
	var chain []pgserver.Provider
	if dsnInEnvironment() {
		chain = append(chain, pgserver.DSNProvider{})
	}
	chain = append(chain, pgcontainer.ContainerProvider{Image: a.Options.Image, MaxConnections: a.Options.MaxConnections}, pgserver.LocalProvider{MaxConnections: a.Options.MaxConnections}, a.Options.embedded())

	say := func(line string) {
		if progress != nil {
			progress(line)
		}
	}
	var failures []pgserver.ProviderFailure
	for i, p := range chain {
		say("trying " + p.Name())
		srv, err := p.Start(ctx, progress)
		if err == nil {
			srv.Took = time.Since(began)
			return srv, nil
		}
		failures = append(failures, pgserver.ProviderFailure{Provider: p.Name(), Err: err})
		if ctx.Err() != nil {
			break // the person gave up: no point trying the rest
		}
		if i+1 < len(chain) {
			say(fmt.Sprintf("%s did not work (%s); trying %s", p.Name(), firstLine(err), chain[i+1].Name()))
		}
	}
	return nil, &pgserver.NoServerError{Failures: failures}
}

// dsnInEnvironment tells whether the environment names a server, the way
// psql users point at one.
func dsnInEnvironment() bool {
	for _, v := range []string{"DATABASE_URL", "PGHOST", "PGDATABASE"} {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

var _ pgserver.Provider = Auto{}
