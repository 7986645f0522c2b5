package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
)

// BenchmarkReplayWhole is what a step back costs: reset, then replay all of
// renewal-race (every statement and resource call) on the server.
func BenchmarkReplayWhole(b *testing.B) {
	r := enginetest.Open(b, pgtest.DSN(b), "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if err := r.Seek(ctx, 0); err != nil {
			b.Fatal(err)
		}
		if err := r.PlayAll(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepVsRaw compares one engine step (A's heartbeat under
// compare-and-renew: the renewal plus the read-back) with the same two
// statements sent raw through pgx as one batch on a session of its own.
// x-raw is their ratio; the goal is at most 1.5.
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
	var stepNs, rawNs time.Duration
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		if err := r.Seek(ctx, deliver); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		if _, err := r.Next(ctx); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		batch := &pgx.Batch{}
		batch.Queue(st.SQL, st.Args...)
		batch.Queue(read, st.Args[0])
		if err := raw.SendBatch(ctx, batch).Close(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		stepNs += t1.Sub(t0)
		rawNs += t2.Sub(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(stepNs.Nanoseconds())/n, "step-ns")
	b.ReportMetric(float64(rawNs.Nanoseconds())/n, "raw-ns")
	b.ReportMetric(float64(stepNs)/float64(rawNs), "x-raw")
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

// BenchmarkOrders is explore --orders on renewal-race: every order of its
// moves under all six settings, on one host (goal: under 5 s). restore puts
// a state back into the server with SQL, as the search does; replay, for
// comparison, replays the state's path from the start instead.
func BenchmarkOrders(b *testing.B) {
	dsn := pgtest.DSN(b)
	sc, _ := scenario.Builtin("renewal-race")
	ctx := context.Background()
	h, err := engine.OpenHost(ctx, engine.HostConfig{DSN: dsn})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := h.Close(ctx); err != nil {
			b.Error(err)
		}
	}()
	for _, way := range []string{"restore", "replay"} {
		b.Run(way, func(b *testing.B) {
			states, restores := 0, 0
			var took time.Duration
			for b.Loop() {
				o := engine.NewOrders(engine.OrdersConfig{Host: h})
				if way == "replay" {
					engine.ReplayOrders(o)
				}
				t0 := time.Now()
				rs, err := o.SearchAll(ctx, sc, nil)
				took += time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range rs {
					states += r.States
					restores += r.Restores
				}
			}
			b.ReportMetric(float64(states)/took.Seconds(), "states/s")
			b.ReportMetric(float64(states)/float64(b.N), "states")
			b.ReportMetric(float64(restores)/float64(b.N), "restores")
		})
	}
}
