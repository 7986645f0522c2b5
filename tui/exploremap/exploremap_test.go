package exploremap

import (
	"io"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/leaserace/leaserace/engine/sweep"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/styles"
	"github.com/muesli/termenv"
)

// smallSweep is a small sweep of arrival 1060..1065: blind/off conflicts from
// 1062 on, blind/strict refuses a valid write at 1060, the rest is safe.
func smallSweep() sweep.Result {
	v := sweep.Vary{Name: "arrival", From: 1060, To: 1065}
	res := sweep.Result{Scenario: "renewal-race", Vary: []sweep.Vary{v}}
	for _, k := range scenario.AllKnobs() {
		for t := v.From; t <= v.To; t++ {
			c := sweep.Cell{Renewal: k.Renewal, Fencing: k.Fencing, Values: map[string]int64{v.Name: t}, Effects: 1, Verdict: scenario.VerdictSafe}
			switch {
			case k.Renewal == scenario.RenewalBlind && k.Fencing == scenario.FencingOff && t >= 1062:
				c.Effects, c.Verdict = 2, scenario.VerdictConflict
			case k.Renewal == scenario.RenewalBlind && k.Fencing == scenario.FencingStrict && t == 1060:
				c.Verdict = scenario.VerdictBlocked
			}
			res.Cells = append(res.Cells, c)
		}
	}
	return res
}

func TestWriteSaysWhereEachSettingGoesWrong(t *testing.T) {
	var b strings.Builder
	if err := Write(&b, smallSweep(), Options{Width: 80}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour codes without colour:\n%s", out)
	}
	for _, want := range []string{
		"renewal-race: arrival 1060..1065 under each knob setting",
		"conflict at arrival 1062..1065 (4 of 6)",
		"blocked at arrival 1060 (1 of 6)",
		"✗2", "⊘1", "✓1",
		"✓n  safe", "✗n  conflict", "⊘n  blocked",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the map lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "safe everywhere"); n != 4 {
		t.Errorf("%d settings safe everywhere, want 4:\n%s", n, out)
	}
}

// The overlay marks the run on screen and the cursor apart, so both show
// without colour, and says what the cursor's cell is.
func TestOverlayMarksTheRunOnScreenAndTheCursor(t *testing.T) {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	st := styles.New(r)
	res := smallSweep()
	sc := &scenario.Scenario{Name: res.Scenario}
	g, err := NewGrid(sc, res)
	if err != nil {
		t.Fatal(err)
	}
	blindOff := scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff}
	times := map[string]int64{"arrival": 1063}
	e := Explorer{Open: true, Grid: g}
	row, col := e.Current(blindOff, times)
	if g.Rows[row] != blindOff || g.Values[col] != 1063 {
		t.Fatalf("the run on screen is at %s %d", g.Rows[row], g.Values[col])
	}
	e.Row, e.Col = row, col+1
	out := strings.Join(e.Lines(&st, 100, blindOff, times, 1075), "\n")
	for _, want := range []string{"Map of renewal-race", "▶ blind/off", "▼ arrival=1063 on screen", "<✗2>[✗2]", "[blind/off, arrival=1064] ✗ conflict, 2 effects"} {
		if !strings.Contains(out, want) {
			t.Errorf("the overlay lacks %q:\n%s", want, out)
		}
	}
	// The fence is the fence here too: one word for one value.
	flat := strings.Join(strings.Fields(out), " ")
	if !strings.Contains(flat, "a write with an older fence was accepted after one with a newer fence") || strings.Contains(flat, "epoch") {
		t.Errorf("the conflict cell should say so in fences, not epochs:\n%s", out)
	}
	if !g.Of(sc, res.Vary[0]) || g.Of(&scenario.Scenario{Name: "control"}, res.Vary[0]) {
		t.Error("the grid does not know which sweep it is")
	}
}
