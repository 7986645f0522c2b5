package exploremap

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/leaserace/leaserace/engine/sweep"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/styles"
	"github.com/leaserace/leaserace/tui/text"
)

// Options say how Write draws: colour or not, for a light or
// dark background, and how wide.
type Options struct {
	Color bool
	Light bool
	Width int
}

// exploreMap is one map: the six settings over the last varied name, with
// the earlier names fixed at prefix.
type exploreMap struct {
	prefix string
	cells  map[scenario.Knobs]map[int64]sweep.Cell
}

// splitMaps groups the cells into maps, in the order the sweep ran them.
func splitMaps(res sweep.Result) []exploreMap {
	last := res.Vary[len(res.Vary)-1].Name
	var maps []exploreMap
	at := map[string]int{}
	for _, c := range res.Cells {
		var parts []string
		for _, v := range res.Vary[:len(res.Vary)-1] {
			parts = append(parts, fmt.Sprintf("%s = %d", v.Name, c.Values[v.Name]))
		}
		p := strings.Join(parts, ", ")
		i, ok := at[p]
		if !ok {
			i = len(maps)
			at[p] = i
			maps = append(maps, exploreMap{prefix: p, cells: map[scenario.Knobs]map[int64]sweep.Cell{}})
		}
		k := scenario.Knobs{Renewal: c.Renewal, Fencing: c.Fencing}
		if maps[i].cells[k] == nil {
			maps[i].cells[k] = map[int64]sweep.Cell{}
		}
		maps[i].cells[k][c.Values[last]] = c
	}
	return maps
}

// Write draws an explore sweep as text for leaserace explore: each map,
// wrapped to the width, then the legend. Its cells are the overlay's own
// (verdictCell). Colour only repeats what the glyphs say.
func Write(w io.Writer, res sweep.Result, st Options) error {
	r := styles.NewRenderer(w, !st.Color)
	// Decided here rather than by asking the terminal: the question is an
	// escape sequence written to standard output, and its answer may never
	// come.
	r.SetHasDarkBackground(!st.Light)
	sty := styles.New(r)
	col := res.Vary[len(res.Vary)-1]
	var effW int
	for _, c := range res.Cells {
		effW = max(effW, len(strconv.Itoa(c.Effects)))
	}
	cellW := 1 + effW + 1 // glyph, count, a space
	labelW := 0
	for _, k := range scenario.AllKnobs() {
		labelW = max(labelW, len(k.String()))
	}
	labelW = max(labelW, len(col.Name)) + 2
	perLine := max(1, (st.Width-labelW)/cellW)
	step := tickStep(len(strconv.FormatInt(col.To, 10))+1, cellW)

	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s %d..%d under each knob setting\n", res.Scenario, col.Name, col.From, col.To)
	for _, m := range splitMaps(res) {
		if m.prefix != "" {
			fmt.Fprintf(&b, "\n%s\n", sty.Title.Render(m.prefix))
		}
		for lo := col.From; lo <= col.To; lo += int64(perLine) {
			hi := min(col.To, lo+int64(perLine)-1)
			b.WriteString("\n" + tickLine(col.Name, labelW, cellW, step, lo, hi) + "\n")
			for _, k := range scenario.AllKnobs() {
				fmt.Fprintf(&b, "%-*s", labelW, k.String())
				for t := lo; t <= hi; t++ {
					c, ok := m.cells[k][t]
					if !ok {
						c = sweep.Cell{}
					}
					cell, ink := verdictCell(&sty, c)
					if t > lo {
						b.WriteByte(' ')
					}
					b.WriteString(text.Render(ink, fmt.Sprintf("%-*s", cellW-1, cell)))
				}
				b.WriteString("\n")
			}
		}
		b.WriteString("\nWhere each setting goes wrong:\n")
		for _, k := range scenario.AllKnobs() {
			fmt.Fprintf(&b, "  %-*s%s\n", labelW, k.String(), wrongWords(col, m.cells[k]))
		}
	}
	b.WriteString("\n")
	for _, l := range mapLegend(&sty) {
		b.WriteString(text.Line(l) + "\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("cannot write the map: %w", err)
	}
	return nil
}

// tickStep is how many columns apart the header's labels go: the smallest
// of 1, 2, 5, 10, 20, 50, ... whose span fits a label and a space.
func tickStep(labelW, cellW int) int64 {
	for step := int64(1); ; step *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if int(step*m)*cellW >= labelW {
				return step * m
			}
		}
	}
}

// tickLine labels the columns lo..hi whose value is a multiple of step.
func tickLine(name string, labelW, cellW int, step, lo, hi int64) string {
	line := []byte(fmt.Sprintf("%-*s", labelW, name))
	line = append(line, []byte(strings.Repeat(" ", int(hi-lo+1)*cellW))...)
	for t := lo; t <= hi; t++ {
		if t%step != 0 {
			continue
		}
		s := strconv.FormatInt(t, 10)
		at := labelW + int(t-lo)*cellW
		if at+len(s) > len(line) {
			line = append(line, []byte(strings.Repeat(" ", at+len(s)-len(line)))...)
		}
		copy(line[at:], s)
	}
	return strings.TrimRight(string(line), " ")
}

// wrongWords says in words where a row goes wrong: "safe everywhere",
// or the ranges of the column's values that conflict and that block.
func wrongWords(col sweep.Vary, row map[int64]sweep.Cell) string {
	var parts []string
	for _, v := range []string{scenario.VerdictConflict, scenario.VerdictBlocked} {
		if s := verdictRanges(col, row, v); s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return "safe everywhere"
	}
	return strings.Join(parts, "; ")
}

// verdictRanges names the values of col where row has verdict v:
// "conflict at arrival 1075..1135 (61 of 76)", or "" when none.
func verdictRanges(col sweep.Vary, row map[int64]sweep.Cell, v string) string {
	var ranges []string
	n, total := 0, int(col.To-col.From+1)
	for t := col.From; t <= col.To; t++ {
		if row[t].Verdict != v {
			continue
		}
		end := t
		for end+1 <= col.To && row[end+1].Verdict == v {
			end++
		}
		n += int(end - t + 1)
		if end == t {
			ranges = append(ranges, strconv.FormatInt(t, 10))
		} else {
			ranges = append(ranges, fmt.Sprintf("%d..%d", t, end))
		}
		t = end
	}
	switch n {
	case 0:
		return ""
	case total:
		return fmt.Sprintf("%s at every %s", v, col.Name)
	}
	return fmt.Sprintf("%s at %s %s (%d of %d)", v, col.Name, strings.Join(ranges, ", "), n, total)
}

// mapLegend says what the cells mean, a line per verdict.
func mapLegend(st *styles.Styles) [][]text.Span {
	return [][]text.Span{
		{text.Styled(&st.Good, "✓n"), text.Plain("  safe: n effects accepted, none stale, no valid write refused")},
		{text.Styled(&st.Warn, "✗n"), text.Plain("  conflict: n effects accepted, a stale write among them")},
		{text.Styled(&st.Alarm, "⊘n"), text.Plain("  blocked: n accepted, a valid write refused (strict fencing)")},
	}
}
