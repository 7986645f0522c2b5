package tui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/export"
	"github.com/leaserace/leaserace/tui/tuitest"
)

// shortTempDir is a new directory with a short path, removed after the
// test: the status line names exported files by their whole path, and a
// test's status checks want it on one line at 120 columns.
func shortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lrx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// replayModel wraps a replay in a model of size w×h, the way the replay
// command does, with no database anywhere.
func replayModel(t testing.TB, rp *engine.Run, offline string, w, h int) Model {
	t.Helper()
	m, err := NewModel(context.Background(), Config{
		Run: rp, ExportDir: shortTempDir(t), Renderer: tuitest.ASCIIRenderer(), Now: fixedNow, Offline: offline, NoAsk: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	m.every = func(_ time.Duration, f func(time.Time) tea.Msg) tea.Cmd {
		return func() tea.Msg { return f(time.Time{}) }
	}
	return send(t, m, tea.WindowSizeMsg{Width: w, Height: h})
}

func shippedReplay(t testing.TB, name string, k scenario.Knobs) *engine.Run {
	t.Helper()
	rp, err := engine.ShippedReplay(name, k)
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

func shippedTranscript(t testing.TB, name string, k scenario.Knobs) transcript.Transcript {
	t.Helper()
	tr, err := engine.ShippedTranscript(name, k)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// Replay walks every recorded step with →; at 1075 the screen shows the
// recorded UPDATE 1 under the REPLAY banner, r switches to the compare
// recording (UPDATE 0), and the other keys move as they do live.
func TestReplayStepsThroughTheRecording(t *testing.T) {
	t.Parallel()
	for _, sz := range [][2]int{{120, 40}, {80, 24}} {
		m := replayModel(t, shippedReplay(t, "renewal-race", blindOff()), "", sz[0], sz[1])
		v := m.View()
		for _, want := range []string{"REPLAY", "shipped recording renewal-race--blind-off.json", "on local", "no database in use", "event 0/6"} {
			if !strings.Contains(strings.Join(strings.Fields(v), " "), want) {
				t.Errorf("%dx%d: the first frame lacks %q:\n%s", sz[0], sz[1], want, v)
			}
		}
		for i := 1; i <= 6; i++ {
			m = press(t, m, "right")
			if m.Failure != nil || m.Snap.View.Pos != i {
				t.Fatalf("step %d: pos %d err %v", i, m.Snap.View.Pos, m.Failure)
			}
			tuitest.CheckFrame(t, "replay", m.View(), sz[0], sz[1])
			if i == 5 {
				v := m.View()
				if lastTag(t, m) != "UPDATE 1" || !strings.Contains(v, "UPDATE 1") || !strings.Contains(v, "REPLAY") || !strings.Contains(v, "t=1075") {
					t.Fatalf("%dx%d at 1075 blind:\n%s", sz[0], sz[1], v)
				}
				m = press(t, m, "r")
				v = m.View()
				if m.Failure != nil || lastTag(t, m) != "UPDATE 0" || !strings.Contains(v, "UPDATE 0") || !strings.Contains(v, "compare-off") {
					t.Fatalf("%dx%d after r: err %v\n%s", sz[0], sz[1], m.Failure, v)
				}
				if !strings.Contains(v, "owner A → B") {
					t.Errorf("the toggle does not say what changed:\n%s", v)
				}
				m = press(t, m, "r")
			}
		}
		m = press(t, m, "right")
		if !strings.Contains(m.View(), "last event") {
			t.Errorf("→ past the last recorded step says nothing:\n%s", m.View())
		}
		m = press(t, m, "g")
		if m.Snap.View.Pos != 0 || m.Snap.View.Now != 1055 {
			t.Fatalf("g: pos %d t=%d", m.Snap.View.Pos, m.Snap.View.Now)
		}
		m = press(t, m, "G")
		if m.Snap.View.Pos != 6 || m.Snap.View.Now != 1135 {
			t.Fatalf("G: pos %d t=%d", m.Snap.View.Pos, m.Snap.View.Now)
		}
		m = press(t, m, ",", ",")
		if m.Snap.View.Now != 1133 || m.Snap.View.Pos != 6 {
			t.Fatalf(", ,: pos %d t=%d", m.Snap.View.Pos, m.Snap.View.Now)
		}
		m = press(t, m, "left")
		if m.Snap.View.Pos != 6 || m.Snap.View.Now != 1080 {
			t.Fatalf("← after ticks: pos %d t=%d, want back on the last event", m.Snap.View.Pos, m.Snap.View.Now)
		}
		m = press(t, m, "left", ".")
		if m.Snap.View.Pos != 5 || m.Snap.View.Now != 1076 {
			t.Fatalf("← .: pos %d t=%d", m.Snap.View.Pos, m.Snap.View.Now)
		}
		m = press(t, m, "g", " ")
		if m.Snap.View.Pos != 6 || m.Playing {
			t.Fatalf("space played to pos %d (playing %v)", m.Snap.View.Pos, m.Playing)
		}
		// R has nothing to reconnect to in a replay.
		if nm, cmd := m.Update(keyMsg("R")); cmd != nil || nm.(Model).Busy() {
			t.Error("R started a command in a replay")
		}
	}
}

// A replay shows what the live TUI shows at the same moment: the same
// frame, under the REPLAY banner.
func TestReplayFrameMatchesTheLiveFrame(t *testing.T) {
	t.Parallel()
	for _, k := range []scenario.Knobs{blindOff(), enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic)} {
		live := at1075(t, k, 200, 60)
		m := replayModel(t, shippedReplay(t, "renewal-race", k), "", 200, 60)
		m = press(t, m, "right", "right", "right", "right", "right")
		got := strings.Split(m.View(), "\n")
		want := live.View()
		n := len(got) - len(strings.Split(want, "\n"))
		if n <= 0 || !strings.Contains(strings.Join(got[:n], "\n"), "REPLAY") {
			t.Fatalf("%s: no banner above the frame:\n%s", k, m.View())
		}
		if rest := strings.Join(got[n:], "\n"); rest != want {
			t.Errorf("%s: the replay's frame differs from the live one\nlive:\n%s\nreplay:\n%s", k, want, rest)
		}
	}
}

func TestReplayWithoutARecordingSaysSo(t *testing.T) {
	t.Parallel()
	rp, err := engine.NewReplay(engine.Recording{Transcript: shippedTranscript(t, "renewal-race", blindOff()), Origin: "/tmp/talk.json"})
	if err != nil {
		t.Fatal(err)
	}
	m := replayModel(t, rp, "", 120, 40)
	m = press(t, m, "right", "right", "f")
	v := m.View()
	if m.Failure == nil || !strings.Contains(v, "no recorded run of renewal-race with blind/strict") {
		t.Fatalf("f without a recording:\n%s", v)
	}
	if strings.Contains(v, "R reconnects") || strings.Contains(v, "went away") {
		t.Errorf("a replay offers to reconnect:\n%s", v)
	}
	if !strings.Contains(v, "talk.json") || m.Snap.View.Pos != 2 {
		t.Errorf("the failed toggle moved the replay or lost its name (pos %d):\n%s", m.Snap.View.Pos, v)
	}
	m = press(t, m, "right")
	if m.Failure != nil || strings.Contains(m.View(), "no recorded run") {
		t.Errorf("the error stays after the next step:\n%s", m.View())
	}
}

func TestOfflineBannerSaysWhyAndHowToSwitch(t *testing.T) {
	t.Parallel()
	why := "container: no Docker engine answers; local: PostgreSQL server binaries not found"
	m := replayModel(t, shippedReplay(t, "renewal-race", blindOff()), why, 80, 24)
	v := strings.Join(strings.Fields(m.View()), " ")
	for _, want := range []string{"No PostgreSQL here (" + why + ")", "Showing recorded runs: press r/f to switch between recorded runs.", "REPLAY"} {
		if !strings.Contains(v, want) {
			t.Errorf("the offline banner lacks %q:\n%s", want, m.View())
		}
	}
	tuitest.CheckFrame(t, "offline", m.View(), 80, 24)
	// At 1075 the full banner would squeeze the panes at 80×24: the short
	// one keeps every line of the story.
	at := press(t, m, "right", "right", "right", "right", "right")
	v = at.View()
	if !strings.Contains(v, "REPLAY") || !strings.Contains(flatText(v), "No PostgreSQL here") || !strings.Contains(v, "UPDATE 1") || strings.Contains(v, "…") {
		t.Errorf("80×24 at 1075 offline:\n%s", v)
	}
	tuitest.CheckFrame(t, "offline at 1075", v, 80, 24)
	// s opens the shipped recordings of another scenario, same knobs.
	m = press(t, m, "s", "down", "enter")
	if m.Failure != nil || m.Snap.Scenario.Name == "renewal-race" || m.Snap.Rec == nil || m.Snap.Rec.Origin != engine.OriginShipped {
		t.Fatalf("s in a replay: %v, scenario %s", m.Failure, m.Snap.Scenario.Name)
	}
	if !strings.Contains(strings.Join(strings.Fields(m.View()), " "), "No PostgreSQL here") {
		t.Errorf("the offline banner went away after s:\n%s", m.View())
	}
}

func TestOfflineReason(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("could not start PostgreSQL with the auto provider: %w", &pgserver.NoServerError{Failures: []pgserver.ProviderFailure{
		{Provider: "container", Err: fmt.Errorf("%w: install Docker and start it: %w", pgserver.ErrNoDocker, errors.New("Cannot connect"))},
		{Provider: "local", Err: errors.New("initdb failed: exit status 1\ninitdb: error: something: else")},
	}})
	if got, want := OfflineReason(err), "container: no Docker engine answers; local: initdb failed"; got != want {
		t.Errorf("OfflineReason = %q, want %q", got, want)
	}
	if got := OfflineReason(errors.New("cannot connect: refused\nmore")); got != "cannot connect: refused" {
		t.Errorf("one-line reason: %q", got)
	}
}

// sessionTranscript is a shipped transcript with the session a presenter
// would leave: open, five steps, r at 1075, then G.
func sessionTranscript(t testing.TB) transcript.Transcript {
	tr := shippedTranscript(t, "renewal-race", blindOff())
	e := func(kind string, pos int, tt int64, k scenario.Knobs) transcript.PresenterEntry {
		return transcript.PresenterEntry{Kind: kind, Scenario: "renewal-race", T: tt, Pos: pos, Knobs: k}
	}
	tr.Presenter = []transcript.PresenterEntry{e(transcript.PresenterScenario, 0, 1055, blindOff())}
	for i := range 5 {
		en := e(transcript.PresenterStep, i+1, tr.Steps[i].T, blindOff())
		st := tr.Steps[i]
		en.Step = &st
		tr.Presenter = append(tr.Presenter, en)
	}
	cmp := enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff)
	tog := e(transcript.PresenterToggle, 5, 1075, cmp)
	tog.Change = []string{"owner A → B"}
	tr.Presenter = append(tr.Presenter, tog, e(transcript.PresenterSeek, 6, 1135, cmp))
	return tr
}

// A file that holds a session offers to walk it; ] and [ go through the
// presenter's actions, toggles included, on the recordings.
func TestReplayWalksTheRecordedSession(t *testing.T) {
	t.Parallel()
	tr := sessionTranscript(t)
	recs := []engine.Recording{{Transcript: tr, Origin: "talk.json"}}
	for _, r := range mustShipped(t, "renewal-race") {
		if r.Transcript.Knobs != tr.Knobs {
			recs = append(recs, r)
		}
	}
	rp, err := engine.NewReplay(recs...)
	if err != nil {
		t.Fatal(err)
	}
	m := replayModel(t, rp, "", 120, 40)
	if v := strings.Join(strings.Fields(m.View()), " "); !strings.Contains(v, "presenter's session, 8 actions") {
		t.Fatalf("no offer to walk the session:\n%s", m.View())
	}
	m = press(t, m, "[")
	if !strings.Contains(m.View(), "first action") || m.Busy() {
		t.Errorf("[ before the walk:\n%s", m.View())
	}
	for i := 1; i <= 6; i++ {
		m = press(t, m, "]")
	}
	if m.Failure != nil || m.Snap.View.Pos != 5 || lastTag(t, m) != "UPDATE 1" || !strings.Contains(m.View(), "session 6/8") {
		t.Fatalf("six ] should show the fifth step (UPDATE 1): pos %d err %v\n%s", m.Snap.View.Pos, m.Failure, m.View())
	}
	m = press(t, m, "]")
	if m.Snap.View.Knobs.Renewal != scenario.RenewalCompare || lastTag(t, m) != "UPDATE 0" || !strings.Contains(m.View(), "owner A → B") {
		t.Fatalf("the toggle entry: knobs %s\n%s", m.Snap.View.Knobs, m.View())
	}
	if !strings.Contains(m.View(), "shipped recording renewal-race--compare-off.json") {
		t.Errorf("the banner does not name the recording on show:\n%s", m.View())
	}
	m = press(t, m, "]", "]")
	if m.Snap.View.Pos != 6 || m.Snap.View.Now != 1135 || !strings.Contains(m.View(), "last action") {
		t.Fatalf("end of the walk: pos %d t=%d\n%s", m.Snap.View.Pos, m.Snap.View.Now, m.View())
	}
	m = press(t, m, "[", "[")
	if m.Snap.View.Knobs != blindOff() || m.Snap.View.Pos != 5 || !strings.Contains(m.View(), "talk.json") {
		t.Fatalf("[ [ back to the blind step: knobs %s pos %d\n%s", m.Snap.View.Knobs, m.Snap.View.Pos, m.View())
	}
	// Several keys at once are each honoured, in order.
	m = press(t, m, "[[[")
	if m.Replay.WalkAt != 3 || m.Snap.View.Pos != 2 {
		t.Fatalf("[[[: entry %d pos %d", m.Replay.WalkAt, m.Snap.View.Pos)
	}
}

func mustShipped(t testing.TB, name string) []engine.Recording {
	t.Helper()
	recs, err := engine.ShippedRecordings(name)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// e in a replay writes json, md, mmd, cast and html; the JSON is the recording
// itself, digest for digest, with the replay's own session.
func TestReplayExportWritesEveryFormat(t *testing.T) {
	t.Parallel()
	m := replayModel(t, shippedReplay(t, "renewal-race", blindOff()), "", 120, 40)
	m = press(t, m, "G", "e")
	if m.Failure != nil {
		t.Fatal(m.Failure)
	}
	base := filepath.Join(m.exportDir, "leaserace-renewal-race-20260314-150926")
	for _, ext := range []string{".json", ".md", ".mmd", ".cast", ".html"} {
		if st, err := os.Stat(base + ext); err != nil || st.Size() == 0 {
			t.Errorf("export %s: %v", ext, err)
		}
	}
	if !strings.Contains(strings.Join(strings.Fields(m.View()), " "), ".json, .md, .mmd, .cast and .html") {
		t.Errorf("the status does not name the files:\n%s", m.View())
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
	if want := shippedTranscript(t, "renewal-race", blindOff()); tr.Digest != want.Digest || tr.Meta.RecordedAt != want.Meta.RecordedAt {
		t.Errorf("exported digest %s (recorded %s), want the shipped %s", tr.Digest, tr.Meta.RecordedAt, want.Digest)
	}
	if got := kinds(tr.Presenter); strings.Join(got, ",") != "seek" {
		t.Errorf("session %v, want the replay's own: the one seek", got)
	}
	// The asciicast is the one the transcript draws (the export package
	// checks what that is).
	data, err := os.ReadFile(base + ".cast")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := export.WriteCast(&want, tr, export.CastOptions{NoColor: m.NoColor()}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, want.Bytes()) {
		t.Errorf("the exported asciicast is not the transcript's:\n%.2000s", data)
	}
}

func flatText(s string) string { return strings.Join(strings.Fields(s), " ") }

// Run falls back to the shipped recordings when the provider cannot start
// and Fallback is set: the banner says why, and q ends it without error.
func TestRunFallsBackToRecordings(t *testing.T) {
	t.Parallel()
	at := int64(1075)
	keys, out, done := runTUI(t, context.Background(), withDSN(Options{Fallback: true, At: &at}, "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"))
	// 80×24 by default: the short banner.
	out.waitFor(t, "PostgreSQL here: r/f switch recorded runs")
	out.waitFor(t, "UPDATE 1")
	if _, err := keys.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	if err := waitRun(t, done); err != nil {
		t.Fatalf("Run after a fallback: %v", err)
	}
}

// A scenario file has no shipped recordings: the provider's failure stands.
func TestRunFallbackNeedsABuiltinScenario(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "renewal-race.yaml")
	src, err := os.ReadFile(filepath.Join("..", "assets", "scenarios", "renewal-race.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, done := runTUI(t, context.Background(), withDSN(Options{Fallback: true, Scenario: file}, "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"))
	err = waitRun(t, done)
	if err == nil || !strings.Contains(err.Error(), "dsn provider") || !strings.Contains(err.Error(), "no recorded run can be shown") {
		t.Fatalf("Run returned %v, want the provider's failure and why nothing recorded could stand in", err)
	}
}

func TestRunShowsAReplay(t *testing.T) {
	t.Parallel()
	keys, out, done := runTUI(t, context.Background(), Options{Replay: shippedReplay(t, "control", blindOff())})
	out.waitFor(t, "REPLAY")
	if _, err := keys.Write([]byte("lq")); err != nil {
		t.Fatal(err)
	}
	if err := waitRun(t, done); err != nil {
		t.Fatalf("Run of a replay: %v", err)
	}
}

// A played run's recording opens with what it reached: its goals against
// par and the goal another run of the session reached.
func TestReplayOfAPlayedRunNamesItsGoals(t *testing.T) {
	t.Parallel()
	tr := shippedTranscript(t, "renewal-race", blindOff())
	tr.Played = &transcript.Played{
		Goals: []transcript.GoalRecord{
			{ID: "stale-write", Knobs: blindOff(), Reached: true, Moves: 6, Path: tr.Moves, Par: &transcript.Par{Moves: 6, Runs: "496", Of: "16788"}},
			{ID: "valid-write-lost", Knobs: blindOff()},
		},
		Elsewhere: []transcript.GoalRecord{{ID: "valid-write-lost", Knobs: scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingStrict}, Reached: true, Moves: 1}},
	}
	rp, err := engine.NewReplay(engine.Recording{Transcript: tr, Origin: "/tmp/played.json"})
	if err != nil {
		t.Fatal(err)
	}
	m := replayModel(t, rp, "", 200, 40)
	v := strings.Join(strings.Fields(m.View()), " ")
	want := "Played run (blind/off): reached stale-write in 6 moves (par 6); valid-write-lost was reached under blind/strict by another run"
	if !strings.Contains(v, want) {
		t.Errorf("the replay should open with %q:\n%s", want, m.View())
	}
	plain := replayModel(t, shippedReplay(t, "renewal-race", blindOff()), "", 200, 40)
	if strings.Contains(plain.View(), "Played run") {
		t.Errorf("a scripted recording names no goals")
	}
}
