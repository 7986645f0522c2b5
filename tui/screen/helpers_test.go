package screen

import (
	"testing"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/tuitest"
)

// The screens are drawn from recorded runs where the shipped transcripts
// have them, with no database; the play screens of a scenario file need a
// live run, on the test server.
func TestMain(m *testing.M) { pgtest.Main(m) }

func blindOff() scenario.Knobs { return enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff) }

// shipped is the shipped recording of a built-in scenario under k, at
// its start.
func shipped(t testing.TB, name string, k scenario.Knobs) *engine.Run {
	t.Helper()
	rp, err := engine.ShippedReplay(name, k)
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

// next runs n more steps of r.
func next(t testing.TB, r *engine.Run, n int) {
	t.Helper()
	for range n {
		if _, err := r.Next(enginetest.Ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
}

// showing is a screen on ASCII with r's state on it, as the TUI shows a
// live run after stepping to it.
func showing(r *engine.Run) Screen {
	s := New(tuitest.ASCIIRenderer())
	s.Snap, s.Phase = SnapshotOf(r), PhaseReady
	return s
}
