package engine_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
)

// TestMachineRestoresTheServer plays renewal-race up to A's stale
// delivery, then goes back to the state after the expiry. The server still
// holds A's renewed row and B's effect, so B's takeover and B's effect come
// out as they first did only if the machine puts the row and the resource
// back first.
func TestMachineRestoresTheServer(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	h, err := engine.OpenHost(ctx, engine.HostConfig{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	sc, err := scenario.Builtin("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.OpenMachine(ctx, h, sc, enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	log := sc.Log()
	const takeover = 2 // B's takeover, B's effect, then A's delivery
	if log[takeover].Action != scenario.ActionAcquire || log[takeover+1].Action != scenario.ActionEffect || log[takeover+2].Action != scenario.ActionDeliver {
		t.Fatalf("renewal-race's log changed: %s", scenario.FormatMoves(log))
	}
	var afterExpiry world.State
	var first []transcript.Step
	for i, mv := range log[:takeover+3] {
		if i == takeover {
			afterExpiry = m.State()
		}
		st, err := m.Apply(ctx, mv)
		if err != nil {
			t.Fatalf("%s: %v", mv, err)
		}
		first = append(first, st)
	}
	if n := m.Restores(); n != 0 {
		t.Errorf("%d restores while playing the log in order, want 0", n)
	}
	if c := first[takeover+2].Coordinator; c == nil || c.Owner != "A" || c.Fence != 1 {
		t.Fatalf("after A's blind delivery the row is %+v, want A's with fence 1", c)
	}

	m.SetState(afterExpiry)
	for i, mv := range log[takeover : takeover+2] {
		st, err := m.Apply(ctx, mv)
		if err != nil {
			t.Fatalf("%s after going back: %v", mv, err)
		}
		if want := first[takeover+i]; !reflect.DeepEqual(st, want) {
			t.Errorf("%s after going back:\n got %+v\nwant %+v", mv, st, want)
		}
	}
	if n := m.Restores(); n != 2 {
		t.Errorf("%d restores after going back, want 2: the row before B's takeover, the resource before B's effect", n)
	}
}
