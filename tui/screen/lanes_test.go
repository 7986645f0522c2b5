package screen

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/lanes"
	"github.com/leaserace/leaserace/tui/screen/timeline"
	"github.com/leaserace/leaserace/tui/text"
)

// TestLanesAtEveryStep draws the lanes at every step of every built-in
// scenario under all six settings, at 80 to 200 columns, roomy and
// compact, and holds them to the model: a lane per actor, each move's
// letter and mark in its own lane in log order (so no mark contradicts its
// move's result, which lanes' tests hold to the steps), every glyph the
// lanes show named in the legend, and every row inside the width.
func TestLanesAtEveryStep(t *testing.T) {
	t.Parallel()
	for _, name := range scenario.BuiltinNames() {
		for _, k := range scenario.AllKnobs() {
			t.Run(name+"/"+k.String(), func(t *testing.T) {
				r, err := engine.ShippedReplay(name, k)
				if err != nil {
					t.Fatal(err)
				}
				for {
					s := showing(r)
					for _, sz := range [][2]int{{80, 24}, {120, 40}} {
						checkFrameLanes(t, s, sz[0], sz[1])
					}
					for _, w := range []int{80, 100, 120, 200} {
						for _, v := range [][2]bool{{true, true}, {false, false}, {true, false}} {
							checkLanes(t, s, w, v[0], v[1])
						}
					}
					if len(r.Steps()) >= len(r.Log()) {
						return
					}
					if _, err := r.Next(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

func checkLanes(t *testing.T, s Screen, w int, full, roomy bool) {
	t.Helper()
	b := s.lanesBlock(w, full, roomy)
	d := b.D
	at := fmt.Sprintf("t=%d pos %d, %d columns (full %v, roomy %v)", d.Now, d.Pos, w, full, roomy)
	for _, l := range append(append(slices.Clone(b.Rows), b.Danger...), b.Legend...) {
		if text.Width(l) > w {
			t.Errorf("%s: row wider than the screen: %q", at, l)
		}
	}
	legend := strings.Join(strings.Fields(strings.Join(b.Legend, " ")), " ")
	laneRow := map[string]string{}
	for _, l := range b.Rows {
		for _, ln := range d.Lanes {
			if strings.HasPrefix(l, ln.Name+" ") {
				laneRow[ln.Name] = l
			}
		}
	}
	gw := 0
	for _, ln := range d.Lanes {
		gw = max(gw, len(ln.Name)+1)
	}
	for li, ln := range d.Lanes {
		row, ok := laneRow[ln.Name]
		if !ok {
			t.Fatalf("%s: no lane for %s in\n%s", at, ln.Name, strings.Join(b.Rows, "\n"))
		}
		// The move tokens of the lane, left to right: a kind's letter
		// followed by a mark's glyph.
		var got, want []string
		rs := []rune(row)
		for i := gw; i+1 < len(rs); i++ {
			if isMark(rs[i+1]) && unicode.IsLower(rs[i]) {
				got = append(got, string(rs[i:i+2]))
			}
		}
		shown := 0
		for _, mv := range d.Moves {
			if mv.Lane == li {
				l, _ := lanes.Letter(mv.Action)
				want = append(want, l+mv.Mark.Glyph())
			}
		}
		if strings.Contains(row, timeline.CutGlyph) {
			// Earlier instants cut: the lane shows the latest moves.
			shown = len(want) - len(got)
			if shown < 0 {
				shown = 0
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want[shown:]) {
			t.Errorf("%s: lane %s shows %v, its moves are %v:\n%s", at, ln.Name, got, want, strings.Join(b.Rows, "\n"))
		}
	}
	// Every glyph of the lanes is in the legend; letters are checked as
	// "letter word".
	for _, l := range b.Rows {
		for _, r := range []rune(l)[min(gw, len([]rune(l))):] {
			if r == ' ' || r == '=' || unicode.IsDigit(r) || unicode.IsLetter(r) {
				continue
			}
			if !strings.ContainsRune(legend, r) {
				t.Errorf("%s: %q is on the lanes but not in the legend %q", at, r, legend)
			}
		}
	}
	for _, a := range d.ActionsUsed() {
		l, what := lanes.Letter(a)
		if short, ok := timeline.ShortWords(a); ok && !full {
			what = short
		}
		if !strings.Contains(legend, l+" "+what) {
			t.Errorf("%s: the legend does not name %q (%s)", at, l, what)
		}
	}
}

func isMark(r rune) bool {
	for _, m := range lanes.Marks() {
		if m.Glyph() == string(r) {
			return true
		}
	}
	return false
}

// checkFrameLanes: the frame at w×h shows the lanes whole, and their
// legend, in one of the arrangements.
func checkFrameLanes(t *testing.T, s Screen, w, h int) {
	t.Helper()
	frame := "\n" + s.Frame(w, h) + "\n"
	for _, v := range [][2]bool{{true, true}, {false, false}, {true, false}, {false, true}} {
		b := s.lanesBlock(w, v[0], v[1])
		if strings.Contains(frame, "\n"+strings.Join(b.Lines, "\n")+"\n") {
			return
		}
	}
	t.Errorf("%d×%d at t=%d: the lanes or their legend are not on screen whole:\n%s", w, h, s.Snap.View.Now, frame)
}

// TestPausedHolderLaneShowsStaleWrite is the newcomer's screen: at 1080
// under compare/off, A's lane ends with its resume (made no call) and its
// write accepted stale, each with its own mark, at 80×24 and 120×40.
func TestPausedHolderLaneShowsStaleWrite(t *testing.T) {
	t.Parallel()
	r := shipped(t, "paused-holder", scenario.Knobs{Renewal: scenario.RenewalCompare, Fencing: scenario.FencingOff})
	if err := r.SeekTime(context.Background(), 1080); err != nil {
		t.Fatal(err)
	}
	s := showing(r)
	for _, sz := range [][2]int{{80, 24}, {120, 40}} {
		var lane string
		for _, l := range strings.Split(s.Frame(sz[0], sz[1]), "\n") {
			if strings.HasPrefix(l, "A ") {
				lane = l
			}
		}
		if !strings.Contains(lane+" ", " u"+lanes.NoCall.Glyph()+" e"+lanes.Stale.Glyph()+" ") {
			t.Errorf("%v: A's lane is %q; want its resume made no call, then its write accepted stale", sz, lane)
		}
	}
}
