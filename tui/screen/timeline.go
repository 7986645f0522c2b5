package screen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/tui/styles"
	"github.com/leaserace/leaserace/tui/text"

	"github.com/leaserace/leaserace/scenario"
)

// markOf is the letter an action gets on the timeline; capitals mark
// moves already made, so the ruler reads without colour.
func markOf(a scenario.Action) (rune, string) {
	switch a {
	case scenario.ActionSend:
		return 's', "send"
	case scenario.ActionExpire:
		return 'x', "expiry"
	case scenario.ActionAcquire:
		return 'a', "acquire/takeover"
	case scenario.ActionDeliver:
		return 'd', "heartbeat arrives"
	case scenario.ActionReply:
		return 'y', "reply arrives"
	case scenario.ActionEffect:
		return 'e', "effect"
	case scenario.ActionWrite:
		return 'w', "write"
	case scenario.ActionWriteSend:
		return 'p', "write sent"
	case scenario.ActionWriteDeliver:
		return 'l', "write lands"
	case scenario.ActionPause:
		return 'z', "pause"
	case scenario.ActionResume:
		return 'u', "resume"
	case scenario.ActionRelease:
		return 'r', "release"
	case scenario.ActionReelect:
		return 'v', "re-election"
	case scenario.ActionDrop:
		return 'o', "message lost"
	case scenario.ActionAdvance:
		return 't', "clock moves on"
	}
	return '?', string(a)
}

// resultMark is what the axis shows under a column of moves already
// made: a refusal or a move that made no call, so a capital letter alone
// never hides how a move went. A column's worst result wins.
func resultMark(results []string) (rune, bool) {
	switch {
	case slices.Contains(results, transcript.ResultRefused):
		return '✗', true
	case slices.Contains(results, transcript.ResultNoCall):
		return '∅', true
	}
	return 0, false
}

// cell is one terminal cell of the timeline.
type cell struct {
	r     rune
	style *styles.Ink
}

type row []cell

func newRow(w int) row {
	r := make(row, w)
	for i := range r {
		r[i].r = ' '
	}
	return r
}

// put writes s at column c if every cell it needs (and one either side)
// is free; it reports whether it did.
func (r row) put(c int, s string, st *styles.Ink) bool {
	rs := []rune(s)
	if c < 0 || c+len(rs) > len(r) {
		return false
	}
	for i := c - 1; i <= c+len(rs); i++ {
		if i >= 0 && i < len(r) && r[i].r != ' ' {
			return false
		}
	}
	for i, x := range rs {
		r[c+i] = cell{r: x, style: st}
	}
	return true
}

func (r row) String() string {
	var b strings.Builder
	for i := 0; i < len(r); {
		// Runs of one style render in one call: far fewer escapes.
		j := i
		var run strings.Builder
		for j < len(r) && r[j].style == r[i].style {
			run.WriteRune(r[j].r)
			j++
		}
		b.WriteString(text.Render(r[i].style, run.String()))
		i = j
	}
	return strings.TrimRight(b.String(), " ")
}

// timeline draws the ruler over the scenario's window: a mark per event
// (stacked when they share a column), the axis heavy up to the cursor,
// times under it, and the cursor. Events before the window sit in a
// gutter at the left edge with their own time.
func (m Screen) timeline(w int, legend, showCursor bool) []string {
	st, s := m.Styles, m.Snap
	sc := s.Scenario
	from, end := sc.Window.From, s.End
	if end <= from {
		end = from + 1
	}
	// The gutter holds events before the window.
	var pre []int
	preLabel := ""
	log := s.Log
	for i, e := range log {
		if e.T < from {
			pre = append(pre, i)
		}
	}
	gw := 0
	if len(pre) > 0 {
		t0, t1 := log[pre[0]].T, log[pre[len(pre)-1]].T
		preLabel = strconv.FormatInt(t0, 10)
		if t0 != t1 {
			preLabel = "<" + strconv.FormatInt(from, 10)
		}
		gw = len(preLabel) + 2
	}
	axW := w - gw
	if axW < 2 {
		return nil
	}
	col := func(t int64) int {
		if t < from {
			return (gw - 2) / 2
		}
		c := gw + int((t-from)*int64(axW-1)/(end-from))
		return min(max(c, gw), w-1)
	}
	now, pos := s.View.Now, s.View.Pos
	cur := col(now)

	// Marks: first event in a column nearest the axis, later ones above.
	stacks := map[int][]int{}
	depth := 1
	for i, e := range log {
		c := col(e.T)
		stacks[c] = append(stacks[c], i)
		depth = max(depth, len(stacks[c]))
	}
	const maxDepth = 3
	depth = min(depth, maxDepth)
	marks := make([]row, depth)
	for i := range marks {
		marks[i] = newRow(w)
	}
	for c, idx := range stacks {
		for k, i := range idx {
			level := depth - 1 - k
			if k >= maxDepth {
				marks[0][c] = cell{r: '+', style: &st.Faint}
				continue
			}
			r, _ := markOf(log[i].Action)
			sty := &st.Pending
			if i < pos {
				r, sty = []rune(strings.ToUpper(string(r)))[0], &st.Done
			}
			marks[level][c] = cell{r: r, style: sty}
		}
	}

	axis := newRow(w)
	for c := range w {
		switch {
		case c < gw-1:
			axis[c] = cell{r: '╌', style: &st.Border}
		case c == gw-1:
			axis[c] = cell{r: ' '}
		case c <= cur:
			axis[c] = cell{r: '━', style: &st.Done}
		default:
			axis[c] = cell{r: '─', style: &st.Border}
		}
	}
	for c, idx := range stacks {
		if c >= gw {
			r, sty := '┼', &st.Border
			if c <= cur {
				r, sty = '┿', &st.Done
			}
			var results []string
			for _, i := range idx {
				if i < len(s.Steps) {
					results = append(results, s.Steps[i].Result)
				}
			}
			if mark, ok := resultMark(results); ok {
				r, sty = mark, &st.Warn
			}
			axis[c] = cell{r: r, style: sty}
		}
	}

	labels := newRow(w)
	if preLabel != "" {
		labels.put(0, preLabel, &st.Faint)
	}
	fl, el := strconv.FormatInt(from, 10), strconv.FormatInt(end, 10)
	labels.put(gw, fl, &st.Faint)
	labels.put(w-len(el), el, &st.Faint)
	for _, e := range log {
		if e.T < from {
			continue
		}
		t := strconv.FormatInt(e.T, 10)
		c := col(e.T)
		if !labels.put(c, t, &st.Faint) {
			labels.put(c-len(t)+1, t, &st.Faint)
		}
	}

	cursor := newRow(w)
	ct := fmt.Sprintf("▲ t=%d", now)
	if !cursor.put(cur, ct, &st.Cursor) {
		ct = fmt.Sprintf("t=%d ▲", now)
		cursor.put(max(0, cur-len([]rune(ct))+1), ct, &st.Cursor)
	}

	out := make([]string, 0, depth+4)
	for _, r := range marks {
		out = append(out, r.String())
	}
	if !showCursor {
		// No room for the cursor line: mark the cursor on the axis itself.
		axis[cur] = cell{r: '▲', style: &st.Cursor}
	}
	out = append(out, axis.String(), labels.String())
	if showCursor {
		out = append(out, cursor.String())
	}
	if legend {
		var p []text.Span
		seen := map[scenario.Action]bool{}
		for _, e := range log {
			if seen[e.Action] {
				continue
			}
			seen[e.Action] = true
			r, what := markOf(e.Action)
			if len(p) > 0 {
				p = append(p, text.Plain(" · "))
			}
			p = append(p, text.Styled(&st.Done, string(r)), text.Plain(" "+what))
		}
		p = append(p, text.Styled(&st.Faint, " (CAPITAL = done; under it ✗ refused, ∅ made no call)"))
		out = append(out, text.Wrap(p, w, "", "")...)
	}
	return out
}
