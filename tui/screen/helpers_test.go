package screen

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
	"github.com/muesli/termenv"
)

// The screens are drawn from recorded runs where the shipped transcripts
// have them, with no database; the play screens of a scenario file need a
// live run, on the test server.
func TestMain(m *testing.M) { pgtest.Main(m) }

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// asciiRenderer is a renderer with an explicit ASCII profile and a fixed
// background, so screens are the same on every machine without touching
// lipgloss's global renderer.
func asciiRenderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	r.SetHasDarkBackground(true)
	return r
}

func knobs(r scenario.Renewal, f scenario.Fencing) scenario.Knobs {
	return scenario.Knobs{Renewal: r, Fencing: f}
}

func blindOff() scenario.Knobs { return knobs(scenario.RenewalBlind, scenario.FencingOff) }

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
		if _, err := r.Next(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
}

// showing is a screen on ASCII with r's state on it, as the TUI shows a
// live run after stepping to it.
func showing(r *engine.Run) Screen {
	s := New(asciiRenderer())
	s.Snap, s.Phase = SnapshotOf(r), PhaseReady
	return s
}

// checkFrame fails unless the frame fits w×h exactly or less.
func checkFrame(t *testing.T, what string, f string, w, h int) {
	t.Helper()
	if f == "" {
		return
	}
	lines := strings.Split(f, "\n")
	if len(lines) > h {
		t.Fatalf("%s at %d×%d: %d lines", what, w, h, len(lines))
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw > w {
			t.Fatalf("%s at %d×%d: line %d is %d wide: %q", what, w, h, i, lw, l)
		}
	}
}
