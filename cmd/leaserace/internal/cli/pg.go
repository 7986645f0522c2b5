package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/pgdsn"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/pgserver/choose"
	"github.com/spf13/pflag"
)

// PGFlags are the flags that choose where PostgreSQL comes from.
type PGFlags struct {
	Kind  string // --pg
	DSN   string
	Image string
	// Mirror is the Maven repository --pg embedded downloads from.
	Mirror string
	// MaxConns, when set by a command, is max_connections for a server
	// leaserace starts (serve sizes it to the room).
	MaxConns int
}

func (p *PGFlags) Register(fs *pflag.FlagSet, getenv func(string) string) {
	fs.StringVar(&p.Kind, "pg", "auto", "where PostgreSQL comes from: auto, container, local, embedded or dsn")
	fs.StringVar(&p.DSN, "dsn", "", "connection string for --pg dsn (else DATABASE_URL or the PG* variables)")
	fs.StringVar(&p.Image, "pg-image", getenv("LEASERACE_PG_IMAGE"), "container image for --pg container (env LEASERACE_PG_IMAGE)")
	fs.StringVar(&p.Mirror, "pg-mirror", getenv("LEASERACE_PG_MIRROR"), "Maven repository URL that --pg embedded (and auto) downloads PostgreSQL from once, for a proxy or a closed network (env LEASERACE_PG_MIRROR)")
}

// Provider checks the flags and builds the provider without starting it.
func (p *PGFlags) Provider(a *App) (pgserver.Provider, error) {
	switch p.Kind {
	case "auto", "container", "local", "embedded", "dsn":
	default:
		return nil, UsageErr("--pg %q: want auto, container, local, embedded or dsn", p.Kind)
	}
	if p.DSN != "" && p.Kind != "dsn" && p.Kind != "auto" {
		return nil, UsageErr("--dsn is used only with --pg dsn or --pg auto, not with --pg %s", p.Kind)
	}
	a.AddSecretsFromDSN(p.DSN)
	if p.Mirror != "" {
		u, err := url.Parse(p.Mirror)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, UsageErr("--pg-mirror (or LEASERACE_PG_MIRROR) %q: want the http:// or https:// URL of a Maven repository", pgdsn.Redact(p.Mirror))
		}
		a.AddSecretsFromDSN(p.Mirror) // a mirror's URL may carry a login
	}
	prov, err := choose.ByName(p.Kind, choose.Options{DSN: p.DSN, Image: p.Image, Mirror: p.Mirror, MaxConnections: p.MaxConns})
	if err != nil {
		return nil, UsageErr("--pg %s: %w", p.Kind, err)
	}
	return prov, nil
}

// StartPG checks the --pg flags and starts the server they name; the caller
// must CloseServer the result on every path.
func (a *App) StartPG(ctx context.Context, p *PGFlags) (*pgserver.Server, error) {
	prov, err := p.Provider(a)
	if err != nil {
		return nil, err
	}
	return a.StartServer(ctx, prov)
}

// StartServer starts PostgreSQL with progress on standard error. The caller
// must CloseServer the result on every path.
func (a *App) StartServer(ctx context.Context, prov pgserver.Provider) (*pgserver.Server, error) {
	a.Infof("starting PostgreSQL (--pg %s)…", prov.Name())
	srv, err := prov.Start(ctx, func(line string) { a.Infof("  %s", line) })
	if err != nil {
		// Start may hand back a half-started server; stop it too.
		a.CloseServer(srv)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, WithCode(ExitNoServer, fmt.Errorf("no PostgreSQL server could start: %w", err))
	}
	a.AddSecretsFromDSN(srv.DSN)
	line := fmt.Sprintf("PostgreSQL via %s in %s", srv.Provider, roundDuration(srv.Took))
	if srv.Version != "" {
		line += ", server " + srv.Version
	}
	a.Infof("%s", line)
	return srv, nil
}

// roundDuration keeps a start-up time readable: 612ms, 2.35s.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}

// CloseServer stops a server leaserace started, with a fresh bounded
// context: the command's own context may already be cancelled by Ctrl-C.
func (a *App) CloseServer(srv *pgserver.Server) {
	if srv == nil {
		return
	}
	ctx, cancel := CleanupContext()
	defer cancel()
	if err := srv.Close(ctx); err != nil {
		a.Warnf("could not stop PostgreSQL (%s) cleanly: %v", srv.Provider, err)
	}
}

// CloseRun drops the run's schemas and stops its resource, and says what
// stays behind if that fails. When the server itself is gone, a throwaway
// one leaves nothing (CloseServer removes it with its data), so that is not
// worth a warning; a server given by DSN keeps the schemas until someone
// drops them, so the warning says so.
func (a *App) CloseRun(run *engine.Run, srv *pgserver.Server) {
	ctx, cancel := CleanupContext()
	defer cancel()
	err := run.Close(ctx)
	switch {
	case err == nil:
	case engine.IsServerGone(err) && srv.Provider != "dsn":
	case engine.IsServerGone(err):
		a.Warnf("PostgreSQL cannot be reached, so the run's schemas stay on it; drop them once it is back (%v)", err)
	default:
		a.Warnf("could not clean up the run: %v", err)
	}
}

// CleanupContext is a fresh context for closing things after the command's
// own context has ended.
func CleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), engine.CloseTimeout)
}

// Interrupted reports whether err is only the command's context ending.
func Interrupted(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ctx.Err()))
}
