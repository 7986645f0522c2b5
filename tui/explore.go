package tui

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/keys"
	"github.com/leaserace/leaserace/tui/styles"
	"github.com/leaserace/leaserace/tui/text"
)

// needsLive is what x says when there is no server to sweep on.
const needsLive = "the map needs a live PostgreSQL run: a replay only has the recorded timelines"

// explorer is the x overlay: the verdict of every knob setting (rows) at
// every value of one named time (columns), with a cell cursor. It is a
// value like the model; grid is never changed once built, so copies share it.
type explorer struct {
	open bool
	grid *exploreGrid
	// row and col are the cursor, indexes into grid.rows and grid.values.
	row, col int
}

// exploreGrid is one sweep laid out as the overlay draws it.
type exploreGrid struct {
	// scenario and source say which scenario was swept; a second x on the
	// same one reopens the grid without sweeping again, since a sweep sets
	// the varied time itself and the other times never change in the TUI.
	scenario, source string
	vary             batch.Vary
	rows             []scenario.Knobs
	values           []int64
	cells            [][]batch.ExploreCell // [row][col]; Verdict "" = missing
	effW             int                   // widest effect count, in digits
	took             time.Duration
}

func newExploreGrid(sc *scenario.Scenario, res batch.ExploreResult) (*exploreGrid, error) {
	if len(res.Vary) != 1 {
		return nil, fmt.Errorf("the map shows one varied time, not %d", len(res.Vary))
	}
	v := res.Vary[0]
	g := &exploreGrid{scenario: sc.Name, source: sc.Source, vary: v, rows: scenario.AllKnobs(), effW: 1, took: res.Took}
	for t := v.From; t <= v.To; t++ {
		g.values = append(g.values, t)
	}
	g.cells = make([][]batch.ExploreCell, len(g.rows))
	for i := range g.cells {
		g.cells[i] = make([]batch.ExploreCell, len(g.values))
	}
	for _, c := range res.Cells {
		r := g.rowOf(scenario.Knobs{Renewal: c.Renewal, Fencing: c.Fencing})
		t, ok := c.Values[v.Name]
		if r < 0 || !ok || t < v.From || t > v.To {
			continue
		}
		g.cells[r][t-v.From] = c
		g.effW = max(g.effW, len(strconv.Itoa(c.Effects)))
	}
	return g, nil
}

func (g *exploreGrid) rowOf(k scenario.Knobs) int {
	for i, r := range g.rows {
		if r == k {
			return i
		}
	}
	return -1
}

// colOf is t's column, -1 when t is outside the sweep.
func (g *exploreGrid) colOf(t int64) int {
	if t < g.vary.From || t > g.vary.To {
		return -1
	}
	return int(t - g.vary.From)
}

// of reports whether the grid is a sweep of sc.
func (g *exploreGrid) of(sc *scenario.Scenario, v batch.Vary) bool {
	return g != nil && g.scenario == sc.Name && g.source == sc.Source && g.vary == v
}

// exploreCurrent is the cell of the run on screen: its knobs' row and its
// varied time's column (-1 when off the map).
func (m screen) exploreCurrent() (row, col int) {
	g := m.explore.grid
	row, col = g.rowOf(m.snap.view.Knobs), -1
	if t, ok := m.snap.sc.Times[g.vary.Name]; ok {
		col = g.colOf(t)
	}
	return row, col
}

// openExplore shows the map, sweeping first unless the last sweep was of
// this scenario. What cannot be mapped is said on the status line.
func (m Model) openExplore() (tea.Model, tea.Cmd) {
	m.playing = false
	sc := m.snap.sc
	if !m.run.Live() || m.replay != nil {
		m.status = []text.Span{text.Plain(needsLive + ".")}
		return m, nil
	}
	if len(sc.Times) == 0 {
		m.status = []text.Span{text.Plain(fmt.Sprintf("Scenario %s has no named times, so there is nothing to sweep and no map: its events happen at fixed times.", sc.Name))}
		return m, nil
	}
	vary, err := batch.DefaultVary(sc)
	if err == nil {
		err = batch.CheckVary(sc, vary)
	}
	if err != nil {
		m.status = []text.Span{text.Plain(fmt.Sprintf("No map for %s: %v.", sc.Name, err))}
		return m, nil
	}
	if m.explore.grid.of(sc, vary[0]) {
		return m.showExplore(), nil
	}
	if (m.busy && m.busyOp.kind == opExplore) || m.queued(opExplore) {
		return m, nil
	}
	return m.enqueue(op{kind: opExplore})
}

func (m Model) queued(k opKind) bool {
	for _, o := range m.queue {
		if o.kind == k {
			return true
		}
	}
	return false
}

// showExplore opens the overlay with the cursor on the run on screen (or
// the nearest cell to it).
func (m Model) showExplore() Model {
	row, col := m.exploreCurrent()
	m.explore.open, m.explore.row, m.explore.col = true, max(row, 0), col
	if col < 0 {
		m.explore.col = 0
		if t := m.snap.sc.Times[m.explore.grid.vary.Name]; t > m.explore.grid.vary.To {
			m.explore.col = len(m.explore.grid.values) - 1
		}
	}
	return m
}

// exploreKey moves the cursor, jumps or closes while the map is open.
func (m Model) exploreKey(km tea.KeyMsg) (tea.Model, tea.Cmd) {
	k, g := keys.DefaultExplorer(), m.explore.grid
	switch {
	case key.Matches(km, k.Close):
		m.explore.open = false
	case key.Matches(km, k.Left):
		m.explore.col = max(0, m.explore.col-1)
	case key.Matches(km, k.Right):
		m.explore.col = min(len(g.values)-1, m.explore.col+1)
	case key.Matches(km, k.Up):
		m.explore.row = max(0, m.explore.row-1)
	case key.Matches(km, k.Down):
		m.explore.row = min(len(g.rows)-1, m.explore.row+1)
	case key.Matches(km, k.Jump):
		m.explore.open = false
		return m.enqueue(op{kind: opJump, name: g.vary.Name, at: g.values[m.explore.col], knobs: g.rows[m.explore.row]})
	}
	return m, nil
}

// explore sweeps the scenario on show on the server, as x asks.
func (e opEnv) explore(ctx context.Context) doneMsg {
	sc := e.run.Scenario()
	if !e.run.Live() || e.replay {
		return doneMsg{err: errors.New(needsLive)}
	}
	vary, err := batch.DefaultVary(sc)
	if err != nil {
		return doneMsg{err: fmt.Errorf("no map for %s: %w", sc.Name, err)}
	}
	res, err := batch.Explore(ctx, e.s.dsn, sc, vary, nil)
	if err != nil {
		return doneMsg{err: fmt.Errorf("could not map %s's %s: %w", sc.Name, vary[0].Name, err)}
	}
	g, err := newExploreGrid(sc, res)
	if err != nil {
		return doneMsg{err: err}
	}
	return doneMsg{grid: g}
}

// jump switches the live run to the cell o names (the scenario with one
// time moved, under other knobs) and replays it to the time on screen.
func (e opEnv) jump(ctx context.Context, o op) doneMsg {
	r := e.run
	if !r.Live() || e.replay {
		return doneMsg{err: errors.New(needsLive)}
	}
	sc, from := r.Scenario(), r.Knobs()
	variant, err := sc.WithTimes(map[string]int64{o.name: o.at})
	if err != nil {
		return doneMsg{err: fmt.Errorf("cannot move %s to %d: %w", o.name, o.at, err)}
	}
	v := e.shown.view
	if err := r.Replace(ctx, variant, o.knobs); err != nil {
		return doneMsg{err: fmt.Errorf("could not switch the run to %s=%d: %w", o.name, o.at, err)}
	}
	// Event counts differ between variants, so go back by time, except at
	// the very start where nothing had run.
	if v.Pos == 0 && v.Now <= e.shown.start {
		err = r.Seek(ctx, 0)
	} else {
		err = r.SeekTime(ctx, v.Now)
	}
	if err != nil {
		return doneMsg{err: err}
	}
	line := fmt.Sprintf("explore: %s %d → %d, knobs %s", o.name, sc.Times[o.name], o.at, o.knobs)
	if from != o.knobs {
		line = fmt.Sprintf("explore: %s %d → %d, knobs %s → %s", o.name, sc.Times[o.name], o.at, from, o.knobs)
	}
	return doneMsg{snap: takeSnapshot(r), moved: true, change: &engine.Change{From: from, To: o.knobs, Lines: []string{line}}}
}

// exploreLines draws the map in w cells: a title, a tick line with the
// values, a marker line, a row per knob setting, then the cursor's cell in
// words and a legend. Columns that do not fit scroll with the cursor.
func (m screen) exploreLines(w int) []string {
	g, st := m.explore.grid, m.st
	curRow, curCol := m.exploreCurrent()
	labelW := 0
	for _, k := range g.rows {
		labelW = max(labelW, len(k.String()))
	}
	labelW += 3 // "▶ " before, a space after
	cellW := g.effW + 3
	n := len(g.values)
	fits := max(1, (w-labelW)/cellW)
	lo := 0
	if n > fits {
		lo = min(max(0, m.explore.col-fits/2), n-fits)
	}
	hi := min(n, lo+fits) // exclusive

	v := g.vary
	title := []text.Span{text.Styled(&st.Title, "Map of "+g.scenario), text.Plain(fmt.Sprintf(": %s %d..%d × knob setting.", v.Name, v.From, v.To))}
	if lo > 0 || hi < n {
		title = append(title, text.Plain(fmt.Sprintf(" Showing %d..%d; ←/→ scroll.", g.values[lo], g.values[hi-1])))
	}
	out := text.Wrap(title, w, "", "  ")

	// Ticks every few columns, wide enough apart for the longest value.
	valW := len(strconv.FormatInt(v.To, 10))
	step := 1
	for _, s := range []int{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000} {
		step = s
		if s*cellW > valW {
			break
		}
	}
	ticks := []byte(strings.Repeat(" ", labelW+(hi-lo)*cellW))
	for j := lo; j < hi; j++ {
		at := labelW + (j-lo)*cellW + 1
		if g.values[j]%int64(step) == 0 && at+valW <= len(ticks) {
			copy(ticks[at:], strconv.FormatInt(g.values[j], 10))
		}
	}
	out = append(out, strings.TrimRight(string(ticks), " "))
	mark := []text.Span{text.Plain(strings.Repeat(" ", labelW))}
	switch {
	case curCol >= lo && curCol < hi:
		pad := (curCol-lo)*cellW + 1
		say := fmt.Sprintf("▼ %s=%d on screen", v.Name, g.values[curCol])
		if labelW+pad+text.Width(say) > w {
			say = "▼"
		}
		mark = append(mark, text.Plain(strings.Repeat(" ", pad)), text.Styled(&st.Cursor, say))
	case curCol >= 0:
		mark = append(mark, text.Styled(&st.Faint, fmt.Sprintf("%s=%d on screen is off to the %s", v.Name, g.values[curCol], map[bool]string{true: "left", false: "right"}[curCol < lo])))
	default:
		mark = append(mark, text.Styled(&st.Faint, fmt.Sprintf("%s=%d on screen is outside the window", v.Name, m.snap.sc.Times[v.Name])))
	}
	out = append(out, text.Line(mark))

	for i, k := range g.rows {
		var b strings.Builder
		label := fmt.Sprintf("  %-*s", labelW-2, k.String())
		if i == curRow {
			b.WriteString(st.Selected.Render(fmt.Sprintf("▶ %-*s", labelW-2, k.String())))
		} else {
			b.WriteString(label)
		}
		for j := lo; j < hi; j++ {
			b.WriteString(m.exploreCell(g, i, j, i == curRow && j == curCol))
		}
		out = append(out, b.String())
	}

	c := g.cells[m.explore.row][m.explore.col]
	say := "not run"
	switch c.Verdict {
	case scenario.VerdictConflict:
		say = fmt.Sprintf("✗ conflict, %d effects: an older epoch's write was accepted after a newer one's", c.Effects)
	case scenario.VerdictBlocked:
		say = fmt.Sprintf("⊘ blocked, %d effects: a valid write was refused", c.Effects)
	case "":
	default:
		say = fmt.Sprintf("✓ %s, %d effects", c.Verdict, c.Effects)
	}
	detail := []text.Span{
		text.Styled(&st.Selected, fmt.Sprintf("[%s, %s=%d]", g.rows[m.explore.row], v.Name, g.values[m.explore.col])),
		text.Plain(" " + say + fmt.Sprintf(". enter runs it here, replayed to t=%d; esc closes.", m.snap.view.Now)),
	}
	out = append(out, text.Wrap(detail, w, "", "  ")...)
	legend := []text.Span{
		text.Styled(&st.Good, "✓n"), text.Plain(" safe, "), text.Styled(&st.Warn, "✗n"), text.Plain(" conflict, "),
		text.Styled(&st.Alarm, "⊘n"), text.Plain(" blocked (a valid write refused), n effects accepted · "),
		text.Plain("▶ ▼ < > the run on screen · [ ] cursor"),
	}
	if g.took > 0 {
		legend = append(legend, text.Styled(&st.Faint, fmt.Sprintf(" · %d runs in %s", len(g.rows)*len(g.values), g.took.Round(time.Millisecond))))
	}
	return append(out, text.Wrap(legend, w, "", "  ")...)
}

// exploreCell draws one cell cellW wide: brackets for the cursor, angle
// brackets for the run on screen, so both show without colour.
func (m screen) exploreCell(g *exploreGrid, i, j int, current bool) string {
	st := m.st
	body, ink := verdictCell(st, g.cells[i][j])
	body = fmt.Sprintf("%-*s", g.effW+1, body)
	open, shut := " ", " "
	switch {
	case i == m.explore.row && j == m.explore.col:
		open, shut = "[", "]"
	case current:
		open, shut = "<", ">"
	}
	if open != " " {
		return st.Cursor.Render(open) + ink.Render(body) + st.Cursor.Render(shut)
	}
	return " " + ink.Render(body) + " "
}

// verdictCell is one explore cell as both maps draw it: the verdict's
// glyph and the effects accepted, ✓ safe, ✗ conflict, ⊘ blocked (a valid
// write refused), ? not run, so it reads without colour.
func verdictCell(st *styles.Styles, c batch.ExploreCell) (string, *styles.Ink) {
	n := strconv.Itoa(c.Effects)
	switch c.Verdict {
	case "":
		return "?", &st.Faint
	case scenario.VerdictConflict:
		return "✗" + n, &st.Warn
	case scenario.VerdictBlocked:
		return "⊘" + n, &st.Alarm
	}
	return "✓" + n, &st.Good
}

// mapLegend says what the cells mean, a line per verdict.
func mapLegend(st *styles.Styles) [][]text.Span {
	return [][]text.Span{
		{text.Styled(&st.Good, "✓n"), text.Plain("  safe: n effects accepted, none stale, no valid write refused")},
		{text.Styled(&st.Warn, "✗n"), text.Plain("  conflict: n effects accepted, a stale write among them")},
		{text.Styled(&st.Alarm, "⊘n"), text.Plain("  blocked: n accepted, a valid write refused (strict fencing)")},
	}
}
