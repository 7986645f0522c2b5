package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/exploremap"
	"github.com/leaserace/leaserace/tui/keys"
	"github.com/leaserace/leaserace/tui/screen"
	"github.com/leaserace/leaserace/tui/text"
)

// needsLive is what x says when there is no server to sweep on.
const needsLive = "the map needs a live PostgreSQL run: a replay only has the recorded timelines"

// openExplore shows the map, sweeping first unless the last sweep was of
// this scenario. What cannot be mapped is said on the status line.
func (m Model) openExplore() (tea.Model, tea.Cmd) {
	m.Playing = false
	sc := m.Snap.Scenario
	if !m.run.Live() || m.Replay != nil {
		m.Status = []text.Span{text.Plain(needsLive + ".")}
		return m, nil
	}
	if len(sc.Times) == 0 {
		m.Status = []text.Span{text.Plain(fmt.Sprintf("Scenario %s has no named times, so there is nothing to sweep and no map: its events happen at fixed times.", sc.Name))}
		return m, nil
	}
	vary, err := batch.DefaultVary(sc)
	if err == nil {
		err = batch.CheckVary(sc, vary)
	}
	if err != nil {
		m.Status = []text.Span{text.Plain(fmt.Sprintf("No map for %s: %v.", sc.Name, err))}
		return m, nil
	}
	if m.Explore.Grid.Of(sc, vary[0]) {
		return m.showExplore(), nil
	}
	if busyWith[sweepMap](m) {
		return m, nil
	}
	return m.enqueue(sweepMap{})
}

// showExplore opens the overlay with the cursor on the run on screen (or
// the nearest cell to it).
func (m Model) showExplore() Model {
	row, col := m.Explore.Current(m.Snap.View.Knobs, m.Snap.Scenario.Times)
	m.Explore.Open, m.Explore.Row, m.Explore.Col = true, max(row, 0), col
	if col < 0 {
		m.Explore.Col = 0
		if t := m.Snap.Scenario.Times[m.Explore.Grid.Vary.Name]; t > m.Explore.Grid.Vary.To {
			m.Explore.Col = len(m.Explore.Grid.Values) - 1
		}
	}
	return m
}

// exploreKey moves the cursor, jumps or closes while the map is open.
func (m Model) exploreKey(km tea.KeyMsg) (tea.Model, tea.Cmd) {
	k, g := keys.DefaultExplorer(), m.Explore.Grid
	switch {
	case key.Matches(km, k.Close):
		m.Explore.Open = false
	case key.Matches(km, k.Left):
		m.Explore.Col = max(0, m.Explore.Col-1)
	case key.Matches(km, k.Right):
		m.Explore.Col = min(len(g.Values)-1, m.Explore.Col+1)
	case key.Matches(km, k.Up):
		m.Explore.Row = max(0, m.Explore.Row-1)
	case key.Matches(km, k.Down):
		m.Explore.Row = min(len(g.Rows)-1, m.Explore.Row+1)
	case key.Matches(km, k.Jump):
		m.Explore.Open = false
		return m.enqueue(jumpTo{name: g.Vary.Name, at: g.Values[m.Explore.Col], knobs: g.Rows[m.Explore.Row]})
	}
	return m, nil
}

// sweepMap sweeps the scenario on show on the server, as x asks, and
// opens the map when it is still of that scenario.
type sweepMap struct{}

func (sweepMap) String() string { return "explore map" }

func (sweepMap) run(ctx context.Context, m Model) outcome {
	sc := m.run.Scenario()
	if !m.run.Live() || m.Replay != nil {
		return failed(errors.New(needsLive))
	}
	vary, err := batch.DefaultVary(sc)
	if err != nil {
		return failed(fmt.Errorf("no map for %s: %w", sc.Name, err))
	}
	res, err := batch.Explore(ctx, m.s.dsn, sc, vary, nil)
	if err != nil {
		return failed(fmt.Errorf("could not map %s's %s: %w", sc.Name, vary[0].Name, err))
	}
	g, err := exploremap.NewGrid(sc, res)
	if err != nil {
		return failed(err)
	}
	return outcome{apply: func(m *Model) tea.Cmd {
		m.Explore.Grid = g
		if g.Of(m.Snap.Scenario, g.Vary) {
			*m = m.showExplore()
		}
		return nil
	}}
}

// jumpTo switches the live run to a cell of the map (the scenario with
// the time name moved to at, under knobs) and replays it to the time on
// screen.
type jumpTo struct {
	name  string
	at    int64
	knobs scenario.Knobs
}

func (jumpTo) String() string { return "explore jump" }

func (o jumpTo) run(ctx context.Context, m Model) outcome {
	r := m.run
	if !r.Live() || m.Replay != nil {
		return failed(errors.New(needsLive))
	}
	sc, from := r.Scenario(), r.Knobs()
	variant, err := sc.WithTimes(map[string]int64{o.name: o.at})
	if err != nil {
		return failed(fmt.Errorf("cannot move %s to %d: %w", o.name, o.at, err))
	}
	v := m.Snap.View
	if err := r.Replace(ctx, variant, o.knobs); err != nil {
		return failed(fmt.Errorf("could not switch the run to %s=%d: %w", o.name, o.at, err))
	}
	// Event counts differ between variants, so go back by time, except at
	// the very start where nothing had run.
	if v.Pos == 0 && v.Now <= m.Snap.Start {
		err = r.Seek(ctx, 0)
	} else {
		err = r.SeekTime(ctx, v.Now)
	}
	if err != nil {
		return failed(err)
	}
	line := fmt.Sprintf("explore: %s %d → %d, knobs %s", o.name, sc.Times[o.name], o.at, o.knobs)
	if from != o.knobs {
		line = fmt.Sprintf("explore: %s %d → %d, knobs %s → %s", o.name, sc.Times[o.name], o.at, from, o.knobs)
	}
	ch := engine.Change{From: from, To: o.knobs, Lines: []string{line}}
	return outcome{snap: screen.SnapshotOf(r), moved: true, apply: func(m *Model) tea.Cmd {
		// The run now plays another variant of the scenario.
		m.logEntry(transcript.PresenterScenario, &ch)
		m.Status = []text.Span{text.Styled(&m.Styles.Changed, strings.Join(ch.Lines, " · ")), text.Plain(fmt.Sprintf(" · replayed to t=%d", m.Snap.View.Now))}
		return nil
	}}
}
