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
	if !m.Snap.Live {
		m.Status = []text.Span{text.Plain("Play mode needs a live PostgreSQL run: a replay can only show what was recorded.")}
		return m, nil
	}
	m.Playing = false
	m.Play.On = !m.Play.On
	m.Play.At = 0
	if m.Play.On {
		m.Status = []text.Span{text.Plain("Play mode: ↑/↓ choose a move, enter or 1–9 plays it, ← steps back to choose differently, p leaves.")}
		return m.searchGoals()
	}
	m.Status = []text.Span{text.Plain("Play mode off: → steps through the log as it stands.")}
	return m, nil
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
			next, cmd := m.enqueue(op{kind: opPlayMove, move: opts[m.Play.At].Move})
			return next, cmd, true
		}
		return m, nil, true
	}
	if n, err := strconv.Atoi(km.String()); err == nil && n >= 1 && n <= min(9, len(opts)) {
		m.Play.At = n - 1
		next, cmd := m.enqueue(op{kind: opPlayMove, move: opts[n-1].Move})
		return next, cmd, true
	}
	return m, nil, false
}

// askBefore holds o back behind the scenario's question, when the move o
// would make asks one and questions are on.
func (m Model) askBefore(o op) (Model, bool) {
	if m.noAsk || o.asked || m.Ask != nil && m.Ask.Pick < 0 {
		return m, false
	}
	pos := m.Snap.View.Pos
	var mv scenario.Move
	switch {
	case o.kind == opPlayMove:
		mv = o.move
	case o.kind == opNext && pos < len(m.Snap.Log):
		mv = m.Snap.Log[pos]
	default:
		return m, false
	}
	a := world.AskFor(m.Snap.Scenario, m.Snap.Log[:pos], mv)
	if a == nil {
		return m, false
	}
	m.Ask, m.held = &askPrompt{Ask: *a, Pick: -1, T: mv.T}, o
	m.Playing = false
	return m, true
}

// answerKey takes a choice for the question on screen and runs the move
// it held back.
func (m Model) answerKey(km tea.KeyMsg) (tea.Model, tea.Cmd, bool) {
	a := m.Ask
	if a == nil || a.Pick >= 0 {
		return m, nil, false
	}
	if key.Matches(km, m.Keys.Skip) {
		held := m.held
		held.asked = true
		m.Ask = nil
		next, cmd := m.start(held)
		return next, cmd, true
	}
	n, err := strconv.Atoi(km.String())
	if err != nil || n < 1 || n > len(a.Ask.Choices) {
		// Only a choice (or esc) moves on; quitting still works.
		return m, nil, !key.Matches(km, m.Keys.Quit)
	}
	c := *a
	c.Pick = n - 1
	m.held.asked = true
	m.Ask = &c
	next, cmd := m.start(m.held)
	return next, cmd, true
}

// reveal judges the answer once the held move ran, from the step's real
// result; it reports whether there was an answer to judge.
func (m *Model) reveal(st *transcript.Step) bool {
	a := m.Ask
	if a == nil || a.Pick < 0 || a.Fact != "" || st == nil {
		return false
	}
	c := *a
	c.Fact = world.Fact(c.Ask.About, *st, m.Snap.Scenario.Resource.Epoch)
	if c.Fact == "" {
		c.Fact = "(nothing: the step made no call)"
	}
	c.Answer, _ = c.Ask.Right(c.Fact)
	right := c.Answer != "" && c.Ask.Choices[c.Pick] == c.Answer
	m.Ask = &c
	m.Tally.Asked++
	if right {
		m.Tally.Right++
	}
	m.Tally.Answers = append(m.Tally.Answers, transcript.AskAnswer{
		T: st.T, Question: c.Ask.Question, Chose: c.Ask.Choices[c.Pick], Answer: c.Fact, Right: right,
	})
	return true
}

// playLines is play mode's menu: the moves enabled now, in words.
func (m screen) playLines(w int) []string {
	st := m.Styles
	opts := m.Snap.Options
	head := []text.Span{text.Styled(&st.Title, "Your move"), text.Plain(fmt.Sprintf(" at t=%d", m.Snap.View.Now))}
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
		if i == m.Play.At {
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
	st := m.Styles
	var out []string
	out = append(out, text.Wrap([]text.Span{text.Styled(&st.Title, "Goals"), text.Plain(" under " + m.Snap.View.Knobs.String())}, w, "", "  ")...)
	for _, g := range m.Snap.Goals {
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
			p = append(p, text.Styled(&st.Faint, "✗ "), text.Plain(g.Goal.Text), text.Styled(&st.Faint, fmt.Sprintf(" — impossible under %s + %s: 0 of %s runs", m.Snap.View.Knobs.Renewal.Describe(), m.Snap.View.Knobs.Fencing, res.Runs)))
		case searched:
			p = append(p, text.Styled(&st.Faint, "· "), text.Plain(g.Goal.Text), text.Styled(&st.Faint, fmt.Sprintf(" — par %d; %s of %s runs reach it", reach.Par, reach.Runs, res.Runs)))
		default:
			p = append(p, text.Styled(&st.Faint, "· "), text.Plain(g.Goal.Text), text.Styled(&st.Faint, " — not reached yet"))
		}
		out = append(out, text.Wrap(p, w, "", "  ")...)
	}
	switch {
	case m.Search != nil && m.Search.Running:
		out = append(out, text.Wrap([]text.Span{text.Styled(&st.Faint, "  exploring every schedule on the server for par…")}, w, "", "  ")...)
	case m.Search != nil && m.Search.Err != nil:
		out = append(out, text.Wrap([]text.Span{text.Styled(&st.Warn, "  par unknown: "), text.Plain(m.Search.Err.Error())}, w, "", "  ")...)
	}
	return out
}

// askLines is the question on screen: its choices while it waits, then
// whether the choice was right and what really happened.
func (m screen) askLines(w int) []string {
	a, st := m.Ask, m.Styles
	if a == nil {
		return nil
	}
	out := text.Wrap([]text.Span{text.Styled(&st.Title, "Predict"), text.Plain(fmt.Sprintf(" (t=%d): ", a.T)), text.Plain(a.Ask.Question)}, w, "", "  ")
	if a.Pick < 0 {
		var p []text.Span
		for i, c := range a.Ask.Choices {
			if i > 0 {
				p = append(p, text.Plain(" · "))
			}
			p = append(p, text.Styled(&st.Selected, strconv.Itoa(i+1)), text.Plain(" "+c))
		}
		p = append(p, text.Styled(&st.Faint, " · esc skips the question"))
		return append(out, text.Wrap(p, w, "  ", "  ")...)
	}
	if a.Fact == "" {
		return append(out, text.Wrap([]text.Span{text.Plain("You said " + a.Ask.Choices[a.Pick] + ". Running the step…")}, w, "  ", "  ")...)
	}
	chose := a.Ask.Choices[a.Pick]
	var p []text.Span
	switch {
	case a.Answer == chose:
		p = []text.Span{text.Styled(&st.Good, "✓ Right: "), text.Plain(fmt.Sprintf("%s — %s.", chose, factWords(a.Ask.About, a.Fact)))}
	default:
		p = []text.Span{text.Styled(&st.Warn, "✗ Not quite: "), text.Plain(fmt.Sprintf("you said %s, but %s.", chose, factWords(a.Ask.About, a.Fact)))}
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
	if m.Tally.Asked == 0 {
		return ""
	}
	return fmt.Sprintf("Predictions: %d of %d right.", m.Tally.Right, m.Tally.Asked)
}

// searchState is the exhaustive search of the schedules the goal panel
// quotes: for which scenario and knobs, and what it found.
type searchState struct {
	Key     string
	Running bool
	Res     *search.Result
	Err     error
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
	if !m.Play.On || !m.Snap.Live || m.remote && m.s.orders == nil || m.Snap.Scenario == nil {
		return m, nil
	}
	sc, k := m.Snap.Scenario, m.Snap.View.Knobs
	key := searchKey(sc, k)
	if m.Search != nil && m.Search.Key == key {
		return m, nil
	}
	o := m.s.ordersFor()
	if o == nil {
		return m, nil
	}
	m.Search = &searchState{Key: key, Running: true}
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
	ss := &searchState{Key: d.key, Err: d.err}
	if d.err == nil {
		res := d.res
		ss.Res = &res
	}
	m.Search = ss
	return m
}

// goalReach is what the search found for goal id, if it has finished.
func (m screen) goalReach(id string) (search.GoalReach, *search.Result, bool) {
	if m.Search == nil || m.Search.Res == nil {
		return search.GoalReach{}, nil, false
	}
	for _, g := range m.Search.Res.Goals {
		if g.Goal.ID == id {
			return g, m.Search.Res, true
		}
	}
	return search.GoalReach{}, nil, false
}
