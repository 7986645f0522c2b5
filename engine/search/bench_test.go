package search_test

import (
	"context"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/search"
	"github.com/leaserace/leaserace/scenario"
)

// BenchmarkSearch is explore --orders on renewal-race: every order of its
// moves under all six settings, on one host (goal: under 5 s). restore puts
// a state back into the server with SQL, as the search does; replay, for
// comparison, replays the state's path from the start instead.
func BenchmarkSearch(b *testing.B) {
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
				o := search.New(search.Config{Host: h})
				if way == "replay" {
					search.ReplayStates(o)
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
