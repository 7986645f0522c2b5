// Package timeline draws the race's lane diagram (tui/lanes) for the
// terminal: a lane per actor and the clock, each move with its own mark,
// messages from send to arrival, the dangers in words and the legend.
package timeline

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/lanes"
	"github.com/leaserace/leaserace/tui/styles"
	"github.com/leaserace/leaserace/tui/text"
)

// cell is one terminal cell of the lanes.
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
	r.set(c, s, st)
	return true
}

// set writes s at column c over whatever is there, clipped to the row.
func (r row) set(c int, s string, st *styles.Ink) {
	for i, x := range []rune(s) {
		if c+i >= 0 && c+i < len(r) {
			r[c+i] = cell{r: x, style: st}
		}
	}
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

// placed is where each move's two cells (its letter, then its mark) sit.
type placed struct {
	d     lanes.Diagram
	gw    int   // the lane names' gutter
	x     []int // per move, its letter's column; -1 when cut off
	first int   // the first instant shown
	w     int
}

// place lays the instants out left to right: each at least its moves'
// width apart, side by side in log order, and otherwise as far apart as
// their times are, so long flights look long. When they do not fit, the
// moves lose the space between them, then the earliest instants go.
func place(d lanes.Diagram, w, gw int) placed {
	p := placed{d: d, gw: gw, w: w, x: make([]int, len(d.Moves))}
	for i := range p.x {
		p.x[i] = -1
	}
	avail := w - gw
	if avail < 4 || len(d.Times) == 0 {
		return p
	}
	spread, gap := 3, 2
	need := func(from, spread, gap int) int {
		n := 0
		for _, tm := range d.Times[from:] {
			n += spread*len(tm.Moves) - (spread - 2)
		}
		return n + gap*(len(d.Times)-from-1)
	}
	switch {
	case need(0, 3, 2) <= avail:
	case need(0, 2, 1) <= avail:
		spread, gap = 2, 1
	default:
		spread, gap = 2, 1
		for p.first < len(d.Times)-1 && need(p.first, spread, gap)+2 > avail {
			p.first++
		}
	}
	ts := d.Times[p.first:]
	width := func(i int) int { return spread*len(ts[i].Moves) - (spread - 2) }
	t0, t1 := ts[0].T, max(d.End, ts[len(ts)-1].T)
	lastW := width(len(ts) - 1)
	xs := make([]int, len(ts))
	for i, tm := range ts {
		ideal := 0
		if t1 > t0 {
			ideal = int((tm.T - t0) * int64(avail-lastW) / (t1 - t0))
		}
		if i > 0 {
			ideal = max(ideal, xs[i-1]+width(i-1)+gap)
		}
		xs[i] = ideal
	}
	for i := len(ts) - 1; i >= 0; i-- {
		limit := avail - width(i)
		if i < len(ts)-1 {
			limit = xs[i+1] - gap - width(i)
		}
		xs[i] = min(xs[i], limit)
	}
	off := gw
	if p.first > 0 {
		off += 2 // room for the "…" of the instants cut off
	}
	for i, tm := range ts {
		for k, mv := range tm.Moves {
			p.x[mv] = off + xs[i] + k*spread
		}
	}
	return p
}

// col is the column of time t: at an instant's first move, or between
// the instants around it in proportion.
func (p placed) col(t int64) int {
	d := p.d
	prevT, prevX := int64(-1), -1
	for _, tm := range d.Times[p.first:] {
		x := p.x[tm.Moves[0]]
		if tm.T == t {
			return x
		}
		if tm.T > t {
			if prevX < 0 {
				return max(p.gw, x-1)
			}
			// Between two instants, in proportion of the gap.
			span := x - prevX
			return prevX + int(int64(span)*(t-prevT)/(tm.T-prevT))
		}
		prevT, prevX = tm.T, p.x[tm.Moves[len(tm.Moves)-1]]+2
	}
	if prevX < 0 {
		return p.gw
	}
	if d.End > prevT {
		return min(p.w-1, prevX+int(int64(p.w-1-prevX)*(t-prevT)/(d.End-prevT)))
	}
	return min(p.w-1, prevX)
}

// markInk is how a mark is coloured; the glyph alone already says it.
func (m view) markInk(k lanes.Mark) *styles.Ink {
	st := m.Styles
	switch k {
	case lanes.Done:
		return &st.Good
	case lanes.Refused:
		return &st.Warn
	case lanes.NoCall, lanes.Pending:
		return &st.Faint
	}
	return &st.Alarm
}

// Glyphs of the network and the cursor, named once for the legend.
const (
	flightGlyphs  = "╰─╯"
	pendingFlight = '┄'
	cursorGlyph   = "▲"
	CutGlyph      = "…"
	pauseGlyph    = '┈'
)

// view is what the lanes are drawn from: the looks and the diagram.
type view struct {
	Styles *styles.Styles
	d      lanes.Diagram
}

func (m view) diagram() lanes.Diagram { return m.d }

// Draw draws the race as a lane per actor and one for the clock: each
// move its kind's letter and its own mark, in its lane at its time;
// messages from send to arrival under their sender's lane (roomy) or
// along it (compact); the times under the lanes with the cursor; and the
// legend, which names every glyph the lanes show and never goes. full
// spells the legend and the dangers out in words.
func Draw(d lanes.Diagram, st *styles.Styles, w int, full, roomy bool) Block {
	return view{Styles: st, d: d}.block(w, full, roomy)
}

// Block is the lanes' parts: the rows of the lanes, messages and times;
// the dangers in words; the legend.
type Block struct {
	D                    lanes.Diagram
	Rows, Danger, Legend []string
	// Lines is the block as the screen shows it.
	Lines []string
	// Used names the glyphs the rows show.
	Used map[string]bool
}

func (m view) block(w int, full, roomy bool) Block {
	b := m.lanesAt(w, full, roomy)
	b.Legend = m.legend(b.D, w, b.Used, full)
	if roomy || len(b.Legend) <= 1 {
		b.Lines = append(append(slices.Clone(b.Rows), b.Danger...), b.Legend...)
		return b
	}
	// Compact: the legend goes beside the lanes, as narrow as lets it
	// keep to their height, so it costs no lines of its own.
	for lw := 22; lw <= w/2; lw += 2 {
		nb := m.lanesAt(w-lw-2, full, roomy)
		nb.Legend = m.legend(nb.D, lw, nb.Used, full)
		if len(nb.Legend) <= len(nb.Rows) || lw+2 > w/2 {
			nb.Lines = text.HJoin("  ", []int{w - lw - 2, lw}, nb.Rows, nb.Legend)
			for i := range nb.Lines {
				nb.Lines[i] = strings.TrimRight(nb.Lines[i], " ")
			}
			nb.Lines = append(nb.Lines, nb.Danger...)
			return nb
		}
	}
	b.Lines = append(append(slices.Clone(b.Rows), b.Danger...), b.Legend...)
	return b
}

// lanesAt is the block w cells wide, without its legend.
func (m view) lanesAt(w int, full, roomy bool) Block {
	st := m.Styles
	d := m.diagram()
	gw := 0
	for _, l := range d.Lanes {
		gw = max(gw, text.Width(l.Name))
	}
	gw += 1
	p := place(d, w, gw)
	cut := p.first > 0
	var out []string
	used := map[string]bool{}
	for li, l := range d.Lanes {
		lane := newRow(w)
		lane.set(0, l.Name, &st.Label)
		if cut {
			lane.set(gw, CutGlyph, &st.Faint)
			used[CutGlyph] = true
		}
		var tracks []row
		for _, msg := range d.Messages {
			if msg.Lane != li || p.x[msg.Send] < 0 {
				continue
			}
			if roomy {
				tracks = m.flightTrack(tracks, p, msg, used)
			} else {
				m.flightInline(lane, p, msg, used)
			}
		}
		for _, ps := range d.Pauses {
			if ps.Lane == li {
				m.pauseInline(lane, p, ps, used)
			}
		}
		for i, mv := range d.Moves {
			if mv.Lane != li || p.x[i] < 0 {
				continue
			}
			letter, _ := lanes.Letter(mv.Action)
			ink := &st.Done
			if mv.Mark == lanes.Pending {
				ink = &st.Pending
			}
			lane.set(p.x[i], letter, ink)
			lane.set(p.x[i]+1, mv.Mark.Glyph(), m.markInk(mv.Mark))
		}
		out = append(out, lane.String())
		for _, tr := range tracks {
			out = append(out, tr.String())
		}
	}
	// The times under the lanes, the cursor on them.
	ruler := newRow(w)
	cur := m.cursorCol(p)
	if !roomy {
		// No row of its own: the cursor sits among the times.
		ruler.set(cur, cursorGlyph, &st.Cursor)
	}
	for _, tm := range d.Times[p.first:] {
		ruler.put(p.x[tm.Moves[0]], strconv.FormatInt(tm.T, 10), &st.Faint)
	}
	out = append(out, ruler.String())
	if roomy {
		c := newRow(w)
		ct := fmt.Sprintf("%s t=%d", cursorGlyph, d.Now)
		if cur+len([]rune(ct)) > w {
			ct = fmt.Sprintf("t=%d %s", d.Now, cursorGlyph)
			cur = max(0, cur-len([]rune(ct))+1)
		}
		c.set(cur, ct, &st.Cursor)
		out = append(out, c.String())
	}
	// The legend is the caller's: its width depends on where it goes.
	b := Block{D: d, Rows: out, Used: used}
	if full {
		b.Danger = m.dangerLines(d, w)
	}
	return b
}

// cursorCol is where the cursor points: under the last move played when
// it is at the cursor's time, else at the cursor's time between instants.
func (m view) cursorCol(p placed) int {
	d := p.d
	if d.Pos > 0 && p.x[d.Pos-1] >= 0 && d.Moves[d.Pos-1].T == d.Now {
		return p.x[d.Pos-1] + 1
	}
	if d.Pos < len(d.Moves) && p.x[d.Pos] >= 0 && d.Moves[d.Pos].T == d.Now {
		// At the instant of the next move, before it.
		return max(p.gw, p.x[d.Pos]-1)
	}
	return max(p.gw, p.col(d.Now))
}

// span is the columns a message covers: from its send's mark to its end's
// letter, or to the cursor (lost) or the right edge (still out).
func (p placed) span(msg lanes.Message, cur int) (int, int, bool) {
	from := p.x[msg.Send] + 1
	switch {
	case msg.End >= 0 && p.x[msg.End] >= 0:
		return from, p.x[msg.End], true
	case msg.Lost:
		return from, max(from+2, cur), false
	}
	return from, p.w - 1, false
}

// flightTrack draws msg under its lane on the first track it fits.
func (m view) flightTrack(tracks []row, p placed, msg lanes.Message, used map[string]bool) []row {
	st := m.Styles
	cur := m.cursorCol(p)
	a, b, ends := p.span(msg, cur)
	tail := ""
	switch {
	case msg.Lost:
		tail = " lost"
	case msg.Held:
		tail = " held"
	case !ends && msg.Sent && msg.Due > 0:
		tail = fmt.Sprintf(" due %d", msg.Due)
	}
	b = min(b, p.w-1-len(tail))
	if b <= a {
		return tracks
	}
	var tr row
	for _, t := range tracks {
		free := true
		for c := a - 1; c <= b+len(tail)+1 && c < len(t); c++ {
			if c >= 0 && t[c].r != ' ' {
				free = false
			}
		}
		if free {
			tr = t
			break
		}
	}
	if tr == nil {
		tr = newRow(p.w)
		tracks = append(tracks, tr)
	}
	ink := &st.Done
	if !msg.Sent {
		ink = &st.Pending
	}
	tr.set(a, "╰", ink)
	for c := a + 1; c < b; c++ {
		r, k := '─', ink
		if msg.Sent && !msg.Arrived && c > cur {
			// The part of the flight still ahead of the cursor.
			r, k = pendingFlight, &st.Pending
			used[string(pendingFlight)] = true
		}
		tr[c] = cell{r: r, style: k}
	}
	end := "╯"
	if !ends {
		end = "─"
	}
	if msg.Sent && !msg.Arrived && b > cur {
		tr.set(b, string(pendingFlight), &st.Pending)
		used[string(pendingFlight)] = true
		if ends {
			tr.set(b, end, &st.Pending)
		}
	} else {
		tr.set(b, end, ink)
	}
	if tail != "" {
		lk := &st.Faint
		if msg.Lost {
			lk = &st.Warn
		}
		tr.set(b+1, tail, lk)
	}
	label := msg.ID
	if msg.Kind == "reply" {
		label += " reply"
	}
	if a+2+len(label) < b {
		tr.set(a+2, label, &st.Title)
	}
	used[flightGlyphs] = true
	return tracks
}

// flightInline draws msg along its lane, in the cells between its moves.
func (m view) flightInline(lane row, p placed, msg lanes.Message, used map[string]bool) {
	st := m.Styles
	cur := m.cursorCol(p)
	a, b, ends := p.span(msg, cur)
	a++ // the lane row holds the send's mark at a
	if !ends && !msg.Lost {
		b = min(b, p.w-1)
	}
	ink := &st.Done
	if !msg.Sent {
		ink = &st.Pending
	}
	drew := false
	for c := a + 1; c < b && c < len(lane); c++ {
		if lane[c].r != ' ' {
			continue
		}
		r, k := '─', ink
		if msg.Sent && !msg.Arrived && c > cur {
			r, k = pendingFlight, &st.Pending
			used[string(pendingFlight)] = true
		}
		lane[c] = cell{r: r, style: k}
		drew = true
	}
	if !drew {
		return
	}
	used["─"] = true
	if msg.Lost && !ends {
		lane.put(b+1, "lost", &st.Warn)
	}
	label := msg.ID
	if a+2+len(label) < b-1 {
		lane.set(a+2, label, &st.Title)
	}
}

// pauseInline draws an actor's pause along its lane: the process stops
// between its pause and its resume (or the cursor), while time goes on.
func (m view) pauseInline(lane row, p placed, ps lanes.Pause, used map[string]bool) {
	st := m.Styles
	if p.x[ps.Start] < 0 || ps.Start >= p.d.Pos {
		return
	}
	a := p.x[ps.Start] + 2
	b := m.cursorCol(p)
	if ps.End >= 0 && ps.End < p.d.Pos && p.x[ps.End] >= 0 {
		b = p.x[ps.End] - 1
	}
	drew := false
	for c := a + 1; c < b && c < len(lane); c++ {
		if lane[c].r == ' ' {
			lane[c] = cell{r: pauseGlyph, style: &st.Faint}
			drew = true
		}
	}
	if !drew {
		return
	}
	used[string(pauseGlyph)] = true
	if a+2+len("paused") < b-1 {
		lane.set(a+2, "paused", &st.Faint)
	}
}

// dangerLines spell out each danger the lanes mark, newest last.
func (m view) dangerLines(d lanes.Diagram, w int) []string {
	st := m.Styles
	var out []string
	for _, mv := range d.Danger() {
		var what string
		switch mv.Mark {
		case lanes.Stale:
			what = fmt.Sprintf("%s's write at %d was accepted after a newer fence: a stale write", mv.Actor, mv.T)
		case lanes.Regressed:
			what = fmt.Sprintf("%s's %s at %d took the lease row back to an older fence", mv.Actor, actionNoun(mv.Action), mv.T)
		case lanes.Blocked:
			what = fmt.Sprintf("%s's write at %d was valid, yet refused: blocked", mv.Actor, mv.T)
		}
		out = append(out, text.Wrap([]text.Span{text.Styled(&st.Alarm, mv.Mark.Glyph()+" "), text.Plain(what)}, w, "", "  ")...)
	}
	return out
}

// actionNoun names a move's kind in a sentence.
func actionNoun(a scenario.Action) string {
	switch a {
	case scenario.ActionDeliver:
		return "heartbeat"
	case scenario.ActionReelect:
		return "re-election"
	case scenario.ActionAcquire:
		return "acquire"
	}
	_, w := lanes.Letter(a)
	return w
}

// ShortWords names a kind of move in a tight legend.
func ShortWords(a scenario.Action) (string, bool) {
	switch a {
	case scenario.ActionSend:
		return "send", true
	case scenario.ActionDeliver:
		return "arrives", true
	case scenario.ActionReply:
		return "reply", true
	case scenario.ActionAdvance:
		return "tick", true
	}
	return "", false
}

// legend names every glyph the lanes show: the letters of the kinds of
// move, the marks, the network's lines and the cursor. It is never left
// out; a tight screen gets it in fewer words.
func (m view) legend(d lanes.Diagram, w int, used map[string]bool, full bool) []string {
	st := m.Styles
	var p []text.Span
	sep := func() {
		if len(p) > 0 {
			p = append(p, text.Plain(" · "))
		}
	}
	for _, a := range d.ActionsUsed() {
		l, what := lanes.Letter(a)
		if short, ok := ShortWords(a); ok && !full {
			what = short
		}
		sep()
		p = append(p, text.Styled(&st.Done, l), text.Plain(" "+what))
	}
	for _, k := range d.MarksUsed() {
		sep()
		words := k.Words()
		if !full {
			words, _, _ = strings.Cut(words, ":")
		}
		p = append(p, text.Styled(m.markInk(k), k.Glyph()), text.Plain(" "+words))
	}
	if used[flightGlyphs] {
		sep()
		p = append(p, text.Styled(&st.Done, flightGlyphs), text.Plain(" message, send to arrival"))
	}
	if used["─"] {
		sep()
		p = append(p, text.Styled(&st.Done, "─"), text.Plain(" in flight"))
	}
	if used[string(pendingFlight)] {
		sep()
		p = append(p, text.Styled(&st.Pending, string(pendingFlight)), text.Plain(" still to fly"))
	}
	if used[string(pauseGlyph)] {
		sep()
		words := " paused: the process stops, time goes on"
		if !full {
			words = " paused"
		}
		p = append(p, text.Styled(&st.Faint, string(pauseGlyph)), text.Plain(words))
	}
	if used[CutGlyph] {
		sep()
		p = append(p, text.Styled(&st.Faint, CutGlyph), text.Plain(" earlier moves cut"))
	}
	sep()
	p = append(p, text.Styled(&st.Cursor, cursorGlyph), text.Plain(" now"))
	return text.Wrap(p, w, "", "  ")
}
