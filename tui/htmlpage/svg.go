package htmlpage

import (
	"fmt"
	"html"
	"strings"
)

// The diagram's geometry, in SVG user units (CSS pixels at 100 %).
const (
	labelW = 64 // the lanes' names
	colW   = 96 // one column per move
	laneH  = 78
	rulerH = 40 // times above the lanes
	markR  = 14
	tailW  = 80 // room right of the last column for "lost" and "in flight"
)

func colX(c int) int  { return labelW + c*colW + colW/2 }
func laneY(l int) int { return rulerH + l*laneH + laneH/2 }

// svgOf draws the diagram: a lane per actor and the clock, a mark per
// move, every message from send to arrival (or to "lost"), the times
// above, and a cursor line that the page's script moves. Every mark is a
// focusable button carrying its step's index.
func svgOf(d diagram) string {
	n := len(d.Times)
	w := labelW + max(n, 1)*colW + tailW
	h := rulerH + len(d.Lanes)*laneH + 8
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg id="lanes" width="%d" height="%d" viewBox="0 0 %d %d" role="group" aria-label="The run as lanes: one per actor and one for the clock, a mark per move, arrows for messages from send to arrival">`, w, h, w, h)
	p(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker>`)
	p(`<marker id="arrow-stale" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead stale"/></marker></defs>`)

	// Times: one label per run of columns at the same time.
	for c, t := range d.Times {
		if c > 0 && d.Times[c-1] == t {
			continue
		}
		p(`<text class="time" x="%d" y="%d">t=%d</text>`, colX(c), rulerH-22, t)
		p(`<line class="tick" x1="%d" y1="%d" x2="%d" y2="%d"/>`, colX(c), rulerH-14, colX(c), h-8)
	}
	for l, name := range d.Lanes {
		y := laneY(l)
		cls := "lane"
		if name == "clock" {
			cls += " clock"
		}
		p(`<g class="%s" data-lane="%s"><text class="lane-name" x="8" y="%d">%s</text>`, cls, esc(name), y+5, esc(name))
		p(`<line class="lane-line" x1="%d" y1="%d" x2="%d" y2="%d"/></g>`, labelW, y, w-8, y)
	}
	for _, m := range d.Messages {
		messageSVG(&b, m)
	}
	for _, m := range d.Marks {
		x, y := colX(m.Step), laneY(m.Lane)
		cls := "mark k-" + string(m.Kind)
		if m.Kind.danger() {
			cls += " danger"
		}
		p(`<g class="%s" data-step="%d" data-kind="%s" tabindex="0" role="button" aria-label="step %d at %d, %s %s: %s">`,
			cls, m.Step, m.Kind, m.Step+1, d.Times[m.Step], esc(d.Lanes[m.Lane]), esc(m.Label), esc(m.Kind.words()))
		if m.Kind.danger() {
			p(`<rect class="halo" x="%d" y="%d" width="%d" height="%d" rx="6"/>`, x-colW/2+4, y-laneH/2+4, colW-8, laneH-8)
			p(`<text class="danger-word" x="%d" y="%d">%s</text>`, x, y-markR-6, strings.ToUpper(dangerWord(m.Kind)))
		}
		p(`<circle cx="%d" cy="%d" r="%d"/>`, x, y, markR)
		p(`<text class="glyph" x="%d" y="%d">%s</text>`, x, y+5, m.Kind.glyph())
		p(`<text class="move" x="%d" y="%d">%s</text>`, x, y+markR+14, esc(m.Label))
		p(`</g>`)
	}
	p(`<line id="cursor" class="cursor" x1="%d" y1="%d" x2="%d" y2="%d"/>`, cursorX(n), rulerH-14, cursorX(n), h-4)
	p(`</svg>`)
	return b.String()
}

// cursorX is where the cursor stands after pos moves: between the last
// move made and the next one. The page's script computes the same.
func cursorX(pos int) int { return labelW + pos*colW }

// dangerWord is the word written above a danger mark.
func dangerWord(k markKind) string {
	if k == markRegressed {
		return "regressed"
	}
	return "stale accepted"
}

// messageSVG draws one message: an arc within its sender's lane when it
// comes back there, a line to another lane otherwise; stale ones dashed,
// lost ones ending in a cross and the word.
func messageSVG(b *strings.Builder, m message) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	x1, y1 := colX(m.From), laneY(m.Lane)-markR
	x2, y2 := 0, 0
	end := ""
	switch {
	case m.To < 0:
		// Still travelling when the run ended, or held for ever.
		x2, y2 = colX(m.From)+colW/2+tailW/2, y1
		if m.From < 0 {
			x2 = x1 + colW
		}
		end = "in flight at the end"
		if m.Lost {
			end = "lost"
		}
	default:
		x2, y2 = colX(m.To), laneY(m.ToLane)-markR
		if m.Lost {
			end = "lost"
		}
	}
	cls := "msg"
	marker := "arrow"
	if m.StaleAt >= 0 {
		cls += " stale"
		marker = "arrow-stale"
	}
	if m.Lost {
		cls += " lost"
	}
	// A quadratic arc above the lane, higher for longer messages.
	lift := min(28, 10+(x2-x1)/20)
	cx, cy := (x1+x2)/2, min(y1, y2)-lift
	p(`<g class="%s" data-msg="%s" data-from="%d" data-to="%d">`, cls, esc(m.ID), m.From, m.To)
	p(`<path d="M%d,%d Q%d,%d %d,%d" marker-end="url(#%s)"/>`, x1, y1, cx, cy, x2, y2, marker)
	label := m.ID
	if m.StaleAt >= 0 {
		label += " (stale)"
	}
	p(`<text class="msg-label" x="%d" y="%d">%s</text>`, cx, cy+lift/2-4, esc(label))
	if end != "" {
		p(`<text class="msg-end" x="%d" y="%d">%s%s</text>`, x2+4, y2-4, map[bool]string{true: "✕ ", false: "… "}[m.Lost], end)
	}
	p(`</g>`)
}

func esc(s string) string { return html.EscapeString(s) }
