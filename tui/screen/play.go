package screen

import (
	"fmt"
	"strconv"
	"strings"

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
func (m Screen) playLines(w int) []string { return m.playMenu(w, 0) }

// playMenu is the menu in at most limit lines (0: all): a window of
// entries around the cursor, with how many more lie above and below.
func (m Screen) playMenu(w, limit int) []string {
	st := m.Styles
	opts := m.Snap.Options
	head := []text.Span{text.Styled(&st.Title, "Your move"), text.Plain(fmt.Sprintf(" at t=%d", m.Snap.View.Now))}
	if len(opts) == 0 {
		head = append(head, text.Plain(": nothing can happen any more. ← steps back to choose differently."))
		return text.Wrap(head, w, "", "  ")
	}
	out := text.Wrap(head, w, "", "  ")
	entries := make([][]string, len(opts))
	for i, o := range opts {
		num := "  "
		switch {
		case i < 9:
			num = strconv.Itoa(i+1) + " "
		case i == 9:
			num = "0 "
		}
		first, ink := "  ", &st.Value
		if i == m.Play.At {
			first, ink = "▶ ", &st.Selected
		}
		line := []text.Span{text.Styled(ink, num), text.Plain(o.Words)}
		if o.Scripted {
			line = append(line, text.Styled(&st.Faint, " ·scripted"))
		}
		entries[i] = text.Wrap(line, w, first, "    ")
	}
	if limit <= 0 || len(out)+lineCount(entries) <= limit {
		for _, e := range entries {
			out = append(out, e...)
		}
		return out
	}
	// Scroll: the cursor's entry, then as many around it as fit, with a
	// line each for what lies above and below.
	at := min(max(m.Play.At, 0), len(entries)-1)
	from, to := at, at+1
	room := limit - len(out) - 2 - len(entries[at])
	for grew := true; grew; {
		grew = false
		if to < len(entries) && len(entries[to]) <= room {
			room -= len(entries[to])
			to++
			grew = true
		}
		if from > 0 && len(entries[from-1]) <= room {
			room -= len(entries[from-1])
			from--
			grew = true
		}
	}
	if from > 0 {
		out = append(out, text.Render(&st.Faint, fmt.Sprintf("  ↑ %d more above (↑/k)", from)))
	}
	for _, e := range entries[from:to] {
		out = append(out, e...)
	}
	if to < len(entries) {
		out = append(out, text.Render(&st.Faint, fmt.Sprintf("  ↓ %d more below (↓/j)", len(entries)-to)))
	}
	return out
}

func lineCount(blocks [][]string) int {
	n := 0
	for _, b := range blocks {
		n += len(b)
	}
	return n
}

// stateLine is the run's state in one line or two, for a screen with no
// room for the panes: the verdict first.
func (m Screen) stateLine(w int) []string {
	st, v := m.Styles, m.Snap.View
	o := v.Outcome
	noun := "effects"
	if o.Effects == 1 {
		noun = "effect"
	}
	var p []text.Span
	switch o.Verdict {
	case scenario.VerdictConflict:
		p = append(p, text.Styled(&st.Alarm, fmt.Sprintf("⚠ %d %s / CONFLICT", o.Effects, noun)))
	case scenario.VerdictBlocked:
		p = append(p, text.Styled(&st.Alarm, fmt.Sprintf("⊘ %d %s / BLOCKED", o.Effects, noun)))
	default:
		p = append(p, text.Styled(&st.Good, fmt.Sprintf("✓ %d %s / safe", o.Effects, noun)))
	}
	if c := v.Coordinator; c != nil {
		p = append(p, text.Plain(fmt.Sprintf(" · lease: %s, fence %d, lease_version %d, expires %d", c.Owner, c.Fence, c.LeaseVersion, c.ExpiresAt)))
	}
	high := m.Snap.Scenario.Resource.Fence
	for _, e := range v.Resource.Effects {
		if e.Accepted {
			high = max(high, e.Fence)
		}
	}
	p = append(p, text.Plain(fmt.Sprintf(" · the resource's highest fence accepted %d", high)))
	if v.Resource.Fence < high {
		p = append(p, text.Styled(&st.Warn, fmt.Sprintf(" (stored: %d, regressed)", v.Resource.Fence)))
	}
	if n := len(v.InFlight); n > 0 {
		ids := make([]string, n)
		for i, f := range v.InFlight {
			ids[i] = f.ID
		}
		p = append(p, text.Plain(" · in flight: "+strings.Join(ids, ", ")))
	}
	return text.ClipSaying(text.Wrap(p, w, "", "  "), 2, "p leaves play mode to show the panes")
}

// goalLinesShort is the goal panel in a line per goal where it can: par
// without the counts of runs, and a key for an impossible goal's cut.
func (m Screen) goalLinesShort(w int) []string { return m.goalPanel(w, true, false) }

// goalPanel is the goal panel: each goal, reached or not, and the moves
// the path on screen used to reach it. With cuts, an impossible goal's
// cut is spelled out; without, the goal's line says which key shows it.
func (m Screen) goalPanel(w int, short, cuts bool) []string {
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
		case searched && !reach.Reachable() && short && reach.Cut != "":
			p = append(p, text.Styled(&st.Faint, "✗ "), text.Plain(g.Goal.Text), text.Styled(&st.Faint, " — impossible here; e exports why"))
		case searched && !reach.Reachable() && !cuts && reach.Cut != "":
			p = append(p, text.Styled(&st.Faint, "✗ "), text.Plain(g.Goal.Text), text.Styled(&st.Faint, fmt.Sprintf(" — impossible under %s + %s: 0 of %s runs; e exports why", m.Snap.View.Knobs.Renewal.Describe(), m.Snap.View.Knobs.Fencing, res.Runs)))
		case searched && !reach.Reachable() && short:
			p = append(p, text.Styled(&st.Faint, "✗ "), text.Plain(g.Goal.Text), text.Styled(&st.Faint, " — impossible here"))
		case searched && short:
			p = append(p, text.Styled(&st.Faint, "· "), text.Plain(g.Goal.Text), text.Styled(&st.Faint, fmt.Sprintf(" — par %d", reach.Par)))
		case searched && !reach.Reachable():
			p = append(p, text.Styled(&st.Faint, "✗ "), text.Plain(g.Goal.Text), text.Styled(&st.Faint, fmt.Sprintf(" — impossible under %s + %s: 0 of %s runs", m.Snap.View.Knobs.Renewal.Describe(), m.Snap.View.Knobs.Fencing, res.Runs)))
		case searched:
			p = append(p, text.Styled(&st.Faint, "· "), text.Plain(g.Goal.Text), text.Styled(&st.Faint, fmt.Sprintf(" — par %d; %s of %s runs reach it", reach.Par, reach.Runs, res.Runs)))
		default:
			p = append(p, text.Styled(&st.Faint, "· "), text.Plain(g.Goal.Text), text.Styled(&st.Faint, " — not reached yet"))
		}
		out = append(out, text.Wrap(p, w, "", "  ")...)
		if searched && !reach.Reachable() && cuts && reach.Cut != "" {
			out = append(out, text.Wrap([]text.Span{text.Styled(&st.Faint, "what cuts every path: "), text.Plain(reach.Cut)}, w, "  ", "    ")...)
		}
		if searched && !reach.Reachable() && m.compareAlone(g.Goal) {
			why := "  compare-and-renew alone rules it out here: a stale heartbeat gets UPDATE 0, so its sender learns it lost the lease before it writes. A paused holder sends no heartbeat at all: paused-holder (s) shows the stale write compare-and-renew cannot stop, and why a team still wants fencing."
			if short {
				why = "  compare-and-renew alone rules it out here; paused-holder (s) shows why fencing is still needed."
			}
			out = append(out, text.Wrap([]text.Span{text.Styled(&st.Faint, why)}, w, "", "  ")...)
		}
	}
	switch {
	case m.Search != nil && m.Search.Running:
		out = append(out, text.Wrap([]text.Span{text.Styled(&st.Faint, "  exploring every schedule on the server for par…")}, w, "", "  ")...)
	case m.Search != nil && m.Search.Err != nil:
		out = append(out, text.Wrap([]text.Span{text.Styled(&st.Warn, "  par unknown: "), text.Plain(m.Search.Err.Error())}, w, "", "  ")...)
	}
	return out
}

// compareAlone reports whether the goal is a stale write made impossible
// by compare-and-renew alone (fencing off), in a scenario other than
// paused-holder, where it is not.
func (m Screen) compareAlone(g scenario.Goal) bool {
	k := m.Snap.View.Knobs
	return g.When == scenario.GoalConflict && k.Renewal == scenario.RenewalCompare && k.Fencing == scenario.FencingOff && m.Snap.Scenario.Name != "paused-holder"
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
	if why := m.why(); why != "" {
		p = append(p, text.Plain(" Why: "+why))
	}
	return append(out, text.Wrap(p, w, "  ", "  ")...)
}

// why says, from the step just run, why it came out as it did: for a
// write, the fence it carried against the resource's highest fence
// accepted before it; otherwise the step's own narration. It is said
// here, not left to a section that a small screen may not show.
func (m Screen) why() string {
	last := m.Snap.Last()
	if last == nil {
		return ""
	}
	effects := last.Resource.Effects
	prev := 0
	if n := len(m.Snap.Steps); n >= 2 {
		prev = len(m.Snap.Steps[n-2].Resource.Effects)
	}
	if len(effects) > prev {
		e := effects[len(effects)-1]
		high := m.Snap.Scenario.Resource.Fence
		for _, x := range effects[:len(effects)-1] {
			if x.Accepted {
				high = max(high, x.Fence)
			}
		}
		switch {
		case e.Accepted && e.Fence >= high:
			return fmt.Sprintf("%s's write carried fence %d and the resource's highest fence accepted was %d: accepted, but no newer fence had been accepted yet, so it is not stale. A conflict needs a write with a newer fence to land first.", e.Actor, e.Fence, high)
		case e.Accepted:
			return fmt.Sprintf("%s's write carried fence %d, below the resource's highest fence accepted, %d, and was accepted anyway: a stale write.", e.Actor, e.Fence, high)
		case e.Fence >= high:
			return fmt.Sprintf("%s's write carried fence %d, not below the resource's highest fence accepted (%d), yet was refused: fencing blocked a valid holder.", e.Actor, e.Fence, high)
		default:
			return fmt.Sprintf("%s's write carried fence %d, below the resource's highest fence accepted (%d): refused.", e.Actor, e.Fence, high)
		}
	}
	return strings.TrimSpace(last.Note)
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
