package screen

import (
	"fmt"
	"strconv"

	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/text"
)

// PlayMenu is play mode: on, and the menu entry picked (the moves
// enabled now are the snapshot's options).
type PlayMenu struct {
	On bool
	At int
}

// Prompt is a predict-then-reveal question on screen: asked before its
// step runs, answered after.
type Prompt struct {
	Ask scenario.Ask
	// Pick is the choice made (-1 while the question waits); Answer the
	// choice that matches what really happened, and Fact what did, once
	// the step ran.
	Pick   int
	Answer string
	Fact   string
	// T is the time of the step the question is about.
	T int64
}

// playLines is play mode's menu: the moves enabled now, in words.
func (m Screen) playLines(w int) []string {
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
func (m Screen) goalLines(w int) []string {
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
func (m Screen) askLines(w int) []string {
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
func (m Screen) tallyWords() string {
	if m.Tally.Asked == 0 {
		return ""
	}
	return fmt.Sprintf("Predictions: %d of %d right.", m.Tally.Right, m.Tally.Asked)
}

// Search is the exhaustive search of the schedules the goal panel
// quotes: for which scenario and knobs (Key), and what it found.
type Search struct {
	Key     string
	Running bool
	Res     *world.SearchResult
	Err     error
}

// goalReach is what the search found for goal id, if it has finished.
func (m Screen) goalReach(id string) (world.GoalReach, *world.SearchResult, bool) {
	if m.Search == nil || m.Search.Res == nil {
		return world.GoalReach{}, nil, false
	}
	for _, g := range m.Search.Res.Goals {
		if g.Goal.ID == id {
			return g, m.Search.Res, true
		}
	}
	return world.GoalReach{}, nil, false
}
