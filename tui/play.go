package tui

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine/search"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/export"
	"github.com/leaserace/leaserace/tui/screen"
	"github.com/leaserace/leaserace/tui/text"
)

// Play mode: instead of the next scripted event, the learner picks the
// next move from the moves enabled now; each runs its real SQL. The goal
// panel says which goals the path so far reached.

// togglePlayMode switches play mode on or off.
func (m Model) togglePlayMode() (tea.Model, tea.Cmd) {
	if !m.Snap.Live {
		m.Status = []text.Span{text.Plain("Play mode needs a live PostgreSQL run: a replay can only show what was recorded.")}
		return m, nil
	}
	m.Playing = false
	m.Play.On = !m.Play.On
	m.Play.At = 0
	if m.Play.On {
		m.Status = playHint()
		return m.searchGoals()
	}
	m.Status = []text.Span{text.Plain("Play mode off: → steps through the log as it stands.")}
	return m, nil
}

// playHint says how play mode works, from its first frame.
func playHint() []text.Span {
	return []text.Span{text.Plain("Play mode: ↑/↓ choose a move, enter (or its number; 0 is the tenth) plays it, ← steps back to choose differently, p leaves.")}
}

// playKey handles a key in play mode; ok is false for keys it leaves to
// the ordinary bindings.
func (m Model) playKey(km tea.KeyMsg) (tea.Model, tea.Cmd, bool) {
	opts := m.Snap.Options
	switch {
	case key.Matches(km, m.Keys.MenuUp):
		if m.Play.At > 0 {
			m.Play.At--
		}
		return m, nil, true
	case key.Matches(km, m.Keys.MenuDown):
		if m.Play.At < len(opts)-1 {
			m.Play.At++
		}
		return m, nil, true
	case key.Matches(km, m.Keys.Choose):
		if m.Play.At < len(opts) {
			next, cmd := m.enqueue(playMove{move: opts[m.Play.At].Move})
			return next, cmd, true
		}
		return m, nil, true
	}
	if n, err := strconv.Atoi(km.String()); err == nil && len(km.String()) == 1 {
		if n == 0 {
			n = 10 // 0 is the tenth entry, as on a keyboard's row
		}
		if n <= len(opts) {
			m.Play.At = n - 1
			next, cmd := m.enqueue(playMove{move: opts[n-1].Move})
			return next, cmd, true
		}
	}
	return m, nil, false
}

// playMove plays a move the learner chose from the menu.
type playMove struct{ move scenario.Move }

func (playMove) String() string { return "move" }

func (o playMove) moveOn(screen.Snapshot) (scenario.Move, bool) { return o.move, true }

func (o playMove) run(ctx context.Context, m Model) outcome {
	st, err := m.run.Play(ctx, o.move)
	if err != nil {
		return failed(err)
	}
	before := m.Snap
	return outcome{snap: screen.SnapshotOf(m.run), moved: true, apply: func(m *Model) tea.Cmd {
		e := m.logEntry(transcript.PresenterPlay, nil)
		e.Step = &st
		// A move where the path had another, after stepping back: a fork.
		if pos := before.View.Pos; before.Scenario == m.Snap.Scenario && pos < len(before.Log) && !before.Log[pos].Same(st.Move()) {
			e.Fork = before.Log[pos].String()
		}
		return m.answer(&st)
	}}
}

// mover is an op that makes a move, which the scenario may ask about
// first: moveOn is the move it would make on the snapshot shown.
type mover interface {
	moveOn(s screen.Snapshot) (scenario.Move, bool)
}

// askBefore holds o back behind the scenario's question, when the move o
// would make asks one and questions are on.
func (m Model) askBefore(o op) (Model, bool) {
	if m.noAsk || m.Ask != nil && m.Ask.Pick < 0 {
		return m, false
	}
	mo, ok := o.(mover)
	if !ok {
		return m, false
	}
	mv, ok := mo.moveOn(m.Snap)
	if !ok {
		return m, false
	}
	pos := m.Snap.View.Pos
	a := world.AskFor(m.Snap.Scenario, m.Snap.Log[:pos], mv)
	if a == nil {
		return m, false
	}
	m.Ask, m.held = &screen.Prompt{Ask: *a, Pick: -1, T: mv.T}, o
	m.Playing = false
	return m, true
}

// answerKey takes a choice for the question on screen and runs the move
// it held back, without asking again.
func (m Model) answerKey(km tea.KeyMsg) (tea.Model, tea.Cmd, bool) {
	a := m.Ask
	if a == nil || a.Pick >= 0 {
		return m, nil, false
	}
	if key.Matches(km, m.Keys.Skip) {
		m.Ask = nil
		next, cmd := m.exec(m.held)
		return next, cmd, true
	}
	n, err := strconv.Atoi(km.String())
	if err != nil || n < 1 || n > len(a.Ask.Choices) {
		// Only a choice (or esc) moves on; quitting still works.
		return m, nil, !key.Matches(km, m.Keys.Quit)
	}
	c := *a
	c.Pick = n - 1
	m.Ask = &c
	next, cmd := m.exec(m.held)
	return next, cmd, true
}

// answer judges the answer to the question on screen from the step the
// held move took, and tells the room the attendee's prediction.
func (m *Model) answer(st *transcript.Step) tea.Cmd {
	if !m.reveal(st) {
		return nil
	}
	a := m.Ask
	return m.vote(questionKey(m.Snap.Scenario.Name, a.T, a.Ask.Question), a.Ask.Choices[a.Pick])
}

// reveal judges the answer once the held move ran, from the step's real
// result; it reports whether there was an answer to judge.
func (m *Model) reveal(st *transcript.Step) bool {
	a := m.Ask
	if a == nil || a.Pick < 0 || a.Fact != "" || st == nil {
		return false
	}
	c := *a
	c.Fact = world.Fact(c.Ask.About, *st, m.Snap.Scenario.Resource.Fence)
	if c.Fact == "" {
		c.Fact = "(nothing: the step made no call)"
	}
	c.Answer, _ = c.Ask.Right(c.Fact)
	right := c.Answer != "" && c.Ask.Choices[c.Pick] == c.Answer
	m.Ask = &c
	for _, prev := range m.Tally.Answers {
		if prev.T == st.T && prev.Question == c.Ask.Question {
			// Asked again after a step back: the first prediction is
			// the one that counts.
			return true
		}
	}
	m.Tally.Asked++
	if right {
		m.Tally.Right++
	}
	m.Tally.Answers = append(m.Tally.Answers, transcript.AskAnswer{
		T: st.T, Question: c.Ask.Question, Chose: c.Ask.Choices[c.Pick], Answer: c.Fact, Right: right,
	})
	return true
}

// searchDoneMsg carries a finished search back to the model.
type searchDoneMsg struct {
	key string
	res search.Result
	err error
}

// searchKey names what a search covers: the scenario with its times and
// the knobs.
func searchKey(sc *scenario.Scenario, k scenario.Knobs) string {
	return fmt.Sprintf("%s %v %s", sc.Name, sc.Times, k)
}

// searchGoals starts the search of every schedule under the knobs on
// show, once per scenario and knobs, when play mode shows the goal panel.
func (m Model) searchGoals() (Model, tea.Cmd) {
	if !m.Play.On || !m.Snap.Live || m.remote && m.s.searcher == nil || m.Snap.Scenario == nil {
		return m, nil
	}
	sc, k := m.Snap.Scenario, m.Snap.View.Knobs
	key := searchKey(sc, k)
	if m.Search != nil && m.Search.Key == key {
		return m, nil
	}
	o := m.s.searchFor()
	if o == nil {
		return m, nil
	}
	m.Search = &screen.Search{Key: key, Running: true}
	s := m.s
	return m, func() tea.Msg {
		if !s.begin() {
			return nil
		}
		defer s.end()
		res, err := o.Search(s.ctx, sc, k, nil)
		return searchDoneMsg{key: key, res: res, err: err}
	}
}

// onSearchDone keeps a search's result if it is still the one on show.
func (m Model) onSearchDone(d searchDoneMsg) Model {
	if m.Search == nil || m.Search.Key != d.key {
		return m
	}
	ss := &screen.Search{Key: d.key, Err: d.err}
	if d.err == nil {
		res := d.res
		ss.Res = &res
	}
	m.Search = ss
	return m
}

// noteReached adds the goals the run on screen reached to the session's,
// once per scenario, setting and goal.
func (m *Model) noteReached() {
	sc := m.Snap.Scenario
	if sc == nil || !m.Snap.Live {
		return
	}
	k := m.Snap.View.Knobs
	for _, g := range world.GoalRecords(sc, k, m.Snap.Steps) {
		if !g.Reached || slices.ContainsFunc(m.reached, func(r export.Reached) bool {
			return r.Scenario == sc.Name && r.Goal.Knobs == k && r.Goal.ID == g.ID
		}) {
			continue
		}
		m.reached = append(m.reached, export.Reached{Scenario: sc.Name, Goal: g})
	}
}
