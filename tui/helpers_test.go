package tui

import (
	"context"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/search"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/tuitest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fixedNow stamps export names in tests.
func fixedNow() time.Time { return time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC) }

// openModel opens a built-in scenario on the test server and wraps it in a
// model of size w×h. The model and its runs are closed when the test ends.
func openModel(t testing.TB, name string, k scenario.Knobs, w, h int) Model {
	t.Helper()
	return openBuiltin(t, enginetest.Host(t, pgtest.DSN(t)), name, k, w, h)
}

// openBuiltin opens a built-in scenario on host (nil: a host of the run's
// own) with questions off: stepping tests step through pivotal steps, and
// the tests of questions use openScenarioModel.
func openBuiltin(t testing.TB, host *engine.Host, name string, k scenario.Knobs, w, h int) Model {
	t.Helper()
	sc, err := scenario.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return openOn(t, host, sc, k, w, h, func(c *Config) { c.NoAsk = true })
}

// openScenarioModel opens sc live and wraps it in a model sized w×h;
// tweak, if set, changes the model's Config first.
func openScenarioModel(t testing.TB, sc *scenario.Scenario, k scenario.Knobs, w, h int, tweak func(*Config)) Model {
	t.Helper()
	// The package's models share one host, as a room's attendees do: a
	// host of their own would cost the server four sessions each.
	return openOn(t, enginetest.Host(t, pgtest.DSN(t)), sc, k, w, h, tweak)
}

// openOwnHost is openModel with the model's run on a host of its own, as
// leaserace's TUI has: for a test that breaks the run's connections, which
// a shared host's other runs would feel.
func openOwnHost(t testing.TB, name string, k scenario.Knobs, w, h int) Model {
	t.Helper()
	return openBuiltin(t, nil, name, k, w, h)
}

// openOn opens sc live on host (nil: a host of the run's own) and wraps it
// in a model sized w×h; tweak, if set, changes the model's Config first.
func openOn(t testing.TB, host *engine.Host, sc *scenario.Scenario, k scenario.Knobs, w, h int, tweak func(*Config)) Model {
	t.Helper()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	run, err := engine.Open(ctx, engine.Config{DSN: dsn, Host: host, Scenario: sc, Knobs: k, Provider: "test"})
	if err != nil {
		t.Fatalf("open %s: %v", sc.Name, err)
	}
	cfg := Config{
		Run: run, DSN: dsn, Host: host, Provider: "test", ExportDir: t.TempDir(),
		Renderer: tuitest.ASCIIRenderer(), Now: fixedNow,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	m, err := NewModel(context.Background(), cfg)
	if err != nil {
		_ = run.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	m.s.lent = sharedSearch(t, dsn)
	// Play beats arrive at once in tests; the pace is not what is tested.
	m.every = func(_ time.Duration, f func(time.Time) tea.Msg) tea.Cmd {
		return func() tea.Msg { return f(time.Time{}) }
	}
	m = send(t, m, tea.WindowSizeMsg{Width: w, Height: h})
	// What a program would run first (Init): a search for the goal panel.
	for _, msg := range runCmd(m.Init()) {
		m = send(t, m, msg)
	}
	return m
}

// sharedSearch is one schedule search for the models of every test of
// the package, lent to each (session.lent), as a room shares one among its
// attendees: play mode searches the scenario and setting on show, and many
// tests play renewal-race under the same settings. A model that closes
// while the search it started runs cancels it; the next test to ask
// searches again.
func sharedSearch(t testing.TB, dsn string) *search.Searcher {
	t.Helper()
	return pgtest.Shared(t, "searcher on "+dsn, func(context.Context) (*search.Searcher, func(context.Context) error, error) {
		o := search.New(search.Config{DSN: dsn, Lanes: 4})
		return o, o.Close, nil
	})
}

// keyMsg builds the message a terminal sends for a key as bubbles/key names it.
func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "right":
		return tea.KeyMsg{Type: tea.KeyRight}
	case "left":
		return tea.KeyMsg{Type: tea.KeyLeft}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "home":
		return tea.KeyMsg{Type: tea.KeyHome}
	case "end":
		return tea.KeyMsg{Type: tea.KeyEnd}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	case " ":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// press sends keys one after another, running every command each returns
// to completion against the real run before the next key.
func press(t testing.TB, m Model, keys ...string) Model {
	t.Helper()
	for _, k := range keys {
		m = send(t, m, keyMsg(k))
	}
	return m
}

// send delivers msg and then the messages of every command it causes, the
// way tea.Program would but synchronously. It reports whether a command
// asked to quit through the quit flag of the model.
func send(t testing.TB, m Model, msg tea.Msg) Model {
	t.Helper()
	queue := []tea.Msg{msg}
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 1000 {
			t.Fatal("commands keep producing messages")
		}
		next := queue[0]
		queue = queue[1:]
		nm, cmd := m.Update(next)
		m = nm.(Model)
		queue = append(queue, runCmd(cmd)...)
	}
	return m
}

// runCmd runs a command and flattens batches; tea.Quit's message is kept
// out, the model's quitting flag says it was asked.
func runCmd(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	switch msg := cmd().(type) {
	case nil:
		return nil
	case tea.BatchMsg:
		var out []tea.Msg
		for _, c := range msg {
			out = append(out, runCmd(c)...)
		}
		return out
	case tea.QuitMsg:
		return nil
	default:
		return []tea.Msg{msg}
	}
}
