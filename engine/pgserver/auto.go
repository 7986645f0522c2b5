package pgserver

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
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
func ByName(name string, opts Options) (Provider, error) {
	switch name {
	case "", "auto":
		return AutoProvider{Options: opts}, nil
	case "container", "local", "embedded":
		if opts.DSN != "" {
			return nil, fmt.Errorf("a DSN was given, but the %s provider starts its own server: drop the DSN or choose dsn", name)
		}
		switch name {
		case "local":
			return LocalProvider{MaxConnections: opts.MaxConnections}, nil
		case "embedded":
			return opts.embedded(), nil
		}
		return ContainerProvider{Image: opts.Image, MaxConnections: opts.MaxConnections}, nil
	case "dsn":
		return DSNProvider{DSN: opts.DSN}, nil
	}
	return nil, fmt.Errorf("unknown PostgreSQL provider %q: choose auto, container, local, embedded or dsn", name)
}

func (o Options) embedded() EmbeddedProvider {
	return EmbeddedProvider{Mirror: o.Mirror, MaxConnections: o.MaxConnections}
}

// AutoProvider picks a server the way a person would: the one they pointed
// at (a DSN, DATABASE_URL, PGHOST or PGDATABASE), else a container if Docker
// answers, else a local cluster, else the embedded server (downloaded once
// into the user's cache). A provider that fails hands over to the
// next one and says why through progress.
type AutoProvider struct {
	Options Options
}

// Name implements Provider.
func (AutoProvider) Name() string { return "auto" }

// Start implements Provider. The Server's Provider field names the one that
// served, and Took counts the whole search.
func (a AutoProvider) Start(ctx context.Context, progress func(string)) (*Server, error) {
	began := time.Now()
	if a.Options.DSN != "" {
		// A DSN given outright is what the person wants; falling back to
		// another server would hide their mistake.
		return DSNProvider{DSN: a.Options.DSN}.Start(ctx, progress)
	}
	var chain []Provider
	if dsnInEnvironment() {
		chain = append(chain, DSNProvider{})
	}
	chain = append(chain, ContainerProvider{Image: a.Options.Image, MaxConnections: a.Options.MaxConnections}, LocalProvider{MaxConnections: a.Options.MaxConnections}, a.Options.embedded())

	say := func(line string) {
		if progress != nil {
			progress(line)
		}
	}
	var failures []ProviderFailure
	for i, p := range chain {
		say("trying " + p.Name())
		srv, err := p.Start(ctx, progress)
		if err == nil {
			srv.Took = time.Since(began)
			return srv, nil
		}
		failures = append(failures, ProviderFailure{Provider: p.Name(), Err: err})
		if ctx.Err() != nil {
			break // the person gave up: no point trying the rest
		}
		if i+1 < len(chain) {
			say(fmt.Sprintf("%s did not work (%s); trying %s", p.Name(), firstLine(err), chain[i+1].Name()))
		}
	}
	return nil, &NoServerError{Failures: failures}
}

// ProviderFailure is one provider's failure in an auto start.
type ProviderFailure struct {
	Provider string
	Err      error
}

// NoServerError is an auto start that found no server: every provider it
// tried, and why each failed.
type NoServerError struct {
	Failures []ProviderFailure
}

func (e *NoServerError) Error() string {
	var b strings.Builder
	b.WriteString("no PostgreSQL server could be started or reached. " +
		"Any one of these fixes it: pass --dsn postgres://user:password@host/dbname for a server you have; " +
		"install Docker and start it; install PostgreSQL (Debian: apt-get install postgresql); " +
		"or let leaserace download PostgreSQL once (--pg embedded; --pg-mirror URL names a Maven repository on a closed network).")
	for _, f := range e.Failures {
		b.WriteString("\n" + f.Provider + ": " + f.Err.Error())
	}
	return b.String()
}

// Unwrap gives the providers' own errors.
func (e *NoServerError) Unwrap() []error {
	out := make([]error, len(e.Failures))
	for i, f := range e.Failures {
		out[i] = f.Err
	}
	return out
}

// Reason is the failures in one line for a banner: each provider and in
// a few words why it failed.
func (e *NoServerError) Reason() string {
	parts := make([]string, len(e.Failures))
	for i, f := range e.Failures {
		parts[i] = f.Provider + ": " + shortReason(f.Err)
	}
	return strings.Join(parts, "; ")
}

// shortReason is a provider's failure in a few words: the first clause of
// its message, which names what was missing.
func shortReason(err error) string {
	first, _, _ := strings.Cut(firstLine(err), ": ")
	return first
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
