package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/assets"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
)

// BenchmarkReplayWhole is what a step back from the end of renewal-race and
// the step forward again cost. A step back restores the state after the
// last-but-one step (the coordinator's row and the resource, at once); it
// used to reset and replay every move. x-raw is its time over the whole
// replay's statements sent raw, in the same iteration on the same run: one
// pgx batch per step on plain sessions, and for each resource write the
// resource's own statements in its own two round trips. x-raw-restore is
// its time over the restore's own statements sent raw (the row's, the
// resource's) and the last step's.
func BenchmarkReplayWhole(b *testing.B) {
	dsn := pgtest.DSN(b)
	r := enginetest.Open(b, dsn, "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	ctx := context.Background()
	if err := r.PlayAll(ctx); err != nil {
		b.Fatal(err)
	}
	raw := newRawReplay(b, dsn, r)
	var replayNs, rawNs, restoreNs time.Duration
	// A step back from the end and the step forward again: the reset and
	// every move of the log, as the TUI makes them.
	last := r.Len() - 1
	replay := func() {
		t0 := time.Now()
		if err := r.Seek(ctx, last); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Next(ctx); err != nil {
			b.Fatal(err)
		}
		replayNs += time.Since(t0)
	}
	sendRaw := func() {
		t0 := time.Now()
		raw.play(ctx, b)
		rawNs += time.Since(t0)
		// What the engine's step back sends: the state after the
		// last-but-one step put back, then the last step.
		t0 = time.Now()
		raw.send(ctx, b, raw.restore)
		restoreNs += time.Since(t0)
	}
	i := 0
	b.ResetTimer()
	for b.Loop() {
		// Each starts with a reset, so either may go first; they take
		// turns, so neither always follows the other's last request.
		if i%2 == 0 {
			replay()
			sendRaw()
		} else {
			sendRaw()
			replay()
		}
		i++
	}
	n := float64(b.N)
	b.ReportMetric(float64(replayNs.Nanoseconds())/n, "replay-ns")
	b.ReportMetric(float64(rawNs.Nanoseconds())/n, "raw-ns")
	b.ReportMetric(float64(replayNs)/float64(rawNs), "x-raw")
	b.ReportMetric(float64(restoreNs.Nanoseconds())/n, "raw-restore-ns")
	b.ReportMetric(float64(replayNs)/float64(restoreNs), "x-raw-restore")
}

// rawReplay is a replay's statements, one batch per round trip the engine
// and the resource make, sent on plain sessions pointed at the run's
// schemas: the coordinator's and the resource's.
type rawReplay struct {
	coord, res *pgx.Conn
	// batches are in order, each on its session.
	batches []rawBatch
	// restore is a step back from the end and the last step again: the
	// coordinator's row and the resource put back as the last-but-one
	// step left them, then the last step's batches.
	restore []rawBatch
}

type rawBatch struct {
	res   bool
	stmts []rawStmt
}

type rawStmt struct {
	sql  string
	args []any
}

func newRawReplay(b *testing.B, dsn string, r *engine.Run) *rawReplay {
	b.Helper()
	ctx := context.Background()
	sq := map[string]string{}
	for _, name := range []string{"coordinator_clear", "coordinator_seed", "coordinator_read",
		"resource_reset", "resource_clear", "resource_rewind", "resource_begin", "resource_lock", "resource_record", "resource_commit"} {
		q, err := assets.SQL(name)
		if err != nil {
			b.Fatal(err)
		}
		sq[name] = q
	}
	connect := func(schema string) *pgx.Conn {
		cc, err := pgx.ParseConfig(dsn)
		if err != nil {
			b.Fatal(err)
		}
		cc.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
		c, err := pgx.ConnectConfig(ctx, cc)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close(context.Background()) })
		return c
	}
	rr := &rawReplay{coord: connect(r.Schema()), res: connect(engine.ResourceSchema(r))}
	tr, err := r.Transcript()
	if err != nil {
		b.Fatal(err)
	}
	sc, err := scenario.Builtin(tr.Scenario)
	if err != nil {
		b.Fatal(err)
	}
	// The reset: the coordinator's rows, then the resource's state.
	reset := rawBatch{stmts: []rawStmt{{sql: sq["coordinator_clear"]}}}
	if in := sc.Initial; in != nil {
		reset.stmts = append(reset.stmts, rawStmt{sq["coordinator_seed"], []any{sc.Lease, in.Owner, in.Fence, in.LeaseVersion, in.ExpiresAt}})
	}
	value := sc.Resource.Value
	if len(value) == 0 {
		value = json.RawMessage("null")
	}
	rr.batches = append(rr.batches, reset, rawBatch{res: true, stmts: []rawStmt{
		{sq["resource_reset"], []any{sc.Resource.Fence, value}}, {sql: sq["resource_clear"]},
	}})
	last := 0
	for i, st := range tr.Steps {
		if i == len(tr.Steps)-1 {
			prev := tr.Steps[i-1]
			seed := rawBatch{stmts: []rawStmt{{sql: sq["coordinator_clear"]}}}
			if c := prev.Coordinator; c != nil {
				seed.stmts = append(seed.stmts, rawStmt{sq["coordinator_seed"], []any{sc.Lease, c.Owner, c.Fence, c.LeaseVersion, c.ExpiresAt}})
			}
			rr.restore = []rawBatch{seed, {res: true, stmts: []rawStmt{
				{sq["resource_reset"], []any{prev.Resource.Fence, prev.Resource.Value}},
				{sq["resource_rewind"], []any{len(prev.Resource.Effects)}},
			}}}
		}
		last = len(rr.batches)
		switch {
		case st.Call != nil:
			// A write: BEGIN, the lock and the fencing statement, then the
			// effect and COMMIT, as the resource sends them.
			effects := st.Resource.Effects
			e := effects[len(effects)-1]
			rr.batches = append(rr.batches,
				rawBatch{res: true, stmts: []rawStmt{{sql: sq["resource_begin"]}, {sql: sq["resource_lock"]}, {st.SQL, st.Args}}},
				rawBatch{res: true, stmts: []rawStmt{
					{sq["resource_record"], []any{st.Actor, e.Fence, st.Args[1], st.Call.Accepted, st.Call.Reason, e.StoredFence}},
					{sql: sq["resource_commit"]},
				}})
		case st.SQL == sq["coordinator_read"]:
			rr.batches = append(rr.batches, rawBatch{stmts: []rawStmt{{st.SQL, st.Args}}})
		case st.SQL != "":
			rr.batches = append(rr.batches, rawBatch{stmts: []rawStmt{{st.SQL, st.Args}, {sq["coordinator_read"], []any{sc.Lease}}}})
		}
	}
	rr.restore = append(rr.restore, rr.batches[last:]...)
	return rr
}

// play sends every batch in order and reads every result.
func (rr *rawReplay) play(ctx context.Context, b *testing.B) { rr.send(ctx, b, rr.batches) }

// send sends batches in order and reads every result.
func (rr *rawReplay) send(ctx context.Context, b *testing.B, batches []rawBatch) {
	for _, rb := range batches {
		c := rr.coord
		if rb.res {
			c = rr.res
		}
		pb := &pgx.Batch{}
		for _, s := range rb.stmts {
			pb.Queue(s.sql, s.args...)
		}
		if err := c.SendBatch(ctx, pb).Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepVsRaw compares one engine step (A's heartbeat under
// compare-and-renew: the renewal plus the read-back) with the same two
// statements sent raw through pgx as one batch on a session of its own.
// x-raw is their ratio; the goal is at most 1.5. x-bind is what the bind
// statement a pooled batch starts with costs: the raw batch with it in
// front, over the raw batch.
func BenchmarkStepVsRaw(b *testing.B) {
	dsn := pgtest.DSN(b)
	r := enginetest.Open(b, dsn, "renewal-race", enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff))
	ctx := context.Background()
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	cc.RuntimeParams["search_path"] = r.Schema()
	raw, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close(ctx)
	const deliver = 4 // A's heartbeat is the fifth event
	if err := r.Seek(ctx, deliver); err != nil {
		b.Fatal(err)
	}
	st, err := r.Next(ctx)
	if err != nil || st.Action != scenario.ActionDeliver {
		b.Fatalf("fifth event: %+v %v", st, err)
	}
	read := "SELECT owner, fence, lease_version, expires_at\nFROM leases\nWHERE name = $1"
	bind, err := assets.SQL("coordinator_bind")
	if err != nil {
		b.Fatal(err)
	}
	path := pgx.Identifier{r.Schema()}.Sanitize()
	var stepNs, rawNs, boundNs time.Duration
	legs := []func(){
		func() {
			t0 := time.Now()
			if _, err := r.Next(ctx); err != nil {
				b.Fatal(err)
			}
			stepNs += time.Since(t0)
		},
		func() {
			batch := &pgx.Batch{}
			batch.Queue(st.SQL, st.Args...)
			batch.Queue(read, st.Args[0])
			t0 := time.Now()
			if err := raw.SendBatch(ctx, batch).Close(); err != nil {
				b.Fatal(err)
			}
			rawNs += time.Since(t0)
		},
		func() {
			batch := &pgx.Batch{}
			batch.Queue(bind, path, "leaserace A "+r.Schema())
			batch.Queue(st.SQL, st.Args...)
			batch.Queue(read, st.Args[0])
			t0 := time.Now()
			if err := raw.SendBatch(ctx, batch).Close(); err != nil {
				b.Fatal(err)
			}
			boundNs += time.Since(t0)
		},
	}
	i := 0
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		if err := r.Seek(ctx, deliver); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		// Each leg goes first in turn: whichever follows the reset's
		// resource call pays for what that left running.
		for j := range legs {
			legs[(i+j)%len(legs)]()
		}
		i++
	}
	n := float64(b.N)
	b.ReportMetric(float64(stepNs.Nanoseconds())/n, "step-ns")
	b.ReportMetric(float64(rawNs.Nanoseconds())/n, "raw-ns")
	b.ReportMetric(float64(stepNs)/float64(rawNs), "x-raw")
	b.ReportMetric(float64(boundNs)/float64(rawNs), "x-bind")
}

// BenchmarkExploreDefault is the whole default sweep: every arrival time in
// renewal-race's window under all six settings (goal: under 2 s).
func BenchmarkExploreDefault(b *testing.B) {
	dsn := pgtest.DSN(b)
	sc, _ := scenario.Builtin("renewal-race")
	vary, _ := batch.DefaultVary(sc)
	for b.Loop() {
		res, err := batch.Explore(context.Background(), dsn, sc, vary, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Cells) != 76*6 {
			b.Fatalf("%d cells", len(res.Cells))
		}
	}
}
