package tui

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/tuitest"
)

// optionIndex is the 1-based menu number of the first option whose move's
// text form starts with prefix, or fails the test.
func optionIndex(t *testing.T, m Model, prefix string) int {
	t.Helper()
	for i, o := range m.Snap.Options {
		if strings.HasPrefix(o.Move.String(), prefix) {
			return i + 1
		}
	}
	var have []string
	for _, o := range m.Snap.Options {
		have = append(have, o.Move.String())
	}
	t.Fatalf("no move %s… on the menu; it offers %v", prefix, have)
	return 0
}

// choose plays the menu's move that starts with prefix, by its number.
func choose(t *testing.T, m Model, prefix string) Model {
	t.Helper()
	i := optionIndex(t, m, prefix)
	if i > 9 {
		// Past the numbers: walk the cursor to it.
		for range len(m.Snap.Options) {
			m = press(t, m, "up")
		}
		for range i - 1 {
			m = press(t, m, "down")
		}
		m = press(t, m, "enter")
		if m.Failure != nil || m.Play.At != 0 && m.Snap.View.Pos == 0 {
			t.Fatalf("playing %s: %v", prefix, m.Failure)
		}
		return m
	}
	m = press(t, m, strconv.Itoa(i))
	if m.Failure != nil {
		t.Fatalf("playing %s: %v", prefix, m.Failure)
	}
	return m
}

// The learner schedules the race: every move on the menu runs, the menu
// shows only what can be made, and the goal panel says when the stale
// write got through.
func TestPlayModeReachesTheStaleWriteGoal(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", blindOff(), 120, 40)
	m = press(t, m, "p")
	if !m.Play.On || !strings.Contains(m.View(), "Your move") || !strings.Contains(m.View(), "Goals under blind/off") {
		t.Fatalf("p did not open play mode:\n%s", m.View())
	}
	// Every option on the menu is a move the run accepts.
	for _, o := range m.Snap.Options {
		if strings.Contains(o.Words, "?") {
			t.Errorf("an option reads oddly: %q", o.Words)
		}
	}
	for _, mv := range []string{"A:send hb1", "clock:advance@1060", "clock:advance@1070", "B:acquire", "B:effect", "clock:advance@1075", "A:deliver hb1", "A:effect"} {
		m = choose(t, m, mv)
	}
	v := m.View()
	if m.Snap.View.Outcome.Verdict != scenario.VerdictConflict || !strings.Contains(v, "✓ The resource accepts a stale write — reached in 8 moves") {
		t.Fatalf("the stale write did not reach its goal:\n%s", v)
	}
	// Nothing is in flight: the menu offers no delivery.
	for _, o := range m.Snap.Options {
		if o.Move.Action == scenario.ActionDeliver || o.Move.Action == scenario.ActionDrop {
			t.Errorf("the menu offers %s with nothing in flight", o.Move)
		}
	}
	// The export records the path taken, and the transcript's moves are it.
	m = press(t, m, "e")
	files, _ := filepath.Glob(filepath.Join(m.exportDir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("export wrote %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	tr, err := transcript.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tr.Moves, "A:send hb1@1055,clock:advance@1060,clock:advance@1070,B:acquire@1070") || tr.Outcome.Verdict != scenario.VerdictConflict {
		t.Errorf("exported moves %q, verdict %s", tr.Moves, tr.Outcome.Verdict)
	}
	plays := 0
	for _, e := range tr.Presenter {
		if e.Kind == transcript.PresenterPlay {
			plays++
		}
	}
	if plays != 8 {
		t.Errorf("the presenter's log holds %d played moves, want 8", plays)
	}
}

// A dropped message leaves the flight list, and stepping back then
// choosing differently forks the path.
func TestPlayModeDropAndFork(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", compareMonotonic(), 120, 40)
	m = press(t, m, "p")
	m = choose(t, m, "A:send hb1")
	if len(m.Snap.View.InFlight) != 1 {
		t.Fatalf("after the send, in flight: %v", m.Snap.View.InFlight)
	}
	m = choose(t, m, "A:drop hb1")
	if len(m.Snap.View.InFlight) != 0 || !strings.Contains(m.View(), "nothing in flight") {
		t.Fatalf("the dropped heartbeat is still in flight:\n%s", m.View())
	}
	for _, o := range m.Snap.Options {
		if o.Move.Msg == "hb1" {
			t.Errorf("the menu still offers %s", o.Move)
		}
	}
	// Back one step, and deliver it instead: the log forks.
	m = press(t, m, "left")
	if m.Snap.View.Pos != 1 || len(m.Snap.View.InFlight) != 1 {
		t.Fatalf("back: pos %d, in flight %v", m.Snap.View.Pos, m.Snap.View.InFlight)
	}
	m = choose(t, m, "A:deliver hb1")
	log := m.run.Log()
	if len(log) != 2 || log[1].Action != scenario.ActionDeliver {
		t.Fatalf("the path did not fork: %s", scenario.FormatMoves(log))
	}
	// Control: a current heartbeat still renews, compare-and-renew or not.
	if st := m.Snap.Last(); st.Tag != "UPDATE 1" || st.Coordinator.ExpiresAt != 1115 {
		t.Errorf("the renewal at 1055: %s, row %+v", st.Tag, st.Coordinator)
	}
}

// A question comes before its step; the step runs once a choice is made,
// and the screen says whether it was right, from the real result.
func TestPredictThenReveal(t *testing.T) {
	t.Parallel()
	sc, err := scenario.LoadFile("testdata/ask-race.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := openScenarioModel(t, sc, compareOff(), 120, 40, nil)
	m = press(t, m, "right", "right", "right", "right")
	m = press(t, m, "right") // the late heartbeat: asked first
	if m.Ask == nil || m.Ask.Pick >= 0 || m.Snap.View.Pos != 4 {
		t.Fatalf("no question before the delivery (pos %d)", m.Snap.View.Pos)
	}
	if v := m.View(); !strings.Contains(v, "What will PostgreSQL answer?") || !strings.Contains(v, "1 UPDATE 1") || !strings.Contains(v, "2 UPDATE 0") {
		t.Fatalf("the question is not on screen:\n%s", v)
	}
	m = press(t, m, "right") // not a choice: nothing runs
	if m.Snap.View.Pos != 4 {
		t.Fatalf("a key other than a choice ran the step")
	}
	m = press(t, m, "1") // UPDATE 1: wrong under compare-and-renew
	if m.Snap.View.Pos != 5 || !strings.Contains(m.View(), "✗ Not quite: you said UPDATE 1, but PostgreSQL answered UPDATE 0") {
		t.Fatalf("after the choice:\n%s", m.View())
	}
	m = press(t, m, "right", "2") // A makes no call: "no" is right
	if !strings.Contains(m.View(), "✓ Right: no") {
		t.Fatalf("the second answer:\n%s", m.View())
	}
	if m.Tally.Asked != 2 || m.Tally.Right != 1 {
		t.Errorf("tally %+v", m.Tally)
	}
	// At the end of the run the tally shows.
	if !strings.Contains(m.View(), "Predictions: 1 of 2 right.") {
		t.Errorf("no tally at the end:\n%s", m.View())
	}
	// The tally goes into the export.
	m = press(t, m, "e")
	files, _ := filepath.Glob(filepath.Join(m.exportDir, "*.json"))
	data, _ := os.ReadFile(files[0])
	var tr struct {
		Asks *transcript.AskTally `json:"asks"`
	}
	if err := json.Unmarshal(data, &tr); err != nil || tr.Asks == nil || tr.Asks.Asked != 2 || tr.Asks.Right != 1 || len(tr.Asks.Answers) != 2 {
		t.Fatalf("exported tally %+v (%v)", tr.Asks, err)
	}
	// --no-ask: the same steps run without a question.
	q := openScenarioModel(t, sc, compareOff(), 120, 40, func(c *Config) { c.NoAsk = true })
	q = press(t, q, "right", "right", "right", "right", "right")
	if q.Ask != nil || q.Snap.View.Pos != 5 {
		t.Fatalf("--no-ask still asked (pos %d)", q.Snap.View.Pos)
	}
	// esc skips a question and runs the step.
	s := openScenarioModel(t, sc, compareOff(), 120, 40, nil)
	s = press(t, s, "right", "right", "right", "right", "right", "esc")
	if s.Ask != nil || s.Snap.View.Pos != 5 || s.Tally.Asked != 0 {
		t.Fatalf("esc: pos %d, tally %+v", s.Snap.View.Pos, s.Tally)
	}
}

// The goal panel and a prediction prompt, reached by keys, draw the
// renderer's golden screens of them
// (tui/screen/testdata/TestGoldenPlayScreens/*.golden).
func TestGoldenPlayScreens(t *testing.T) {
	t.Parallel()
	sc, err := scenario.LoadFile("testdata/ask-race.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, sz := range [][2]int{{80, 24}, {120, 40}} {
		size := strconv.Itoa(sz[0]) + "x" + strconv.Itoa(sz[1])
		t.Run("prediction-prompt-"+size, func(t *testing.T) {
			m := openScenarioModel(t, sc, blindOff(), sz[0], sz[1], nil)
			m = press(t, m, "right", "right", "right", "right", "right")
			frame := m.Frame(sz[0], sz[1])
			tuitest.CheckFrame(t, "prediction prompt", frame, sz[0], sz[1])
			requireScreenGolden(t, frame)
		})
		t.Run("goal-panel-"+size, func(t *testing.T) {
			m := openScenarioModel(t, sc, blindOff(), sz[0], sz[1], func(c *Config) { c.Play, c.NoAsk = true, true })
			for _, mv := range []string{"A:send hb1", "clock:advance@1060", "clock:advance@1070", "B:acquire", "B:effect", "clock:advance@1075", "A:deliver hb1", "A:effect"} {
				m = choose(t, m, mv)
			}
			frame := m.Frame(sz[0], sz[1])
			tuitest.CheckFrame(t, "goal panel", frame, sz[0], sz[1])
			requireScreenGolden(t, frame)
		})
	}
}

// The goal panel quotes the search of every schedule: par where a goal
// can be reached, and that it cannot under the repair.
func TestGoalPanelQuotesTheSearch(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", compareMonotonic(), 120, 40)
	m = press(t, m, "p")
	v := strings.Join(strings.Fields(m.View()), " ")
	if !strings.Contains(v, "The resource accepts a stale write — impossible under compare-and-renew + monotonic: 0 of ") {
		t.Fatalf("the panel does not say the stale write is impossible:\n%s", m.View())
	}
	m = openModel(t, "renewal-race", blindOff(), 120, 40)
	m = press(t, m, "p")
	if v := strings.Join(strings.Fields(m.View()), " "); !strings.Contains(v, "The resource accepts a stale write — par 6;") {
		t.Fatalf("no par for the stale write under blind/off:\n%s", m.View())
	}
}

// Stepping back and playing another move is a fork: the session log names
// the move played and the one it replaced, and every played move by its
// text form.
func TestPlaySessionLogNamesMovesAndForks(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", blindOff(), 120, 40)
	m = press(t, m, "p")
	m = choose(t, m, "A:send hb1")
	m = choose(t, m, "clock:advance@1060")
	m = press(t, m, "left")
	m = choose(t, m, "B:acquire")
	log := m.Session()
	var plays []transcript.PresenterEntry
	for _, e := range log {
		if e.Kind == transcript.PresenterPlay {
			plays = append(plays, e)
		}
	}
	if len(plays) != 3 || plays[0].Fork != "" || plays[1].Fork != "" || plays[2].Fork != "clock:advance@1060" {
		t.Fatalf("plays %+v", plays)
	}
	m = press(t, m, "e")
	files, _ := filepath.Glob(filepath.Join(m.exportDir, "*.md"))
	if len(files) != 1 {
		t.Fatalf("export wrote %v", files)
	}
	md, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"1. **played** `A:send hb1@1055` at t=1055 (blind/off)\n",
		"2. **played** `clock:advance@1060` at t=1060 (blind/off) → `SELECT 1`\n",
		"3. **back** to step 1 at t=1055 (blind/off)\n",
		"4. **fork** at step 2: **played** `B:acquire@1055` at t=1055 (blind/off) → `UPDATE 0` (refused) instead of `clock:advance@1060`\n",
		"## Goals\n",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}

// --play opens with its keys on screen and no scripted story: the SQL box
// and the narration say the learner makes the moves.
func TestPlayOpensWithItsKeys(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Builtin("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	for _, sz := range [][2]int{{80, 24}, {120, 40}} {
		m := openScenarioModel(t, sc, blindOff(), sz[0], sz[1], func(c *Config) { c.Play = true })
		v := m.View()
		for _, want := range []string{"↓/j choose", "enter/1-9/0 play", "p leave play"} {
			if !strings.Contains(v, want) {
				t.Errorf("%v: --play opens without %q:\n%s", sz, want, v)
			}
		}
		flat := strings.Join(strings.Fields(v), " ")
		for _, bad := range []string{"runs the first event", strings.Join(strings.Fields(sc.Description), " ")[:40]} {
			if strings.Contains(flat, bad) {
				t.Errorf("%v: --play opens telling the scripted story (%q):\n%s", sz, bad, v)
			}
		}
	}
}

// The menu's cursor goes back to the top whenever the list changes: after
// a move, and across a scenario switch; enter then plays the first entry,
// never one nobody aimed at.
func TestPlayMenuCursorResetsWhenTheListChanges(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", blindOff(), 120, 40)
	m = press(t, m, "p", "down", "down")
	if m.Play.At != 2 {
		t.Fatalf("two ↓: cursor at %d", m.Play.At)
	}
	m = choose(t, m, "A:send hb1")
	if m.Play.At != 0 {
		t.Errorf("after a move the cursor is at %d, want the top", m.Play.At)
	}
	m = press(t, m, "down", "down")
	m = press(t, m, "s", "down", "enter") // another scenario from the list
	if m.Snap.Scenario.Name == "renewal-race" {
		t.Fatalf("the scenario did not change")
	}
	if m.Play.At != 0 {
		t.Errorf("after a scenario switch the cursor is at %d, want the top", m.Play.At)
	}
}

// A question answered again after a step back counts once: the first
// prediction is the one the tally keeps.
func TestTallyCountsAQuestionOnce(t *testing.T) {
	t.Parallel()
	sc, err := scenario.LoadFile("testdata/ask-race.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := openScenarioModel(t, sc, compareOff(), 120, 40, nil)
	m = press(t, m, "right", "right", "right", "right", "right", "1") // wrong
	m = press(t, m, "left", "right", "2")                             // right, the second time
	if m.Snap.View.Pos != 5 {
		t.Fatalf("pos %d", m.Snap.View.Pos)
	}
	if m.Tally.Asked != 1 || m.Tally.Right != 0 || len(m.Tally.Answers) != 1 {
		t.Errorf("tally %+v: the re-answer was counted", m.Tally)
	}
}

// 80×24 --play on renewal-race blind/off shows the goals, the verdict and
// the key hint, and the menu's cursor stays on screen through 12 ↓.
func TestPlayAt80x24(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Builtin("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	m := openScenarioModel(t, sc, blindOff(), 80, 24, func(c *Config) { c.Play = true })
	m = choose(t, m, "A:send hb1") // two messages' worth of menu
	for i := 0; i <= 12; i++ {
		v := m.Frame(80, 24)
		tuitest.CheckFrame(t, "play 80×24", v, 80, 24)
		for _, want := range []string{"Goals under blind/off", "The resource accepts a stale write", "/ safe", "↓/j choose", "▶ "} {
			if !strings.Contains(v, want) {
				t.Fatalf("after %d ↓ the screen lacks %q:\n%s", i, want, v)
			}
		}
		if strings.Contains(v, "see what just happened below") {
			t.Errorf("the screen points below, where nothing is:\n%s", v)
		}
		if want := min(i, len(m.Snap.Options)-1); m.Play.At != want {
			t.Fatalf("after %d ↓ the cursor is at %d", i, m.Play.At)
		}
		m = press(t, m, "down")
	}
}

// The newcomer's miss: after the resurrection, with B's fence-2 write not
// landed, they predict a conflict for A's write; the screen says why it is
// safe from the run's own state, on the screen, at 80×24 too.
func TestAMissSaysWhy(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Builtin("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	for _, sz := range [][2]int{{80, 24}, {120, 40}} {
		m := openScenarioModel(t, sc, blindOff(), sz[0], sz[1], func(c *Config) { c.Play = true })
		for _, mv := range []string{"A:send hb1", "clock:advance@1060", "clock:advance@1070", "B:acquire", "clock:advance@1075", "A:deliver hb1"} {
			m = choose(t, m, mv)
			if m.Ask != nil && m.Ask.Pick < 0 {
				m = press(t, m, "esc")
			}
		}
		m = choose(t, m, "A:effect")
		if m.Ask == nil || m.Ask.Pick >= 0 {
			t.Fatalf("%v: no question before A's write", sz)
		}
		m = press(t, m, "1") // conflict
		v := strings.Join(strings.Fields(m.Frame(sz[0], sz[1])), " ")
		for _, want := range []string{"✗ Not quite: you said conflict", "A's write carried fence 1 and the resource's highest fence accepted was 1", "A conflict needs a write with a newer fence to land first"} {
			if !strings.Contains(v, want) {
				t.Errorf("%v: the miss does not say %q:\n%s", sz, want, m.Frame(sz[0], sz[1]))
			}
		}
	}
}

// Under compare/off the stale write is impossible in renewal-race: the
// panel says compare-and-renew alone rules it out and points to
// paused-holder, where it does not.
func TestCompareAlonePointsToPausedHolder(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", compareOff(), 120, 40)
	m = press(t, m, "p")
	v := strings.Join(strings.Fields(m.View()), " ")
	for _, want := range []string{"The resource accepts a stale write — impossible under compare-and-renew + off", "compare-and-renew alone rules it out here", "paused-holder (s)"} {
		if !strings.Contains(v, want) {
			t.Errorf("the panel lacks %q:\n%s", want, m.View())
		}
	}
}

// An impossible goal names the move that cuts every path, from the search:
// under compare/monotonic the stale write's cut is hb1's delivery getting
// UPDATE 0. The play screen shows it in full at 120×40 and says where to
// find it at 80×24; the exported Markdown, page and JSON carry the same
// words.
func TestImpossibleGoalNamesTheCut(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", compareMonotonic(), 120, 40)
	m = press(t, m, "p")
	var cut string
	if m.Search != nil && m.Search.Res != nil {
		for _, g := range m.Search.Res.Goals {
			if g.Goal.ID == "stale-write" {
				cut = g.Cut
			}
		}
	}
	if !strings.Contains(cut, "every delivery of hb1 once its lease was no longer current (B now holds fence 2") || !strings.Contains(cut, "got UPDATE 0, so A never wrote") {
		t.Fatalf("the search's cut for the stale write: %q", cut)
	}
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if v := flat(m.View()); !strings.Contains(v, "what cuts every path: "+cut) {
		t.Errorf("the goal panel does not show the cut %q:\n%s", cut, m.View())
	}
	if v := flat(m.Frame(80, 24)); !strings.Contains(v, "The resource accepts a stale write — impossible here; e exports why") {
		t.Errorf("at 80×24 the goal panel does not say where the cut is:\n%s", m.Frame(80, 24))
	}
	m = press(t, m, "e")
	for _, ext := range []string{".md", ".html"} {
		files, _ := filepath.Glob(filepath.Join(m.exportDir, "*"+ext))
		if len(files) != 1 {
			t.Fatalf("export wrote %v", files)
		}
		data, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(flat(html.UnescapeString(string(data))), "what cuts every path: "+cut) && !strings.Contains(flat(html.UnescapeString(string(data))), "What cuts every path: "+cut) {
			t.Errorf("%s lacks the cut %q", ext, cut)
		}
	}
}
