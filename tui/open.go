package tui

import (
	"context"
	"errors"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/screen"
	"github.com/leaserace/leaserace/tui/text"
)

// openScenario puts the named scenario on screen in place of the one
// shown, with the same knobs: the chooser (s, then enter) queues it.
type openScenario struct{ name string }

func (openScenario) String() string { return "open scenario" }

func (o openScenario) run(ctx context.Context, m Model) outcome {
	r, info, err := m.open(ctx, o.name)
	if err != nil {
		return failed(err)
	}
	return outcome{run: r, snap: screen.SnapshotOf(r), moved: true, info: info, apply: func(m *Model) tea.Cmd {
		m.Status = []text.Span{text.Plain("opened " + m.Snap.Scenario.Name)}
		if info != "" {
			m.Status = append(m.Status, text.Plain(" ("+info+")"))
		}
		m.logEntry(transcript.PresenterScenario, nil)
		return nil
	}}
}

// open starts the named scenario on the same server with the same knobs
// and, once it is ready, closes the run it replaces; in replay mode it
// shows the scenario's recordings instead. info says what did not go as
// asked.
func (m Model) open(ctx context.Context, name string) (*engine.Run, string, error) {
	k := m.Snap.View.Knobs
	if m.run != nil {
		k = m.run.Knobs()
	}
	if m.Replay != nil {
		return m.openRecorded(ctx, name, k)
	}
	sc, err := scenario.Load(name)
	if err != nil {
		return nil, "", err
	}
	nr, err := engine.Open(ctx, engine.Config{
		DSN: m.s.dsn, Scenario: sc, Knobs: k, Host: m.s.host, Who: m.s.who,
		Provider: m.s.provider, ServerVersion: m.s.serverVersion,
	})
	if err != nil {
		return nil, "", fmt.Errorf("could not open scenario %s: %w", name, err)
	}
	return m.switchTo(ctx, nr, "")
}

// openRecorded shows the recordings of a scenario at its start with knobs
// k: the replay the TUI opened with when it is of that scenario (so a
// file's own recordings come back), else the shipped ones.
func (m Model) openRecorded(ctx context.Context, name string, k scenario.Knobs) (*engine.Run, string, error) {
	var r *engine.Run
	info := ""
	if m.home != nil && m.home.Scenario().Name == name {
		r = m.home
		if r.Knobs() != k {
			if _, err := r.SetKnobs(ctx, k); err != nil {
				info = fmt.Sprintf("no recording with %s here, so %s", k, r.Knobs())
			}
		}
	} else {
		rp, err := engine.ShippedReplay(name, k)
		if err != nil {
			return nil, "", fmt.Errorf("could not open scenario %s: %w", name, err)
		}
		r = rp
	}
	if err := r.Seek(ctx, 0); err != nil {
		return nil, "", err
	}
	return m.switchTo(ctx, r, info)
}

// switchTo makes r the run on show, releasing the one it replaces unless
// that is the replay the TUI opened with.
func (m Model) switchTo(ctx context.Context, r *engine.Run, info string) (*engine.Run, string, error) {
	if r != m.home && !m.s.adopt(r) {
		// The TUI is closing; nobody will show this run.
		_ = r.Close(context.WithoutCancel(ctx))
		return nil, "", errors.New("leaserace is shutting down")
	}
	if m.run != nil && m.run != r && m.run != m.home {
		if err := m.s.release(ctx, m.run); err != nil {
			info = err.Error()
		}
	}
	return r, info, nil
}
