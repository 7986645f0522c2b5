package sshroom

import (
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/leaserace/leaserace/internal/memo"
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
	out    io.Writer
	tick   time.Duration
	widths *memo.Memo[string, int] // shared by the server's sessions

	mu      sync.Mutex
	latest  []string // the newest frame asked for, by line
	drawn   []string // the frame last drawn, nil before the first
	w, h    int
	full    bool        // the next draw repaints everything (a resize)
	timer   *time.Timer // the draw to come, nil when none is due
	last    time.Time   // when the last draw began
	stopped bool

	// wmu makes draws and stop's restore one at a time, in order; raw,
	// shown and started belong to it. raw are the frame's lines as the
	// app made them, shown as they were drawn (cut to the width).
	wmu        sync.Mutex
	raw, shown []string
	started    bool
	// buf is the bytes of a draw, kept for the next: a draw of a whole
	// frame is kilobytes, and a room draws thousands a second.
	buf []byte
}

// newPainter draws on out; widths nil gives the painter a memo of its own.
func newPainter(out io.Writer, fps, w, h int, widths *memo.Memo[string, int]) *painter {
	if widths == nil {
		widths = newWidthCache(widthCacheSize)
	}
	return &painter{out: out, tick: time.Second / time.Duration(fps), w: w, h: h, widths: widths}
}

// set asks for frame v to be on screen.
func (p *painter) set(v string) { p.setLines(strings.Split(v, "\n")) }

// setLines asks for the frame of these lines to be on screen. The painter
// keeps them: the caller must not change them after.
func (p *painter) setLines(lines []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || (p.latest != nil && slices.Equal(lines, p.latest) && !p.full) {
		return
	}
	if lines == nil {
		lines = []string{} // an empty frame still differs from none
	}
	p.latest = lines
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
	same := p.drawn != nil && slices.Equal(v, p.drawn) && !full
	p.drawn = v
	p.mu.Unlock()
	if same {
		return
	}
	b := p.buf[:0]
	if !p.started {
		p.started = true
		b = append(b, ansi.SetModeAltScreenSaveCursor+ansi.HideCursor+ansi.SetModeBracketedPaste...)
		full = true
	}
	if full {
		b = append(b, ansi.ResetStyle+ansi.EraseEntireScreen...)
		p.raw, p.shown = nil, nil
	}
	raw := lastRows(v, h)
	shown := make([]string, len(raw))
	for i, l := range raw {
		if i < len(p.raw) && p.raw[i] == l {
			// Unchanged: it is on screen, already cut to the width.
			shown[i] = p.shown[i]
			continue
		}
		shown[i] = fit(l, w, p.widths)
		// Each changed line is addressed by its row and erased whole
		// before it is written, so a line that fills the width leaves
		// nothing of the old one and needs no erase after it.
		b = append(b, ansi.CursorPosition(1, i+1)...)
		b = append(b, ansi.ResetStyle+ansi.EraseEntireLine...)
		b = append(b, shown[i]...)
	}
	if len(p.shown) > len(shown) {
		b = append(b, ansi.CursorPosition(1, len(shown)+1)+ansi.ResetStyle+ansi.EraseScreenBelow...)
	}
	p.raw, p.shown, p.buf = raw, shown, b
	_, _ = p.out.Write(b)
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

// lastRows are the lines a terminal h rows tall shows: the last h of
// them, as Bubble Tea's renderer keeps (all of them when h is 0).
func lastRows(lines []string, h int) []string {
	if h > 0 && len(lines) > h {
		lines = lines[len(lines)-h:]
	}
	return lines
}

// fit cuts a line to w cells (w > 0). A line of no more bytes than cells
// cannot be wider, which spares measuring most plain lines; the others'
// widths come from the memo.
func fit(l string, w int, widths *memo.Memo[string, int]) string {
	if w <= 0 || len(l) <= w || widths.Of(l, ansi.StringWidth) <= w {
		return l
	}
	return ansi.Truncate(l, w, "")
}

// widthCacheSize bounds the lines whose widths a server keeps: a few
// frames' worth for each of the round's positions and window widths.
const widthCacheSize = 4096

// newWidthCache is a server's memo of line widths, shared by its sessions.
func newWidthCache(size int) *memo.Memo[string, int] { return memo.New[string, int](size) }
