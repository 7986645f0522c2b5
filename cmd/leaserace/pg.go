package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/spf13/pflag"
)

// cleanupTimeout bounds tearing down what a command started. Terminating a
// container is the slowest part; a local cluster stops in well under a second.
const cleanupTimeout = 30 * time.Second

// pgFlags are the flags that choose where PostgreSQL comes from.
type pgFlags struct {
	pg    string
	dsn   string
	image string
	// maxConns, when set by a command, is max_connections for a server
	// leaserace starts (serve sizes it to the room).
	maxConns int
}

func (p *pgFlags) register(fs *pflag.FlagSet, getenv func(string) string) {
	fs.StringVar(&p.pg, "pg", "auto", "where PostgreSQL comes from: auto, container, local or dsn")
	fs.StringVar(&p.dsn, "dsn", "", "connection string for --pg dsn (else DATABASE_URL or the PG* variables)")
	fs.StringVar(&p.image, "pg-image", getenv("LEASERACE_PG_IMAGE"), "container image for --pg container (env LEASERACE_PG_IMAGE)")
}

// provider checks the flags and builds the provider without starting it.
func (p *pgFlags) provider(a *app) (pgserver.Provider, error) {
	switch p.pg {
	case "auto", "container", "local", "dsn":
	default:
		return nil, usageErr("--pg %q: want auto, container, local or dsn", p.pg)
	}
	if p.dsn != "" && p.pg != "dsn" && p.pg != "auto" {
		return nil, usageErr("--dsn is used only with --pg dsn or --pg auto, not with --pg %s", p.pg)
	}
	a.addSecretsFromDSN(p.dsn)
	prov, err := pgserver.ByName(p.pg, pgserver.Options{DSN: p.dsn, Image: p.image, MaxConnections: p.maxConns})
	if err != nil {
		return nil, usageErr("--pg %s: %w", p.pg, err)
	}
	return prov, nil
}

// startPG checks the --pg flags and starts the server they name; the caller
// must closeServer the result on every path.
func (a *app) startPG(ctx context.Context, p *pgFlags) (*pgserver.Server, error) {
	prov, err := p.provider(a)
	if err != nil {
		return nil, err
	}
	return a.startServer(ctx, prov)
}

// startServer starts PostgreSQL with progress on standard error. The caller
// must closeServer the result on every path.
func (a *app) startServer(ctx context.Context, prov pgserver.Provider) (*pgserver.Server, error) {
	a.infof("starting PostgreSQL (--pg %s)…", prov.Name())
	srv, err := prov.Start(ctx, func(line string) { a.infof("  %s", line) })
	if err != nil {
		// Start may hand back a half-started server; stop it too.
		a.closeServer(srv)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, withCode(exitNoServer, fmt.Errorf("no PostgreSQL server could start: %w", err))
	}
	a.addSecretsFromDSN(srv.DSN)
	line := fmt.Sprintf("PostgreSQL via %s in %s", srv.Provider, roundDuration(srv.Took))
	if srv.Version != "" {
		line += ", server " + srv.Version
	}
	a.infof("%s", line)
	return srv, nil
}

// roundDuration keeps a start-up time readable: 612ms, 2.35s.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}

// closeServer stops a server leaserace started, with a fresh bounded
// context: the command's own context may already be cancelled by Ctrl-C.
func (a *app) closeServer(srv *pgserver.Server) {
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := srv.Close(ctx); err != nil {
		a.warnf("could not stop PostgreSQL (%s) cleanly: %v", srv.Provider, err)
	}
}

// closeRun drops the run's schemas and stops its resource, and says what
// stays behind if that fails. When the server itself is gone, a throwaway
// one leaves nothing (closeServer removes it with its data), so that is not
// worth a warning; a server given by DSN keeps the schemas until someone
// drops them, so the warning says so.
func (a *app) closeRun(run *engine.Run, srv *pgserver.Server) {
	ctx, cancel := cleanupContext()
	defer cancel()
	err := run.Close(ctx)
	switch {
	case err == nil:
	case engine.IsServerGone(err) && srv.Provider != "dsn":
	case engine.IsServerGone(err):
		a.warnf("PostgreSQL cannot be reached, so the run's schemas stay on it; drop them once it is back (%v)", err)
	default:
		a.warnf("could not clean up the run: %v", err)
	}
}

// cleanupContext is a fresh context for closing things after the command's
// own context has ended.
func cleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), cleanupTimeout)
}

// interrupted reports whether err is only the command's context ending.
func interrupted(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ctx.Err()))
}
