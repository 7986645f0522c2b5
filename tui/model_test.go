package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/tuitest"
)

func blindOff() scenario.Knobs { return enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff) }
func compareOff() scenario.Knobs {
	return enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff)
}
func compareMonotonic() scenario.Knobs {
	return enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic)
}

// at1075 is renewal-race with its first five events run: the delayed
// heartbeat has just arrived.
func at1075(t testing.TB, k scenario.Knobs, w, h int) Model {
	t.Helper()
	m := openModel(t, "renewal-race", k, w, h)
	m = press(t, m, "right", "right", "right", "right", "right")
	if got := m.Snap.View.Now; got != 1075 {
		t.Fatalf("after five steps t=%d, want 1075", got)
	}
	return m
}

func lastTag(t testing.TB, m Model) string {
	t.Helper()
	st := m.Snap.Last()
	if st == nil {
		t.Fatal("no step on screen")
	}
	return st.Tag
}

func kinds(log []transcript.PresenterEntry) []string {
	var out []string
	for _, e := range log {
		out = append(out, e.Kind)
	}
	return out
}

func TestNextRunsTheNextEventOnTheServer(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", blindOff(), 120, 40)
	if m.Snap.View.Pos != 0 {
		t.Fatalf("fresh model at pos %d", m.Snap.View.Pos)
	}
	m = press(t, m, "right")
	if st := m.Snap.Last(); st == nil || st.Action != scenario.ActionSend {
		t.Fatalf("→ ran %+v, want the heartbeat send", st)
	}
	m = press(t, m, "l", "l")
	if m.run.Pos() != 3 || m.Snap.View.Pos != 3 {
		t.Fatalf("engine at %d, screen at %d; want 3 after three steps", m.run.Pos(), m.Snap.View.Pos)
	}
	c := m.Snap.View.Coordinator
	if c == nil || c.Owner != "B" || c.Fence != 2 {
		t.Fatalf("after the takeover the leases row is %+v, want B with fence 2", c)
	}
	// The row the screen shows is the row on the server.
	var owner string
	var fence int64
	conn, err := pgx.Connect(enginetest.Ctx(t), pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	q := "SELECT owner, fence FROM " + pgx.Identifier{m.run.Schema(), "leases"}.Sanitize() + " WHERE name = $1"
	if err := conn.QueryRow(enginetest.Ctx(t), q, "orders").Scan(&owner, &fence); err != nil {
		t.Fatal(err)
	}
	if owner != "B" || fence != 2 {
		t.Fatalf("server row owner=%s fence=%d, want B 2", owner, fence)
	}
	v := m.View()
	for _, want := range []string{"B (was A)", "2 (was 1)", "t=1070", "event 3/6"} {
		if !strings.Contains(v, want) {
			t.Errorf("screen lacks %q:\n%s", want, v)
		}
	}
	if got := kinds(m.log); strings.Join(got, ",") != "step,step,step" {
		t.Errorf("session log kinds %v", got)
	}
}

func TestNextPastTheEndSaysSo(t *testing.T) {
	t.Parallel()
	m := openModel(t, "control", blindOff(), 120, 40)
	m = press(t, m, "right", "right", "right", "right")
	if m.Snap.View.Pos != 3 || m.Failure != nil {
		t.Fatalf("pos %d err %v", m.Snap.View.Pos, m.Failure)
	}
	if !strings.Contains(m.View(), "last event") {
		t.Errorf("no word that the last event ran:\n%s", m.View())
	}
}

func TestPrevStepsBackByReplaying(t *testing.T) {
	t.Parallel()
	m := at1075(t, blindOff(), 120, 40)
	m = press(t, m, "left")
	if m.Snap.View.Pos != 4 || m.Snap.View.Now != 1070 || m.run.Pos() != 4 {
		t.Fatalf("← went to pos %d t=%d (engine %d), want 4 at 1070", m.Snap.View.Pos, m.Snap.View.Now, m.run.Pos())
	}
	m = press(t, m, "h")
	if m.Snap.View.Pos != 3 {
		t.Fatalf("h went to pos %d, want 3", m.Snap.View.Pos)
	}
	// A tick to 1071 runs B's effect at 1070 too; from there ← lands on
	// that effect, the last event run, before going further back.
	m = press(t, m, ".", "left")
	if m.Snap.View.Pos != 4 || m.Snap.View.Now != 1070 {
		t.Fatalf("after . and ←: pos %d t=%d, want 4 at 1070", m.Snap.View.Pos, m.Snap.View.Now)
	}
	got := kinds(m.log)
	want := []string{"step", "step", "step", "step", "step", "back", "back", "seek", "back"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("session kinds %v, want %v", got, want)
	}
	m = press(t, m, "g", "left")
	if !strings.Contains(m.View(), "Already at the start") {
		t.Errorf("← at the start says nothing:\n%s", m.View())
	}
}

func TestRenewalToggleFlipsTheTagAt1075(t *testing.T) {
	t.Parallel()
	m := at1075(t, blindOff(), 120, 40)
	if tag := lastTag(t, m); tag != "UPDATE 1" {
		t.Fatalf("blind renewal at 1075: tag %q, want UPDATE 1", tag)
	}
	m = press(t, m, "r")
	if k := m.run.Knobs(); k.Renewal != scenario.RenewalCompare {
		t.Fatalf("engine knobs %v after r", k)
	}
	if tag := lastTag(t, m); tag != "UPDATE 0" {
		t.Fatalf("compare renewal at 1075: tag %q, want UPDATE 0", tag)
	}
	v := m.View()
	for _, want := range []string{
		"UPDATE 0 — zero rows: the stale heartbeat was refused",
		"renewal: compare-and-renew",
		"owner A → B",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("screen lacks %q:\n%s", want, v)
		}
	}
	if m.Snap.View.Now != 1075 || m.Snap.View.Pos != 5 {
		t.Errorf("toggle moved the cursor to pos %d t=%d", m.Snap.View.Pos, m.Snap.View.Now)
	}
	m = press(t, m, "r")
	if tag := lastTag(t, m); tag != "UPDATE 1" {
		t.Fatalf("back to blind: tag %q, want UPDATE 1", tag)
	}
	last := m.log[len(m.log)-1]
	if last.Kind != transcript.PresenterToggle || len(last.Change) == 0 || last.Knobs.Renewal != scenario.RenewalBlind {
		t.Errorf("toggle not logged with its change: %+v", last)
	}
}

func TestFencingCyclesAndSaysWhatChanged(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", blindOff(), 120, 40)
	m = press(t, m, "G")
	if o := m.Snap.View.Outcome; o.Effects != 2 || o.Verdict != scenario.VerdictConflict {
		t.Fatalf("blind/off at the end: %+v, want 2 effects / conflict", o)
	}
	if !strings.Contains(m.View(), "2 effects / CONFLICT") {
		t.Errorf("no CONFLICT on screen:\n%s", m.View())
	}
	for _, want := range []scenario.Fencing{scenario.FencingStrict, scenario.FencingMonotonic, scenario.FencingOff} {
		m = press(t, m, "f")
		if got := m.run.Knobs().Fencing; got != want {
			t.Fatalf("f gave %s, want %s", got, want)
		}
		if !strings.Contains(m.View(), "fencing: "+want.Describe()) {
			t.Errorf("header lacks fencing %s", want.Describe())
		}
		if want == scenario.FencingStrict && !strings.Contains(m.View(), "effects 2 → 1") {
			t.Errorf("strict fencing: status lacks effects 2 → 1:\n%s", m.View())
		}
	}
}

func TestStartAndEnd(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", blindOff(), 120, 40)
	m = press(t, m, "G")
	if m.Snap.View.Pos != len(m.Snap.Scenario.Events) || m.Snap.View.Now != m.run.End() {
		t.Fatalf("G: pos %d t=%d, want all events at %d", m.Snap.View.Pos, m.Snap.View.Now, m.run.End())
	}
	m = press(t, m, "g")
	if m.Snap.View.Pos != 0 || m.Snap.View.Now != m.run.Start() || m.run.Pos() != 0 {
		t.Fatalf("g: pos %d t=%d, want 0 at %d", m.Snap.View.Pos, m.Snap.View.Now, m.run.Start())
	}
	if !strings.Contains(m.View(), "No statement yet") {
		t.Errorf("start shows a statement:\n%s", m.View())
	}
}

func TestTicksMoveOneLogicalTime(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", blindOff(), 120, 40)
	start := m.run.Start()
	m = press(t, m, ".", ".")
	if m.Snap.View.Now != start+2 || m.Snap.View.Pos != 1 {
		t.Fatalf(". .: t=%d pos %d, want t=%d with the send run", m.Snap.View.Now, m.Snap.View.Pos, start+2)
	}
	m = press(t, m, ",")
	if m.Snap.View.Now != start+1 {
		t.Fatalf(",: t=%d, want %d", m.Snap.View.Now, start+1)
	}
	// Ticking through an event's time runs it.
	for m.Snap.View.Now < 1060 {
		m = press(t, m, ".")
	}
	if m.Snap.View.Pos != 2 {
		t.Fatalf("at 1060 pos %d, want the expiry run", m.Snap.View.Pos)
	}
}

func TestPlayRunsToTheEndAndSpacePauses(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", blindOff(), 120, 40)
	m = press(t, m, " ")
	if m.Snap.View.Pos != len(m.Snap.Scenario.Events) || m.Playing {
		t.Fatalf("play ended at pos %d playing=%v", m.Snap.View.Pos, m.Playing)
	}
	if !strings.Contains(m.View(), "played to the last event") {
		t.Errorf("no word that play ended:\n%s", m.View())
	}

	// With beats that never come, space starts a step and space pauses.
	m = press(t, m, "g")
	m.every = func(d time.Duration, f func(time.Time) tea.Msg) tea.Cmd { return nil }
	m = press(t, m, " ")
	if !m.Playing || m.Snap.View.Pos != 1 {
		t.Fatalf("space: playing=%v pos %d", m.Playing, m.Snap.View.Pos)
	}
	if !strings.Contains(m.View(), "▶ playing") {
		t.Errorf("no play mark:\n%s", m.View())
	}
	m = press(t, m, " ")
	if m.Playing {
		t.Fatal("second space did not pause")
	}
	// A beat from the paused play does nothing.
	m = send(t, m, playTickMsg{gen: m.playGen})
	if m.Snap.View.Pos != 1 {
		t.Fatalf("paused play still stepped to %d", m.Snap.View.Pos)
	}
}

func TestScenarioChooserSwitchesScenario(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic), 120, 40)
	old := m.run
	oldSchema := old.Schema()
	m = press(t, m, "s")
	if !m.Chooser.Open {
		t.Fatal("s did not open the chooser")
	}
	v := m.View()
	for _, n := range scenario.BuiltinNames() {
		if !strings.Contains(v, n) {
			t.Errorf("chooser lacks %s:\n%s", n, v)
		}
	}
	m = press(t, m, "esc")
	if m.Chooser.Open || m.run != old {
		t.Fatal("esc did not just close the chooser")
	}
	m = press(t, m, "s", "down", "down", "up", "enter")
	if m.Chooser.Open {
		t.Fatal("enter left the chooser open")
	}
	if m.Snap.Scenario.Name != "control" || m.run == old || m.run.Scenario().Name != "control" {
		t.Fatalf("switched to %s", m.Snap.Scenario.Name)
	}
	if k := m.run.Knobs(); k != enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic) {
		t.Errorf("knobs not kept: %v", k)
	}
	m = press(t, m, "right", "right")
	if c := m.Snap.View.Coordinator; c == nil || c.ExpiresAt != 1090 {
		t.Errorf("control after the heartbeat: %+v, want expires 1090", c)
	}
	// The replaced run's schema is gone from the server.
	conn, err := pgx.Connect(enginetest.Ctx(t), pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(enginetest.Ctx(t), "SELECT count(*) FROM pg_namespace WHERE nspname = $1", oldSchema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("schema %s of the replaced run is still there", oldSchema)
	}
	if got := kinds(m.log); got[0] != transcript.PresenterScenario {
		t.Errorf("scenario switch not logged: %v", got)
	}
}

func TestExportWritesJSONAndMarkdown(t *testing.T) {
	t.Parallel()
	m := at1075(t, blindOff(), 120, 40)
	m = press(t, m, "r", "e")
	if m.Failure != nil {
		t.Fatal(m.Failure)
	}
	base := filepath.Join(m.exportDir, "leaserace-renewal-race-20260314-150926")
	v := m.View()
	if !strings.Contains(v, "exported") {
		t.Errorf("no export paths on screen:\n%s", v)
	}
	f, err := os.Open(base + ".json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := transcript.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Knobs != enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff) {
		t.Errorf("exported knobs %v, want compare/off", tr.Knobs)
	}
	if c := tr.Outcome.Coordinator; c == nil || c.Owner != "B" || c.Fence != 2 {
		t.Errorf("exported coordinator %+v, want B fence 2", c)
	}
	if len(tr.Steps) != 5 {
		t.Errorf("exported %d steps, want 5", len(tr.Steps))
	}
	got := kinds(tr.Presenter)
	want := []string{"step", "step", "step", "step", "step", "toggle"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("session kinds %v, want %v", got, want)
	}
	if ch := tr.Presenter[5].Change; !strings.Contains(strings.Join(ch, ";"), "owner A → B") {
		t.Errorf("toggle change lines %v", ch)
	}
	md, err := os.ReadFile(base + ".md")
	if err != nil {
		t.Fatal(err)
	}
	if len(md) == 0 {
		t.Error("empty Markdown export")
	}
	// A second export in the same second does not overwrite the first.
	m = press(t, m, "e")
	if _, err := os.Stat(base + "-2.json"); err != nil {
		t.Errorf("second export: %v", err)
	}
}

func TestQuitKeys(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"q", "ctrl+c"} {
		t.Run(k, func(t *testing.T) {
			m := openModel(t, "control", blindOff(), 80, 24)
			nm, cmd := m.Update(keyMsg(k))
			m = nm.(Model)
			if cmd == nil {
				t.Fatal("no command")
			}
			if _, ok := cmd().(tea.QuitMsg); !ok {
				t.Fatalf("%s did not quit", k)
			}
			if m.View() != "" {
				t.Error("quitting leaves a frame behind")
			}
		})
	}
	// ctrl+c quits from the chooser too; q there is just a key.
	m := openModel(t, "control", blindOff(), 80, 24)
	m = press(t, m, "s")
	_, cmd := m.Update(keyMsg("ctrl+c"))
	if cmd == nil {
		t.Fatal("ctrl+c in the chooser did not quit")
	}
}

func TestHelpToggles(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", blindOff(), 120, 40)
	if strings.Contains(m.View(), "reconnect") {
		t.Fatal("short help already lists reconnect")
	}
	m = press(t, m, "?")
	if !m.Help.ShowAll || !strings.Contains(m.View(), "reconnect") {
		t.Fatalf("? did not show full help:\n%s", m.View())
	}
	m = press(t, m, "?")
	if m.Help.ShowAll {
		t.Fatal("second ? did not hide full help")
	}
}

func TestFullHelpAtEightyByTwentyFour(t *testing.T) {
	t.Parallel()
	m := at1075(t, blindOff(), 80, 24)
	m = press(t, m, "?")
	v := m.View()
	tuitest.CheckFrame(t, "full help", v, 80, 24)
	for _, want := range []string{"next event", "fencing off→strict→monotonic", "reconnect", "q quit", "t=1075"} {
		if !strings.Contains(v, want) {
			t.Errorf("full help at 80×24 lacks %q:\n%s", want, v)
		}
	}
}

// Keys typed faster than the terminal is read reach Update as one message.
func TestKeysArrivingTogetherAreEachHonoured(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", blindOff(), 120, 40)
	m = send(t, m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("ll?")})
	if m.Snap.View.Pos != 2 || !m.Help.ShowAll {
		t.Fatalf("\"ll?\": pos %d, full help %v", m.Snap.View.Pos, m.Help.ShowAll)
	}
	m = send(t, m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("lq")})
	if !m.quitting {
		t.Fatal("\"lq\" did not quit")
	}
}

func TestReconnectAfterTheServerDroppedUs(t *testing.T) {
	t.Parallel()
	m := openOwnHost(t, "renewal-race", blindOff(), 120, 40)
	m = press(t, m, "right", "right", "right", "right", "right")
	before := m.View()
	// Drop every session of this run, as a server restart would.
	conn, err := pgx.Connect(enginetest.Ctx(t), pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(enginetest.Ctx(t), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()", m.run.Schema()); err != nil {
		t.Fatal(err)
	}
	m = press(t, m, "right")
	if m.Failure == nil {
		t.Fatal("a step on a dropped connection did not fail")
	}
	if m.Snap.View.Pos != 5 {
		t.Fatalf("the failed step changed what is shown: pos %d", m.Snap.View.Pos)
	}
	v := m.View()
	if !strings.Contains(v, "PostgreSQL went away") || !strings.Contains(v, "R reconnects") {
		t.Errorf("no word about the lost server:\n%s", v)
	}
	if !strings.Contains(v, "UPDATE 1") {
		t.Errorf("the last good step is no longer shown:\n%s", v)
	}
	// What was shown is still exportable while the server is gone.
	m = press(t, m, "e")
	exported, _ := filepath.Glob(filepath.Join(m.exportDir, "leaserace-renewal-race-*.json"))
	if len(exported) != 1 {
		t.Fatalf("export while the server is gone wrote %v", exported)
	}
	f, err := os.Open(exported[0])
	if err != nil {
		t.Fatal(err)
	}
	tr, err := transcript.Read(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tr.Steps); n != 5 {
		t.Fatalf("exported %d steps, want the 5 shown", n)
	}
	if last := tr.Steps[4]; last.Tag != "UPDATE 1" || last.T != 1075 {
		t.Fatalf("the last exported step is %s at %d, want UPDATE 1 at 1075", last.Tag, last.T)
	}
	m = press(t, m, "R")
	if m.Failure != nil {
		t.Fatalf("reconnect: %v", m.Failure)
	}
	if m.Snap.View.Pos != 5 || m.Snap.View.Now != 1075 || lastTag(t, m) != "UPDATE 1" {
		t.Fatalf("after R: pos %d t=%d", m.Snap.View.Pos, m.Snap.View.Now)
	}
	if strings.Contains(m.View(), "went away") {
		t.Error("the error is still shown after reconnecting")
	}
	_ = before
	m = press(t, m, "right")
	if m.Failure != nil || m.Snap.View.Pos != 6 {
		t.Fatalf("step after reconnect: pos %d err %v", m.Snap.View.Pos, m.Failure)
	}
}

func TestPanicInAStepIsShownNotFatal(t *testing.T) {
	t.Parallel()
	m := at1075(t, blindOff(), 120, 40)
	_, cmd := m.exec(panicOp{})
	msg := cmd()
	d, ok := msg.(outcome)
	if !ok || d.err == nil {
		t.Fatalf("panic became %#v", msg)
	}
	m = send(t, m, d)
	v := m.View()
	if !strings.Contains(v, "boom") || !strings.Contains(v, "UPDATE 1") {
		t.Errorf("panic not reported in place:\n%s", v)
	}
	if m.Busy() {
		t.Error("still busy after the panic")
	}
}

// panicOp is an op whose engine call panics.
type panicOp struct{}

func (panicOp) String() string                     { return "next" }
func (panicOp) run(context.Context, Model) outcome { panic("boom") }

func TestKeysWhileBusyAreQueued(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", blindOff(), 120, 40)
	nm, cmd1 := m.Update(keyMsg("right"))
	m = nm.(Model)
	if !m.Busy() || cmd1 == nil {
		t.Fatal("→ did not start a command")
	}
	if !strings.Contains(m.View(), "● running") {
		t.Errorf("no busy mark:\n%s", m.View())
	}
	nm, cmd2 := m.Update(keyMsg("right"))
	m = nm.(Model)
	if cmd2 != nil || len(m.queue) != 1 {
		t.Fatalf("second → while busy: cmd %v queue %d", cmd2 != nil, len(m.queue))
	}
	for _, msg := range runCmd(cmd1) {
		m = send(t, m, msg)
	}
	if m.Snap.View.Pos != 2 || m.Busy() {
		t.Fatalf("queued step lost: pos %d busy %v", m.Snap.View.Pos, m.Busy())
	}
}

func TestClosedSessionRunsNothing(t *testing.T) {
	t.Parallel()
	m := openModel(t, "control", blindOff(), 80, 24)
	_, cmd := m.Update(keyMsg("right"))
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if msg := cmd(); msg != nil {
		t.Fatalf("a command ran after Close: %#v", msg)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
