package screen

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/search"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/tuitest"
)

// moment is a built-in scenario at the point a presenter stops to talk,
// reached by the keys the presenter presses; tui's TestGoldenScreens
// presses them in the real program and must draw these same files.
type moment struct {
	name     string
	scenario string
	knobs    scenario.Knobs
	keys     []string
}

func moments() []moment {
	right5 := []string{"right", "right", "right", "right", "right"}
	return []moment{
		{"renewal-race-1075-blind", "renewal-race", blindOff(), right5},
		// Compare reached the way a presenter does: blind to 1075, then r.
		{"renewal-race-1075-compare", "renewal-race", blindOff(), append(right5, "r")},
		{"renewal-race-end-blind", "renewal-race", blindOff(), []string{"G"}},
		{"control-after-heartbeat", "control", enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic), []string{"right", "right"}},
		{"busy-holder-second-write-strict", "busy-holder", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingStrict), right5},
		{"revoked-writer-old-write", "revoked-writer", blindOff(), []string{"right", "right"}},
		{"revoked-writer-old-write-monotonic", "revoked-writer", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingMonotonic), []string{"right", "right"}},
		// Kleppmann's paused client writes on its old check: only fencing
		// at the resource can refuse it.
		{"paused-holder-stale-write", "paused-holder", enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff), append(right5, "right")},
		{"paused-holder-stale-write-monotonic", "paused-holder", enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic), append(right5, "right")},
		// The pivotal step of the other built-in scenarios: their last,
		// where the stale write or renewal lands.
		{"river-reelect-end-blind", "river-reelect", blindOff(), []string{"G"}},
		{"slow-renewal-end-blind", "slow-renewal", blindOff(), []string{"G"}},
		{"zombie-producer-end-blind", "zombie-producer", blindOff(), []string{"G"}},
	}
}

// press does to r and s what the TUI does for key: → runs the next step,
// r toggles the renewal and says what changed, G goes to the end.
func press(t *testing.T, r *engine.Run, s Screen, key string) Screen {
	t.Helper()
	ctx := enginetest.Ctx(t)
	var err error
	var ch engine.Change
	switch key {
	case "right":
		_, err = r.Next(ctx)
	case "r":
		k := r.Knobs()
		k.Renewal = k.Renewal.Toggle()
		ch, err = r.SetKnobs(ctx, k)
	case "G":
		err = r.SeekTime(ctx, r.End())
	default:
		t.Fatalf("no key %q here", key)
	}
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	s.Snap, s.Status = SnapshotOf(r), nil
	if key == "r" {
		s.Status = s.ChangeStatus(&ch)
	}
	return s
}

// TestGoldenScreens draws each moment from the shipped recording of its
// scenario, with no database, and compares the frame with
// testdata/TestGoldenScreens/<moment>-<W>x<H>.golden (-update writes
// them). The ASCII profile keeps the files free of colour codes.
func TestGoldenScreens(t *testing.T) {
	t.Parallel()
	for _, mo := range moments() {
		for _, sz := range goldenSizes() {
			t.Run(fmt.Sprintf("%s-%dx%d", mo.name, sz[0], sz[1]), func(t *testing.T) {
				r := shipped(t, mo.scenario, mo.knobs)
				s := showing(r)
				for _, k := range mo.keys {
					s = press(t, r, s, k)
				}
				frame := s.Frame(sz[0], sz[1])
				tuitest.CheckFrame(t, mo.name, frame, sz[0], sz[1])
				golden.RequireEqual(t, []byte(frame+"\n"))
			})
		}
	}
}

// goldenSizes are the sizes of the golden screens: the smallest usual
// terminal to a large one. tui's golden tests reach the first two by keys.
func goldenSizes() [][2]int { return [][2]int{{80, 24}, {120, 40}, {100, 30}, {200, 60}} }

// askRace is the scenario file of the play screens, a live run of it on
// the test server, and a screen showing it.
func askRace(t *testing.T, k scenario.Knobs) (*scenario.Scenario, *engine.Run) {
	t.Helper()
	sc, err := scenario.LoadFile("../testdata/ask-race.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := enginetest.Ctx(t)
	r, err := engine.Open(ctx, engine.Config{DSN: pgtest.DSN(t), Scenario: sc, Knobs: k, Provider: "test"})
	if err != nil {
		t.Fatalf("open %s: %v", sc.Name, err)
	}
	t.Cleanup(func() {
		if err := r.Close(enginetest.Ctx(t)); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return sc, r
}

// TestGoldenPlayScreens draws the goal panel and a prediction prompt of a
// live run (testdata/TestGoldenPlayScreens/*.golden; -update rewrites
// them); tui's TestGoldenPlayScreens reaches them by keys and must draw
// the same.
func TestGoldenPlayScreens(t *testing.T) {
	t.Parallel()
	// The goal panel's search, once for every size: the frames differ,
	// the schedules do not.
	goals, err := scenario.LoadFile("../testdata/ask-race.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := search.New(search.Config{DSN: pgtest.DSN(t), Lanes: 1})
	t.Cleanup(func() { _ = o.Close(enginetest.Ctx(t)) })
	res, err := o.Search(enginetest.Ctx(t), goals, blindOff(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sz := range goldenSizes() {
		size := strconv.Itoa(sz[0]) + "x" + strconv.Itoa(sz[1])
		t.Run("prediction-prompt-"+size, func(t *testing.T) {
			sc, r := askRace(t, blindOff())
			// Four steps, then the late heartbeat's question before it runs.
			next(t, r, 4)
			log := r.Log()
			a := world.AskFor(sc, log[:4], log[4])
			if a == nil {
				t.Fatal("no question before the fifth step")
			}
			s := showing(r)
			s.Ask = &Prompt{Ask: *a, Pick: -1, T: log[4].T}
			frame := s.Frame(sz[0], sz[1])
			tuitest.CheckFrame(t, "prediction prompt", frame, sz[0], sz[1])
			golden.RequireEqual(t, []byte(frame+"\n"))
		})
		t.Run("goal-panel-"+size, func(t *testing.T) {
			_, r := askRace(t, blindOff())
			ctx := enginetest.Ctx(t)
			s := showing(r)
			s.Play.On = true
			s.Search = &Search{Res: &res}
			for _, mv := range []string{"A:send hb1", "clock:advance@1060", "clock:advance@1070", "B:acquire", "B:effect", "clock:advance@1075", "A:deliver hb1", "A:effect"} {
				// The menu changes with every move: its cursor goes back
				// to the top.
				i := option(t, s.Snap, mv)
				if _, err := r.Play(ctx, s.Snap.Options[i].Move); err != nil {
					t.Fatalf("playing %s: %v", mv, err)
				}
				s.Snap = SnapshotOf(r)
				s.Play.At = 0
			}
			frame := s.Frame(sz[0], sz[1])
			tuitest.CheckFrame(t, "goal panel", frame, sz[0], sz[1])
			golden.RequireEqual(t, []byte(frame+"\n"))
		})
	}
}

// option is the menu index of the first move whose text form starts with
// prefix, or fails the test.
func option(t *testing.T, s Snapshot, prefix string) int {
	t.Helper()
	var have []string
	for i, o := range s.Options {
		if strings.HasPrefix(o.Move.String(), prefix) {
			return i
		}
		have = append(have, o.Move.String())
	}
	t.Fatalf("no move %s… on the menu; it offers %v", prefix, have)
	return 0
}
