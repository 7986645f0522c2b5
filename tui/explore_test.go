package tui

import (
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/tuitest"
)

// oneLine is a frame's text with wrapping undone, for phrases that may
// break across lines.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func liveRun(t *testing.T, m Model) *engine.Run {
	t.Helper()
	r := m.Run()
	if !r.Live() {
		t.Fatal("the run is a replay, want a live run")
	}
	return r
}

func TestExploreMapsRenewalRaceAndJumps(t *testing.T) {
	t.Parallel()
	m := at1075(t, blindOff(), 120, 40)
	m = press(t, m, "x")
	if m.Failure != nil {
		t.Fatalf("explore failed: %v", m.Failure)
	}
	if !m.Explore.Open || m.Explore.Grid == nil {
		t.Fatal("x did not open the map")
	}
	g := m.Explore.Grid
	if g.Vary.Name != "arrival" || g.Values[0] != 1060 || g.Values[len(g.Values)-1] != 1135 {
		t.Fatalf("map sweeps %+v over %d..%d, want arrival 1060..1135", g.Vary, g.Values[0], g.Values[len(g.Values)-1])
	}
	for i, k := range g.Rows {
		for j, at := range g.Values {
			c := g.Cells[i][j]
			if c.Verdict == "" {
				t.Fatalf("%s at %d: no verdict", k, at)
			}
			conflict := c.Verdict == scenario.VerdictConflict
			switch {
			case k == blindOff() && conflict != (at >= 1070):
				t.Errorf("blind/off at arrival %d: verdict %s, want conflict exactly from 1070 (B's takeover) on", at, c.Verdict)
			case k.Renewal == scenario.RenewalCompare && conflict:
				t.Errorf("%s at arrival %d: conflict; compare-and-renew never conflicts", k, at)
			}
		}
	}

	row, col := m.Explore.Current(m.Snap.View.Knobs, m.Snap.Scenario.Times)
	if g.Rows[row] != blindOff() || g.Values[col] != 1075 {
		t.Fatalf("highlighted %s at %d, want blind/off at 1075", g.Rows[row], g.Values[col])
	}
	if m.Explore.Row != row || m.Explore.Col != col {
		t.Fatalf("cursor at %d,%d, want the highlighted cell %d,%d", m.Explore.Row, m.Explore.Col, row, col)
	}
	v := m.View()
	tuitest.CheckFrame(t, "map", v, 120, 40)
	for _, want := range []string{"Map of renewal-race", "▶ blind/off", "▼ arrival=1075 on screen", "[✗2]", "enter runs it"} {
		if !strings.Contains(v, want) {
			t.Errorf("map at 120×40 lacks %q:\n%s", want, v)
		}
	}
	small := send(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	v = small.View()
	tuitest.CheckFrame(t, "map", v, 80, 24)
	for _, want := range []string{"▶ blind/off", "▼ arrival=1075", "[✗2]", "Showing", "esc/x close"} {
		if !strings.Contains(v, want) {
			t.Errorf("map at 80×24 lacks %q:\n%s", want, v)
		}
	}

	// One column right is arrival 1076, still blind/off.
	m = press(t, m, "right")
	if c := m.Explore.Grid.Cells[m.Explore.Row][m.Explore.Col]; c.Values["arrival"] != 1076 {
		t.Fatalf("cursor moved to %v, want arrival 1076", c.Values)
	}
	if !strings.Contains(m.View(), "<✗2>[✗2]") {
		t.Errorf("the run on screen and the cursor are not both marked:\n%s", m.View())
	}
	m = press(t, m, "enter")
	if m.Failure != nil || m.Explore.Open {
		t.Fatalf("after enter: err %v, map open %v", m.Failure, m.Explore.Open)
	}
	run := liveRun(t, m)
	if got := run.Scenario().Times["arrival"]; got != 1076 {
		t.Fatalf("run's arrival is %d, want 1076", got)
	}
	if run.Knobs() != blindOff() || m.Snap.View.Now != 1075 {
		t.Fatalf("run at t=%d with %s, want t=1075 with blind/off", m.Snap.View.Now, run.Knobs())
	}
	if v := oneLine(m.View()); !strings.Contains(v, "explore: arrival 1075 → 1076, knobs blind/off · replayed to t=1075") {
		t.Errorf("screen does not say what enter did:\n%s", m.View())
	}
	last := m.Session()[len(m.Session())-1]
	if last.Kind != transcript.PresenterScenario || !slices.Contains(last.Change, "explore: arrival 1075 → 1076, knobs blind/off") {
		t.Errorf("session entry %+v, want a scenario entry saying what the jump changed", last)
	}
	m = press(t, m, "right")
	if st := m.Snap.Last(); st == nil || st.Action != scenario.ActionDeliver || st.T != 1076 {
		t.Fatalf("next step %+v, want the heartbeat delivered at 1076", st)
	}

	// The same scenario's map comes back without a new sweep, on the new
	// arrival; down three rows is compare/off.
	m = press(t, m, "x")
	if !m.Explore.Open || m.Explore.Grid != g {
		t.Fatal("x did not reopen the same map")
	}
	row, col = m.Explore.Current(m.Snap.View.Knobs, m.Snap.Scenario.Times)
	if g.Values[col] != 1076 || m.Explore.Col != col || m.Explore.Row != row {
		t.Fatalf("reopened on %d, cursor %d,%d, want 1076 under the cursor", g.Values[col], m.Explore.Row, m.Explore.Col)
	}
	m = press(t, m, "down", "down", "down", "enter")
	want := enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff)
	if k := liveRun(t, m).Knobs(); k != want || m.Snap.View.Knobs != want {
		t.Fatalf("knobs %s (screen %s), want %s", k, m.Snap.View.Knobs, want)
	}
	if v := oneLine(m.View()); !strings.Contains(v, "knobs blind/off → compare/off") || !strings.Contains(v, "compare-and-renew") {
		t.Errorf("screen does not show the new knobs:\n%s", m.View())
	}

	m = press(t, m, "x")
	if !m.Explore.Open {
		t.Fatal("x did not reopen the map")
	}
	if m = press(t, m, "esc"); m.Explore.Open {
		t.Fatal("esc did not close the map")
	}
	m = press(t, m, "x", "x")
	if m.Explore.Open {
		t.Fatal("x did not close the map")
	}
}

func TestExploreWithoutNamedTimesSaysSo(t *testing.T) {
	t.Parallel()
	m := openModel(t, "revoked-writer", blindOff(), 100, 30)
	m = press(t, m, "x")
	if m.Explore.Open || m.Busy() {
		t.Fatal("x opened a map for a scenario without named times")
	}
	if v := oneLine(m.View()); !strings.Contains(v, "has no named times") {
		t.Errorf("screen does not say why there is no map:\n%s", m.View())
	}
}

func TestExploreNeedsALiveRun(t *testing.T) {
	t.Parallel()
	m := replayModel(t, shippedReplay(t, "renewal-race", blindOff()), "", 100, 30)
	m = press(t, m, "x")
	if m.Explore.Open || m.Busy() {
		t.Fatal("x opened a map on a replay")
	}
	if v := oneLine(m.View()); !strings.Contains(v, "the map needs a live PostgreSQL run") {
		t.Errorf("screen does not say the map needs a live run:\n%s", m.View())
	}
}
