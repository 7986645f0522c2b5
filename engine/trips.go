package engine

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// trips counts what a Host sends to PostgreSQL on its own connections:
// round trips (a query, a batch or a prepare each) with the statements in
// them. It sits in pgx's tracer hooks, so it counts what went out, not what
// the engine meant to send; the resource counts the requests it takes. A step back is tested against it to cost the same
// whatever the position.
type trips struct {
	rounds, statements atomic.Int64
}

var (
	_ pgx.QueryTracer   = (*trips)(nil)
	_ pgx.BatchTracer   = (*trips)(nil)
	_ pgx.PrepareTracer = (*trips)(nil)
)

func (c *trips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.rounds.Add(1)
	c.statements.Add(1)
	return ctx
}

func (c *trips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *trips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	c.rounds.Add(1)
	c.statements.Add(int64(d.Batch.Len()))
	return ctx
}

func (c *trips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *trips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func (c *trips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	c.rounds.Add(1)
	return ctx
}

func (c *trips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// Trips is what a Host sent so far.
type Trips struct {
	// Rounds are round trips to PostgreSQL on the host's connections,
	// carrying Statements; Requests are requests to its resource.
	Rounds, Statements, Requests int64
}

// Trips reads what the host sent so far.
func (h *Host) Trips() Trips {
	t := Trips{Rounds: h.trips.rounds.Load(), Statements: h.trips.statements.Load()}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.svc != nil {
		t.Requests = h.svc.Requests()
	}
	return t
}
