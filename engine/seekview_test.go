package engine_test

import (
	"testing"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/scenario"
)

// TestSeekViewComesBackToTheView: a view left at an event, at the start
// and with the cursor ticked past an event each comes back whole after the
// run went elsewhere.
func TestSeekViewComesBackToTheView(t *testing.T) {
	t.Parallel()
	ctx := enginetest.Ctx(t)
	r, err := engine.ShippedReplay("renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	if err != nil {
		t.Fatal(err)
	}
	at := func(name string, move func() error) {
		t.Helper()
		if err := move(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := r.View()
		if err := r.SeekTime(ctx, r.End()); err != nil {
			t.Fatal(err)
		}
		if err := r.SeekView(ctx, want.Pos, want.Now); err != nil {
			t.Fatalf("%s: SeekView: %v", name, err)
		}
		if got := r.View(); got.Pos != want.Pos || got.Now != want.Now {
			t.Errorf("%s: back at %d events t=%d, want %d events t=%d", name, got.Pos, got.Now, want.Pos, want.Now)
		}
	}
	at("the start", func() error { return r.Seek(ctx, 0) })
	at("event 3", func() error { return r.Seek(ctx, 3) })
	at("ticked past event 3", func() error { return r.SeekTime(ctx, r.Log()[2].T+1) })
}
