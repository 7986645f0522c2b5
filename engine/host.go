package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/leaserace/leaserace/engine/pgdsn"
	"github.com/leaserace/leaserace/engine/resource"
)

// HostConfig says where a Host runs and how many connections it may use.
type HostConfig struct {
	// DSN reaches the PostgreSQL server. It may hold a password.
	DSN string
	// MaxConns bounds the connections its runs share; default 4. The
	// resource service has a pool of the same size.
	MaxConns int32
}

// Host is what runs share: a bounded pool of PostgreSQL connections and
// one resource service whose state is keyed by run. A room of attendees
// shares one Host; a run opened without one makes a small one of its own.
type Host struct {
	dsn  string
	sql  coordinatorSQL
	pool *pgxpool.Pool
	// base is a schema with empty tables that pooled connections point at
	// by default: pgx prepares a batch's statements before the batch's
	// first statement points the connection at its run's schema.
	base string

	mu  sync.Mutex
	svc *resource.Service
	rc  *resource.Client
	hc  *http.Client

	closeOnce sync.Once
	closeErr  error

	trips trips
}

// OpenHost connects to PostgreSQL and starts the resource service. The
// caller must Close it.
func OpenHost(ctx context.Context, cfg HostConfig) (_ *Host, err error) {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 4
	}
	sqls, err := loadCoordinatorSQL()
	if err != nil {
		return nil, err
	}
	h := &Host{dsn: cfg.DSN, sql: sqls}
	if h.base, err = randomSchema("lr_base_"); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("cannot read the connection string: %s", pgdsn.Redact(err.Error()))
	}
	pc.MaxConns = cfg.MaxConns
	pc.ConnConfig.RuntimeParams["application_name"] = "leaserace"
	pc.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{h.base}.Sanitize()
	pc.ConnConfig.Tracer = &h.trips
	if h.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return nil, fmt.Errorf("cannot set up connections to PostgreSQL: %w", err)
	}
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CloseTimeout)
			defer cancel()
			_ = h.Close(cctx)
		}
	}()
	if err := h.createSchema(ctx, h.base, "leaserace setup"); err != nil {
		return nil, err
	}
	h.hc = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: nil, MaxIdleConnsPerHost: int(cfg.MaxConns) * 4, DisableCompression: true,
	}}
	if err := h.startResource(ctx, cfg.MaxConns); err != nil {
		return nil, err
	}
	return h, nil
}

func randomSchema(prefix string) (string, error) {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("cannot make a run id: %w", err)
	}
	return prefix + hex.EncodeToString(b[:]), nil
}

func (h *Host) startResource(ctx context.Context, maxConns int32) error {
	svc, err := resource.Start(ctx, resource.Config{DSN: h.dsn, AppName: "leaserace resource", MaxConns: maxConns})
	if err != nil {
		return fmt.Errorf("cannot start the resource: %w", err)
	}
	h.mu.Lock()
	h.svc, h.rc = svc, resource.NewClient(svc.URL(), h.hc)
	h.mu.Unlock()
	return nil
}

// createSchema makes a schema with the coordinator's table in it.
// Once begun, it runs to its end even when ctx is cancelled, and then
// returns ctx's error: see resource.Detached.
func (h *Host) createSchema(ctx context.Context, schema, who string) error {
	c, err := h.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("cannot connect to PostgreSQL: %w", err)
	}
	defer c.Release()
	dctx, cancel := resource.Detached(ctx)
	defer cancel()
	if _, err := c.Exec(dctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("cannot create the run's schema: %w", err)
	}
	if _, err := c.Exec(dctx, h.sql.bind, h.searchPath(schema), who); err != nil {
		return fmt.Errorf("cannot use the run's schema: %w", err)
	}
	if _, err := c.Exec(dctx, h.sql.schema); err != nil {
		return fmt.Errorf("cannot create the leases table: %w", err)
	}
	return ctx.Err()
}

// dropSchema drops a schema and everything in it.
func (h *Host) dropSchema(ctx context.Context, schema string) error {
	if _, err := h.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("cannot drop the schema %s: %w", schema, err)
	}
	return nil
}

// bound starts a batch on a pooled connection pointed at schema and named
// for who.
func (h *Host) bound(schema, who string) *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(h.sql.bind, h.searchPath(schema), who)
	return b
}

// searchPath is schema, then the base schema. A pooled connection keeps
// the search_path of its last batch, and pgx prepares a batch's new
// statements before the batch's bind runs: once another run closed and
// dropped the schema the connection last pointed at, the base's empty
// tables, alike in every run's schema, still let them prepare. (The server
// parses a statement again when it runs under another search_path.)
func (h *Host) searchPath(schema string) string {
	if schema == h.base {
		return pgx.Identifier{schema}.Sanitize()
	}
	return pgx.Identifier{schema}.Sanitize() + ", " + pgx.Identifier{h.base}.Sanitize()
}

// send sends b and hands its results, after the bind's, to read.
func (h *Host) send(ctx context.Context, b *pgx.Batch, read func(pgx.BatchResults) error) error {
	c, err := h.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	br := c.SendBatch(ctx, b)
	_, err = br.Exec()
	if err == nil && read != nil {
		err = read(br)
	}
	return errors.Join(err, br.Close())
}

// resourceClient is the client of the host's resource service.
func (h *Host) resourceClient() *resource.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rc
}

// ConnsInUse is how many PostgreSQL connections the host holds now: its
// runs' pool and its resource's.
func (h *Host) ConnsInUse() int {
	n := int(h.pool.Stat().TotalConns())
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.svc != nil {
		n += h.svc.Conns()
	}
	return n
}

// MaxConns is the most connections the host may hold at once: its runs'
// and as many again for its resource.
func (h *Host) MaxConns() int {
	return 2 * h.RunConns()
}

// RunConns is how many connections the host's runs share: how many of them
// can talk to PostgreSQL at once.
func (h *Host) RunConns() int {
	return int(h.pool.Config().MaxConns)
}

// restart drops every connection and starts a new resource service: the
// way back after PostgreSQL restarted or the resource died.
func (h *Host) restart(ctx context.Context) error {
	h.pool.Reset()
	h.mu.Lock()
	old := h.svc
	h.svc, h.rc = nil, nil
	h.mu.Unlock()
	if old != nil {
		_ = old.Close(ctx)
	}
	return h.startResource(ctx, h.pool.Config().MaxConns)
}

// Close stops the resource, drops the base schema and closes every
// connection. Later calls return the first call's result.
func (h *Host) Close(ctx context.Context) error {
	h.closeOnce.Do(func() {
		var errs []error
		h.mu.Lock()
		svc := h.svc
		h.svc, h.rc = nil, nil
		h.mu.Unlock()
		if svc != nil {
			errs = append(errs, svc.Close(ctx))
		}
		if h.hc != nil {
			h.hc.CloseIdleConnections()
		}
		if err := h.dropSchema(ctx, h.base); err != nil && !IsServerGone(err) {
			errs = append(errs, err)
		}
		h.pool.Close()
		h.closeErr = errors.Join(errs...)
	})
	return h.closeErr
}
