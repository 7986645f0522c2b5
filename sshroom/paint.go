package sshroom

import (
	"io"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// painter draws one session's frames on its terminal, in place of Bubble
// Tea's renderer. That renderer wakes FPS times a second for every session
// whether or not its frame changed: 400 idle attendees cost 13–22 % of a
// core in ticks alone (docs/room-scale.md). The painter draws when a frame
// changed, at once if the last draw is older than a tick and otherwise at
// the next tick, and rewrites only the lines that changed.
//
// It owns the terminal's modes too: the alternate screen, the hidden
// cursor and bracketed paste from the first frame until stop.
type painter struct {
	out  io.Writer
	tick time.Duration

	mu      sync.Mutex
	latest  string // the newest frame asked for
	drawn   string // the frame last drawn, "" before the first
	w, h    int
	full    bool        // the next draw repaints everything (a resize)
	timer   *time.Timer // the draw to come, nil when none is due
	last    time.Time   // when the last draw began
	stopped bool

	// wmu makes draws and stop's restore one at a time, in order; shown
	// and started belong to it.
	wmu     sync.Mutex
	shown   []string
	started bool
}

func newPainter(out io.Writer, fps, w, h int) *painter {
	return &painter{out: out, tick: time.Second / time.Duration(fps), w: w, h: h}
}

// set asks for frame v to be on screen.
func (p *painter) set(v string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || (v == p.latest && !p.full) {
		return
	}
	p.latest = v
	p.schedule()
}

// resize is the terminal's new size: the next draw repaints the whole
// screen, as the terminal may have reflowed what it showed.
func (p *painter) resize(w, h int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || (w == p.w && h == p.h) {
		return
	}
	p.w, p.h, p.full = w, h, true
	p.schedule()
}

// schedule starts a draw unless one is due (p.mu held).
func (p *painter) schedule() {
	if p.timer != nil {
		return
	}
	p.timer = time.AfterFunc(max(0, p.tick-time.Since(p.last)), p.draw)
}

// draw writes what changed since the last draw.
func (p *painter) draw() {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	v, w, h, full := p.latest, p.w, p.h, p.full
	p.timer, p.full, p.last = nil, false, time.Now()
	same := v == p.drawn && !full
	p.drawn = v
	p.mu.Unlock()
	if same {
		return
	}
	var b strings.Builder
	if !p.started {
		p.started = true
		b.WriteString(ansi.SetModeAltScreenSaveCursor + ansi.HideCursor + ansi.SetModeBracketedPaste)
		full = true
	}
	if full {
		b.WriteString(ansi.ResetStyle + ansi.EraseEntireScreen)
		p.shown = nil
	}
	lines := frameLines(v, w, h)
	for i, l := range lines {
		if i < len(p.shown) && p.shown[i] == l {
			continue
		}
		// Each changed line is addressed by its row and erased whole
		// before it is written, so a line that fills the width leaves
		// nothing of the old one and needs no erase after it.
		b.WriteString(ansi.CursorPosition(1, i+1) + ansi.ResetStyle + ansi.EraseEntireLine)
		b.WriteString(l)
	}
	if len(p.shown) > len(lines) {
		b.WriteString(ansi.CursorPosition(1, len(lines)+1) + ansi.ResetStyle + ansi.EraseScreenBelow)
	}
	p.shown = lines
	_, _ = io.WriteString(p.out, b.String())
}

// stop ends the drawing and gives the terminal back as it was: no draw
// starts after it.
func (p *painter) stop() {
	p.mu.Lock()
	p.stopped = true
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.mu.Unlock()
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.started {
		p.started = false
		_, _ = io.WriteString(p.out, ansi.ResetStyle+ansi.ResetModeBracketedPaste+ansi.ShowCursor+ansi.ResetModeAltScreenSaveCursor)
	}
}

// frameLines splits a frame into the lines a w×h terminal shows: the last
// h of them, as Bubble Tea's renderer keeps, each cut to w cells. A line
// of no more bytes than cells cannot be wider, which spares measuring
// most of them.
func frameLines(v string, w, h int) []string {
	lines := strings.Split(v, "\n")
	if h > 0 && len(lines) > h {
		lines = lines[len(lines)-h:]
	}
	if w <= 0 {
		return lines
	}
	for i, l := range lines {
		if len(l) > w && ansi.StringWidth(l) > w {
			lines[i] = ansi.Truncate(l, w, "")
		}
	}
	return lines
}
