package tui

import (
	"fmt"
	"strconv"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine/search"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/text"
)

// Play mode: instead of the next scripted event, the learner picks the
// next move from the moves enabled now; each runs its real SQL. The goal
// panel says which goals the path so far reached.

// togglePlayMode switches play mode on or off.
func (m Model) togglePlayMode() (tea.Model, tea.Cmd) {
	if !m.snap.live {
		m.status = []text.Span{text.Plain("Play mode needs a live PostgreSQL run: a replay can only show what was recorded.")}
		return m, nil
	}
	m.playing = false
	m.play.on = !m.play.on
	m.play.at = 0
	if m.play.on {
		m.status = []text.Span{text.Plain("Play mode: ↑/↓ choose a move, enter or 1–9 plays it, ← steps back to choose differently, p leaves.")}
		return m.searchGoals()
	}
	m.status = []text.Span{text.Plain("Play mode off: → steps through the log as it stands.")}
	return m, nil
}

// playKey handles a key in play mode; ok is false for keys it leaves to
// the ordinary bindings.
func (m Model) playKey(km tea.KeyMsg) (tea.Model, tea.Cmd, bool) {
	opts := m.snap.options
	switch {
	case key.Matches(km, m.keys.MenuUp):
		if m.play.at > 0 {
			m.play.at--
		}
		return m, nil, true
	case key.Matches(km, m.keys.MenuDown):
		if m.play.at < len(opts)-1 {
			m.play.at++
		}
		return m, nil, true
	case key.Matches(km, m.keys.Choose):
		if m.play.at < len(opts) {
			next, cmd := m.enqueue(op{kind: opPlayMove, move: opts[m.play.at].Move})
			return next, cmd, true
		}
		return m, nil, true
	}
	if n, err := strconv.Atoi(km.String()); err == nil && n >= 1 && n <= min(9, len(opts)) {
		m.play.at = n - 1
		next, cmd := m.enqueue(op{kind: opPlayMove, move: opts[n-1].Move})
		return next, cmd, true
	}
	return m, nil, false
}

// askBefore holds o back behind the scenario's question, when the move o
// would make asks one and questions are on.
func (m Model) askBefore(o op) (Model, bool) {
	if m.noAsk || o.asked || m.ask != nil && m.ask.pick < 0 {
		return m, false
	}
	pos := m.snap.view.Pos
	var mv scenario.Move
	switch {
	case o.kind == opPlayMove:
		mv = o.move
	case o.kind == opNext && pos < len(m.snap.log):
		mv = m.snap.log[pos]
	default:
		return m, false
	}
	a := world.AskFor(m.snap.sc, m.snap.log[:pos], mv)
	if a == nil {
		return m, false
	}
	m.ask = &askPrompt{ask: *a, pick: -1, then: o, t: mv.T}
	m.playing = false
	return m, true
}

// answerKey takes a choice for the question on screen and runs the move
// it held back.
func (m Model) answerKey(km tea.KeyMsg) (tea.Model, tea.Cmd, bool) {
	a := m.ask
	if a == nil || a.pick >= 0 {
		return m, nil, false
	}
	if key.Matches(km, m.keys.Skip) {
		held := a.then
		held.asked = true
		m.ask = nil
		next, cmd := m.start(held)
		return next, cmd, true
	}
	n, err := strconv.Atoi(km.String())
	if err != nil || n < 1 || n > len(a.ask.Choices) {
		// Only a choice (or esc) moves on; quitting still works.
		return m, nil, !key.Matches(km, m.keys.Quit)
	}
	c := *a
	c.pick = n - 1
	c.then.asked = true
	m.ask = &c
	next, cmd := m.start(c.then)
	return next, cmd, true
}

// reveal judges the answer once the held move ran, from the step's real
// result; it reports whether there was an answer to judge.
func (m *Model) reveal(st *transcript.Step) bool {
	a := m.ask
	if a == nil || a.pick < 0 || a.fact != "" || st == nil {
		return false
	}
	c := *a
	c.fact = world.Fact(c.ask.About, *st, m.snap.sc.Resource.Epoch)
	if c.fact == "" {
		c.fact = "(nothing: the step made no call)"
	}
	c.answer, _ = c.ask.Right(c.fact)
	right := c.answer != "" && c.ask.Choices[c.pick] == c.answer
	m.ask = &c
	m.tally.Asked++
	if right {
		m.tally.Right++
	}
	m.tally.Answers = append(m.tally.Answers, transcript.AskAnswer{
		T: st.T, Question: c.ask.Question, Chose: c.ask.Choices[c.pick], Answer: c.fact, Right: right,
	})
	return true
}

// playLines is play mode's menu: the moves enabled now, in words.
func (m screen) playLines(w int) []string {
	st := m.st
	opts := m.snap.options
	head := []text.Span{text.Styled(&st.Title, "Your move"), text.Plain(fmt.Sprintf(" at t=%d", m.snap.view.Now))}
	if len(opts) == 0 {
		head = append(head, text.Plain(": nothing can happen any more. ← steps back to choose differently."))
		return text.Wrap(head, w, "", "  ")
	}
	out := text.Wrap(head, w, "", "  ")
	for i, o := range opts {
		num := "  "
		if i < 9 {
			num = strconv.Itoa(i+1) + " "
		}
		first, ink := "  ", &st.Value
		if i == m.play.at {
			first, ink = "▶ ", &st.Selected
		}
		line := []text.Span{text.Styled(ink, num), text.Plain(o.Words)}
		if o.Scripted {
			line = append(line, text.Styled(&st.Faint, " ·scripted"))
		}
		out = append(out, text.Wrap(line, w, first, "    ")...)
	}
	return out
}

// goalLines is the goal panel: each goal, reached or not, and the moves
// the path on screen used to reach it.
func (m screen) goalLines(w int) []string {
	st := m.st
	var out []string
	out = append(out, text.Wrap([]text.Span{text.Styled(&st.Title, "Goals"), text.Plain(" under " + m.snap.view.Knobs.String())}, w, "", "  ")...)
	for _, g := range m.snap.goals {
		var p []text.Span
		reach, res, searched := m.goalReach(g.Goal.ID)
		par := ""
		if searched && reach.Reachable() {
			par = fmt.Sprintf(" (par %d)", reach.Par)
		}
		switch {
		case g.Reached:
			p = append(p, text.Styled(&st.Good, "✓ "), text.Plain(g.Goal.Text), text.Styled(&st.Good, fmt.Sprintf(" — reached in %d moves%s", g.Moves, par)))
		case searched && !reach.Reachable():
			p = append(p, text.Styled(&st.Faint, "✗ "), text.Plain(g.Goal.Text), text.Styled(&st.Faint, fmt.Sprintf(" — impossible under %s + %s: 0 of %s runs", m.snap.view.Knobs.Renewal.Describe(), m.snap.view.Knobs.Fencing, res.Runs)))
		case searched:
			p = append(p, text.Styled(&st.Faint, "· "), text.Plain(g.Goal.Text), text.Styled(&st.Faint, fmt.Sprintf(" — par %d; %s of %s runs reach it", reach.Par, reach.Runs, res.Runs)))
		default:
			p = append(p, text.Styled(&st.Faint, "· "), text.Plain(g.Goal.Text), text.Styled(&st.Faint, " — not reached yet"))
		}
		out = append(out, text.Wrap(p, w, "", "  ")...)
	}
	switch {
	case m.search != nil && m.search.running:
		out = append(out, text.Wrap([]text.Span{text.Styled(&st.Faint, "  exploring every schedule on the server for par…")}, w, "", "  ")...)
	case m.search != nil && m.search.err != nil:
		out = append(out, text.Wrap([]text.Span{text.Styled(&st.Warn, "  par unknown: "), text.Plain(m.search.err.Error())}, w, "", "  ")...)
	}
	return out
}

// askLines is the question on screen: its choices while it waits, then
// whether the choice was right and what really happened.
func (m screen) askLines(w int) []string {
	a, st := m.ask, m.st
	if a == nil {
		return nil
	}
	out := text.Wrap([]text.Span{text.Styled(&st.Title, "Predict"), text.Plain(fmt.Sprintf(" (t=%d): ", a.t)), text.Plain(a.ask.Question)}, w, "", "  ")
	if a.pick < 0 {
		var p []text.Span
		for i, c := range a.ask.Choices {
			if i > 0 {
				p = append(p, text.Plain(" · "))
			}
			p = append(p, text.Styled(&st.Selected, strconv.Itoa(i+1)), text.Plain(" "+c))
		}
		p = append(p, text.Styled(&st.Faint, " · esc skips the question"))
		return append(out, text.Wrap(p, w, "  ", "  ")...)
	}
	if a.fact == "" {
		return append(out, text.Wrap([]text.Span{text.Plain("You said " + a.ask.Choices[a.pick] + ". Running the step…")}, w, "  ", "  ")...)
	}
	chose := a.ask.Choices[a.pick]
	var p []text.Span
	switch {
	case a.answer == chose:
		p = []text.Span{text.Styled(&st.Good, "✓ Right: "), text.Plain(fmt.Sprintf("%s — %s.", chose, factWords(a.ask.About, a.fact)))}
	default:
		p = []text.Span{text.Styled(&st.Warn, "✗ Not quite: "), text.Plain(fmt.Sprintf("you said %s, but %s.", chose, factWords(a.ask.About, a.fact)))}
	}
	p = append(p, text.Plain(" Why: see what just happened below."))
	return append(out, text.Wrap(p, w, "  ", "  ")...)
}

// factWords says what a question's fact is about.
func factWords(about scenario.About, fact string) string {
	switch about {
	case scenario.AboutTag:
		return "PostgreSQL answered " + fact
	case scenario.AboutResult:
		return "the step's result: " + fact
	case scenario.AboutVerdict:
		return "the verdict after it: " + fact
	case scenario.AboutOwner:
		return "the lease's owner after it: " + fact
	case scenario.AboutAccepted:
		return "did the resource accept it? " + fact
	}
	return fact
}

// tallyWords is the predictions so far, for the end of a run.
func (m screen) tallyWords() string {
	if m.tally.Asked == 0 {
		return ""
	}
	return fmt.Sprintf("Predictions: %d of %d right.", m.tally.Right, m.tally.Asked)
}

// searchState is the exhaustive search of the schedules the goal panel
// quotes: for which scenario and knobs, and what it found.
type searchState struct {
	key     string
	running bool
	res     *search.Result
	err     error
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
	if !m.play.on || !m.snap.live || m.remote && m.s.orders == nil || m.snap.sc == nil {
		return m, nil
	}
	sc, k := m.snap.sc, m.snap.view.Knobs
	key := searchKey(sc, k)
	if m.search != nil && m.search.key == key {
		return m, nil
	}
	o := m.s.ordersFor()
	if o == nil {
		return m, nil
	}
	m.search = &searchState{key: key, running: true}
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
	if m.search == nil || m.search.key != d.key {
		return m
	}
	ss := &searchState{key: d.key, err: d.err}
	if d.err == nil {
		res := d.res
		ss.res = &res
	}
	m.search = ss
	return m
}

// goalReach is what the search found for goal id, if it has finished.
func (m screen) goalReach(id string) (search.GoalReach, *search.Result, bool) {
	if m.search == nil || m.search.res == nil {
		return search.GoalReach{}, nil, false
	}
	for _, g := range m.search.res.Goals {
		if g.Goal.ID == id {
			return g, m.search.res, true
		}
	}
	return search.GoalReach{}, nil, false
}
