package exploremap

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/leaserace/leaserace/engine/sweep"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/styles"
	"github.com/leaserace/leaserace/tui/text"
)

// Lines draws the overlay in w cells beside the run on screen, which has
// knobs, named times times and its cursor at now: a title, a tick line
// with the values, a marker line, a row per knob setting, then the
// cursor's cell in words and a legend. Columns that do not fit scroll with
// the cursor.
func (e Explorer) Lines(st *styles.Styles, w int, knobs scenario.Knobs, times map[string]int64, now int64) []string {
	g := e.Grid
	curRow, curCol := e.Current(knobs, times)
	labelW := 0
	for _, k := range g.Rows {
		labelW = max(labelW, len(k.String()))
	}
	labelW += 3 // "▶ " before, a space after
	cellW := g.effW + 3
	n := len(g.Values)
	fits := max(1, (w-labelW)/cellW)
	lo := 0
	if n > fits {
		lo = min(max(0, e.Col-fits/2), n-fits)
	}
	hi := min(n, lo+fits) // exclusive

	v := g.Vary
	title := []text.Span{text.Styled(&st.Title, "Map of "+g.Scenario), text.Plain(fmt.Sprintf(": %s %d..%d × knob setting.", v.Name, v.From, v.To))}
	if lo > 0 || hi < n {
		title = append(title, text.Plain(fmt.Sprintf(" Showing %d..%d; ←/→ scroll.", g.Values[lo], g.Values[hi-1])))
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
		if g.Values[j]%int64(step) == 0 && at+valW <= len(ticks) {
			copy(ticks[at:], strconv.FormatInt(g.Values[j], 10))
		}
	}
	out = append(out, strings.TrimRight(string(ticks), " "))
	mark := []text.Span{text.Plain(strings.Repeat(" ", labelW))}
	switch {
	case curCol >= lo && curCol < hi:
		pad := (curCol-lo)*cellW + 1
		say := fmt.Sprintf("▼ %s=%d on screen", v.Name, g.Values[curCol])
		if labelW+pad+text.Width(say) > w {
			say = "▼"
		}
		mark = append(mark, text.Plain(strings.Repeat(" ", pad)), text.Styled(&st.Cursor, say))
	case curCol >= 0:
		mark = append(mark, text.Styled(&st.Faint, fmt.Sprintf("%s=%d on screen is off to the %s", v.Name, g.Values[curCol], map[bool]string{true: "left", false: "right"}[curCol < lo])))
	default:
		mark = append(mark, text.Styled(&st.Faint, fmt.Sprintf("%s=%d on screen is outside the window", v.Name, times[v.Name])))
	}
	out = append(out, text.Line(mark))

	for i, k := range g.Rows {
		var b strings.Builder
		label := fmt.Sprintf("  %-*s", labelW-2, k.String())
		if i == curRow {
			b.WriteString(st.Selected.Render(fmt.Sprintf("▶ %-*s", labelW-2, k.String())))
		} else {
			b.WriteString(label)
		}
		for j := lo; j < hi; j++ {
			b.WriteString(e.cell(st, i, j, i == curRow && j == curCol))
		}
		out = append(out, b.String())
	}

	c := g.Cells[e.Row][e.Col]
	say := "not run"
	switch c.Verdict {
	case scenario.VerdictConflict:
		say = fmt.Sprintf("✗ conflict, %d effects: a write with an older fence was accepted after one with a newer fence", c.Effects)
	case scenario.VerdictBlocked:
		say = fmt.Sprintf("⊘ blocked, %d effects: a valid write was refused", c.Effects)
	case "":
	default:
		say = fmt.Sprintf("✓ %s, %d effects", c.Verdict, c.Effects)
	}
	detail := []text.Span{
		text.Styled(&st.Selected, fmt.Sprintf("[%s, %s=%d]", g.Rows[e.Row], v.Name, g.Values[e.Col])),
		text.Plain(" " + say + fmt.Sprintf(". enter runs it here, replayed to t=%d; esc closes.", now)),
	}
	out = append(out, text.Wrap(detail, w, "", "  ")...)
	legend := []text.Span{
		text.Styled(&st.Good, "✓n"), text.Plain(" safe, "), text.Styled(&st.Warn, "✗n"), text.Plain(" conflict, "),
		text.Styled(&st.Alarm, "⊘n"), text.Plain(" blocked (a valid write refused), n effects accepted · "),
		text.Plain("▶ ▼ < > the run on screen · [ ] cursor"),
	}
	if g.took > 0 {
		legend = append(legend, text.Styled(&st.Faint, fmt.Sprintf(" · %d runs in %s", len(g.Rows)*len(g.Values), g.took.Round(time.Millisecond))))
	}
	return append(out, text.Wrap(legend, w, "", "  ")...)
}

// cell draws one cell cellW wide: brackets for the cursor, angle
// brackets for the run on screen, so both show without colour.
func (e Explorer) cell(st *styles.Styles, i, j int, current bool) string {
	g := e.Grid
	body, ink := verdictCell(st, g.Cells[i][j])
	body = fmt.Sprintf("%-*s", g.effW+1, body)
	open, shut := " ", " "
	switch {
	case i == e.Row && j == e.Col:
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
func verdictCell(st *styles.Styles, c sweep.Cell) (string, *styles.Ink) {
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
