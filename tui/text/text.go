// Package text lays styled text out in terminal cells: spans of one style,
// wrapped on word boundaries to a width, padded, clipped and set side by
// side. The screen and the explore map draw with it; it knows nothing of
// what they show.
package text

import (
	"strings"
	"unicode/utf8"

	"github.com/leaserace/leaserace/tui/styles"

	"github.com/charmbracelet/x/ansi"
)

// A Span is a run of text in one style. Views build paragraphs of spans
// and wrap them on word boundaries before styling, so that a narrow
// terminal breaks lines between words and never inside one.
type Span struct {
	Text  string
	Style *styles.Ink // nil: plain
}

// Plain is text without a style.
func Plain(s string) Span { return Span{Text: s} }

// Styled is text in style st.
func Styled(st *styles.Ink, s string) Span { return Span{Text: s, Style: st} }

// token is a piece of a word in one style.
type token struct {
	text  string
	style *styles.Ink
	width int
}

// word is the text between two spaces, toks[lo:hi] of what words
// returns; it may mix styles.
type word struct {
	lo, hi int
	width  int
}

// words splits spans at spaces. Text that touches across a span boundary
// stays one word, so "fence 2" + "→ 1" wraps like the reader expects.
// Every word's tokens share one slice: a frame wraps many paragraphs,
// and a slice per word was most of its allocations.
func words(p []Span) ([]token, []word) {
	n := 0
	for _, sp := range p {
		n += 1 + strings.Count(sp.Text, " ")
	}
	toks := make([]token, 0, n)
	out := make([]word, 0, n)
	cur := word{}
	flush := func() {
		if cur.hi > cur.lo {
			out = append(out, cur)
		}
		cur = word{lo: len(toks), hi: len(toks)}
	}
	for _, sp := range p {
		// Newlines and tabs in engine text (error messages) are spaces
		// here; a stray newline would break the frame's line count.
		rest := strings.Map(blank, sp.Text)
		for i := 0; ; i++ {
			piece, after, more := strings.Cut(rest, " ")
			if i > 0 {
				flush()
			}
			if piece != "" {
				w := Width(piece)
				toks = append(toks, token{text: piece, style: sp.Style, width: w})
				cur.hi = len(toks)
				cur.width += w
			}
			if !more {
				break
			}
			rest = after
		}
	}
	flush()
	return toks, out
}

func blank(r rune) rune {
	if r == '\n' || r == '\t' || r == '\r' {
		return ' '
	}
	return r
}

// Wrap lays spans out in lines of at most width cells. The first line
// starts with first, later ones with rest (a hanging indent); both are
// plain text. A word wider than a whole line is split, as nothing else fits.
func Wrap(p []Span, width int, first, rest string) []string {
	if width < 1 {
		return nil
	}
	fw, rw := Width(first), Width(rest)
	if fw >= width || rw >= width {
		first, rest, fw, rw = "", "", 0, 0
	}
	var lines []string
	var lb lineBuf
	lb.add(nil, first)
	col, avail, empty := 0, width-fw, true
	newline := func() {
		lines = append(lines, lb.line())
		lb.add(nil, rest)
		col, avail, empty = 0, width-rw, true
	}
	toks, ws := words(p)
	for _, w := range ws {
		wt := toks[w.lo:w.hi]
		need := w.width
		if !empty {
			need++
		}
		if col+need > avail && !empty {
			newline()
			need = w.width
		}
		if w.width > avail {
			// Only a word longer than a line gets here: break it by cells.
			for _, t := range wt {
				for _, r := range t.text {
					rs := string(r)
					cw := Width(rs)
					if col+cw > avail && !empty {
						newline()
					}
					lb.add(t.style, rs)
					col += cw
					empty = false
				}
			}
			continue
		}
		if !empty {
			// The space takes the style of the words it joins, if they
			// share one, so a reversed phrase stays one block.
			var st *styles.Ink
			if lb.has && lb.st == wt[0].style {
				st = lb.st
			}
			lb.add(st, " ")
		}
		for _, t := range wt {
			lb.add(t.style, t.text)
		}
		col += need
		empty = false
	}
	if !empty || len(lines) == 0 {
		lines = append(lines, lb.line())
	}
	return lines
}

// lineBuf builds a line, rendering each run of one style in one call:
// far fewer escape sequences and far less work than a call per word.
type lineBuf struct {
	b, run strings.Builder
	st     *styles.Ink
	has    bool
}

func (l *lineBuf) add(st *styles.Ink, s string) {
	if s == "" {
		return
	}
	if l.has && st != l.st {
		l.flush()
	}
	l.st, l.has = st, true
	l.run.WriteString(s)
}

func (l *lineBuf) flush() {
	if l.has {
		l.b.WriteString(Render(l.st, l.run.String()))
		l.run.Reset()
		l.has = false
	}
}

func (l *lineBuf) line() string {
	l.flush()
	s := l.b.String()
	l.b.Reset()
	return s
}

// Spread puts left at the start and right at the end of one line w cells
// wide.
func Spread(left, right []Span, w int) string {
	pad := w - SpansWidth(left) - SpansWidth(right)
	return Line(left) + strings.Repeat(" ", max(1, pad)) + Line(right)
}

// SpansWidth is the cells spans take on one line.
func SpansWidth(p []Span) int {
	n := 0
	for _, s := range p {
		n += Width(s.Text)
	}
	return n
}

// Line renders spans as one line, without wrapping.
func Line(p []Span) string {
	var b strings.Builder
	for _, s := range p {
		b.WriteString(Render(s.Style, s.Text))
	}
	return b.String()
}

// Width is the cells s takes, escape sequences skipped. Text made of
// ASCII and the narrow symbols the TUI draws (box lines, arrows, ✓ ✗ ⚠) is
// counted directly; anything else goes to full grapheme segmentation.
func Width(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b && i+1 < len(s) && s[i+1] == '[':
			// A CSI sequence (SGR colours): ESC [ parameters final-byte.
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j + 1
		case c < 0x20 || c == 0x7f:
			return ansi.StringWidth(s)
		case c < 0x80:
			n++
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if !narrow(r) {
				return ansi.StringWidth(s)
			}
			n++
			i += size
		}
	}
	return n
}

// narrow reports runes known to take one cell and never to combine.
func narrow(r rune) bool {
	switch {
	case r >= 0xB0 && r <= 0x2AF, // Latin-1 letters and signs, Latin extended
		r >= 0x2010 && r <= 0x2027,            // dashes, quotes, bullets, ellipsis
		r >= 0x2190 && r <= 0x21FF,            // arrows
		r >= 0x2500 && r <= 0x25FC,            // box drawing, blocks, geometric shapes
		r == 0x2713, r == 0x2717, r == 0x26A0: // ✓ ✗ ⚠
		return true
	}
	return false
}

// Render draws s in style st (nil: as it is).
func Render(st *styles.Ink, s string) string {
	if st == nil {
		return s
	}
	return st.Render(s)
}

// Fit pads or cuts a rendered line to exactly width cells. Cutting is the
// last resort: layouts wrap first, so this only trims borders at tiny sizes.
func Fit(line string, width int) string {
	if width <= 0 {
		return ""
	}
	w := Width(line)
	switch {
	case w == width:
		return line
	case w < width:
		return line + strings.Repeat(" ", width-w)
	}
	return ansi.Truncate(line, width, "")
}

// ClipSaying cuts a block to at most n lines like Clip, its last line
// "… " and where says where to see the rest ("e exports it in full"), so
// a cut never leaves a bare ellipsis. The line is cut to the block's
// widest line.
func ClipSaying(lines []string, n int, where string) []string {
	out := Clip(lines, n)
	if len(out) == len(lines) || len(out) == 0 || where == "" {
		return out
	}
	w := 0
	for _, l := range lines {
		w = max(w, Width(l))
	}
	out[len(out)-1] = ansi.Truncate("… "+where, max(w, 1), "")
	return out
}

// Clip cuts a block to at most n lines, marking the cut with an ellipsis
// line when there is room for one.
func Clip(lines []string, n int) []string {
	if n <= 0 {
		return nil
	}
	if len(lines) <= n {
		return lines
	}
	out := append([]string(nil), lines[:n]...)
	out[n-1] = "…"
	return out
}

// HJoin puts blocks side by side, each padded to its width, separated by
// sep, and as tall as the tallest.
func HJoin(sep string, widths []int, blocks ...[]string) []string {
	h := 0
	for _, b := range blocks {
		h = max(h, len(b))
	}
	out := make([]string, h)
	for i := range h {
		var b strings.Builder
		for j, blk := range blocks {
			if j > 0 {
				b.WriteString(sep)
			}
			line := ""
			if i < len(blk) {
				line = blk[i]
			}
			b.WriteString(Fit(line, widths[j]))
		}
		out[i] = b.String()
	}
	return out
}
