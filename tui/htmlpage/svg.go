package htmlpage

import (
	"fmt"
	"html"
	"strconv"
	"strings"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/tui/lanes"
)

// The diagram's geometry, in SVG user units (CSS pixels at 100 %).
const (
	labelW = 64  // the lanes' names
	colW   = 100 // one column per move
	laneH  = 90
	rulerH = 40 // times above the lanes
	markR  = 14
	tailW  = 80 // room right of the last column for "lost" and "in flight"
)

func colX(c int) int  { return labelW + c*colW + colW/2 }
func laneY(l int) int { return rulerH + l*laneH + laneH/2 }

// svgOf draws the lane model: a lane per actor and the clock, a mark per
// move in its column (moves at one time side by side, in order), every
// message from send to arrival (or to "lost"), the times above, and a
// cursor line that the page's script moves. Every mark is a focusable
// button carrying its step's index.
func svgOf(d lanes.Diagram, tr transcript.Transcript) string {
	n := len(d.Moves)
	w := labelW + max(n, 1)*colW + tailW
	h := rulerH + len(d.Lanes)*laneH + 8
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg id="lanes" width="%d" height="%d" viewBox="0 0 %d %d" role="group" aria-label="The run as lanes: one per actor and one for the clock, a mark per move, arrows for messages from send to arrival">`, w, h, w, h)
	p(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker>`)
	p(`<marker id="arrow-stale" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead stale"/></marker></defs>`)

	// Times: one label per instant, over its first column.
	for _, t := range d.Times {
		c := t.Moves[0]
		p(`<text class="time" x="%d" y="%d">t=%d</text>`, colX(c), rulerH-22, t.T)
		p(`<line class="tick" x1="%d" y1="%d" x2="%d" y2="%d"/>`, colX(c), rulerH-14, colX(c), h-8)
	}
	for l, lane := range d.Lanes {
		y := laneY(l)
		cls := "lane"
		if lane.Clock {
			cls += " clock"
		}
		p(`<g class="%s" data-lane="%s"><text class="lane-name" x="8" y="%d">%s</text>`, cls, esc(lane.Name), y+5, esc(lane.Name))
		p(`<line class="lane-line" x1="%d" y1="%d" x2="%d" y2="%d"/></g>`, labelW, y, w-8, y)
	}
	for _, m := range d.Messages {
		toLane := m.Lane
		if m.End >= 0 {
			toLane = d.Moves[m.End].Lane
		}
		messageSVG(&b, m, toLane, staleInFlight(tr, m))
	}
	for _, mv := range d.Moves {
		x, y := colX(mv.Index), laneY(mv.Lane)
		kind := kindOf(mv.Mark)
		cls := "mark k-" + kind
		if mv.Mark.Danger() {
			cls += " danger"
		}
		label := moveLabel(mv, tr.Steps[mv.Index])
		p(`<g class="%s" data-step="%d" data-kind="%s" tabindex="0" role="button" aria-label="move %d at %d, %s %s: %s">`,
			cls, mv.Index, kind, mv.Index+1, mv.T, esc(d.Lanes[mv.Lane].Name), esc(label), esc(mv.Mark.Words()))
		if mv.Mark.Danger() {
			p(`<rect class="halo" x="%d" y="%d" width="%d" height="%d" rx="6"/>`, x-colW/2+4, y-laneH/2+4, colW-8, laneH-8)
			for i, w := range dangerWords(mv.Mark) {
				p(`<text class="danger-word" x="%d" y="%d">%s</text>`, x, y-markR-17+i*11, w)
			}
		}
		p(`<circle cx="%d" cy="%d" r="%d"/>`, x, y, markR)
		p(`<text class="glyph" x="%d" y="%d">%s</text>`, x, y+5, esc(mv.Mark.Glyph()))
		p(`<text class="move" x="%d" y="%d">%s</text>`, x, y+markR+14, esc(label))
		p(`</g>`)
	}
	p(`<line id="cursor" class="cursor" x1="%d" y1="%d" x2="%d" y2="%d"/>`, cursorX(n), rulerH-14, cursorX(n), h-4)
	p(`</svg>`)
	return b.String()
}

// cursorX is where the cursor stands after pos moves: between the last
// move made and the next one. The page's script computes the same.
func cursorX(pos int) int { return labelW + pos*colW }

// messageSVG draws one message: an arc from the move that sent it to the
// move that ended it (in its own lane or another); stale ones dashed, lost
// ones ending in a cross and the word.
func messageSVG(b *strings.Builder, m lanes.Message, toLane int, stale bool) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	x1, y1 := colX(m.Send), laneY(m.Lane)-markR
	var x2, y2 int
	end := ""
	if m.End < 0 {
		// Still travelling when the run ended, or never to arrive.
		x2, y2 = colX(m.Send)+colW/2+tailW/2, y1
		end = "in flight at the end"
	} else {
		x2, y2 = colX(m.End), laneY(toLane)-markR
	}
	if m.Lost {
		end = "lost"
	}
	cls, marker := "msg", "arrow"
	if stale {
		cls, marker = "msg stale", "arrow-stale"
	}
	if m.Lost {
		cls += " lost"
	}
	// A quadratic arc above the lane, higher for longer messages.
	lift := min(28, 10+(x2-x1)/20)
	cx, cy := (x1+x2)/2, min(y1, y2)-lift
	p(`<g class="%s" data-msg="%s" data-from="%d" data-to="%d">`, cls, esc(m.ID), m.Send, m.End)
	p(`<path d="M%d,%d Q%d,%d %d,%d" marker-end="url(#%s)"/>`, x1, y1, cx, cy, x2, y2, marker)
	label := m.ID
	if m.Kind == transcript.KindReply {
		label += " reply"
	}
	if stale {
		label += " (stale)"
	}
	p(`<text class="msg-label" x="%d" y="%d">%s</text>`, cx, cy+lift/2-4, esc(label))
	if end != "" {
		glyph := "… "
		if m.Lost {
			glyph = "✕ "
		}
		p(`<text class="msg-end" x="%d" y="%d">%s%s</text>`, x2+4, y2-4, glyph, end)
	}
	p(`</g>`)
}

func esc(s string) string { return html.EscapeString(s) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
