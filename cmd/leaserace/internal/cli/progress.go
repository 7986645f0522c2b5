package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"
)

// LightBackground reads COLORFGBG ("fg;bg"), which many terminals set: a
// background of 7 or 15 is light. Without it, dark is the likelier guess.
func LightBackground(getenv func(string) string) bool {
	v := getenv("COLORFGBG")
	bg := v[strings.LastIndex(v, ";")+1:]
	return bg == "7" || bg == "15"
}

// TerminalWidth is the width to wrap to: the terminal's, else $COLUMNS,
// else 80.
func TerminalWidth(w io.Writer, getenv func(string) string) int {
	if f, ok := w.(*os.File); ok && IsTerminal(f) {
		if cols, _, err := term.GetSize(f.Fd()); err == nil && cols >= 40 {
			return cols
		}
	}
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n >= 40 {
		return n
	}
	return 80
}

// ProgressBar shows a command's progress on standard error: a bar redrawn
// in place on a terminal, a line every tenth of the way otherwise, so logs
// stay short.
type ProgressBar struct {
	w          io.Writer
	label      string
	unit       string
	tty        bool
	start      time.Time
	drawn      time.Time
	lastTenth  int
	done, tot  int
	wroteInTTY bool
}

func NewProgressBar(w io.Writer, label, unit string) *ProgressBar {
	return &ProgressBar{w: w, label: label, unit: unit, tty: IsTerminal(w), start: time.Now(), lastTenth: -1}
}

// update is called with how many of how many are done; calls never overlap.
func (p *ProgressBar) Update(done, total int) {
	p.done, p.tot = done, total
	if total <= 0 {
		return
	}
	if !p.tty {
		if tenth := done * 10 / total; tenth != p.lastTenth {
			p.lastTenth = tenth
			fmt.Fprintf(p.w, "%s: %d/%d %s (%d%%)\n", p.label, done, total, p.unit, done*100/total)
		}
		return
	}
	// Redrawing more than ~20 times a second only costs time.
	if done != total && time.Since(p.drawn) < 50*time.Millisecond {
		return
	}
	p.drawn = time.Now()
	const width = 30
	fill := done * width / total
	rate := ""
	if s := time.Since(p.start).Seconds(); s > 0.2 {
		rate = fmt.Sprintf("  %.0f %s/s", float64(done)/s, p.unit)
	}
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d %s%s\x1b[K", p.label,
		strings.Repeat("█", fill), strings.Repeat("·", width-fill), done, total, p.unit, rate)
	p.wroteInTTY = true
}

// finish ends the bar's line on a terminal.
func (p *ProgressBar) Finish() {
	if p.tty && p.wroteInTTY {
		fmt.Fprintln(p.w)
	}
}

// StateCounter shows a search's progress on standard error when the total
// is not known ahead: a count redrawn in place on a terminal, otherwise a
// line each time the count doubles, so logs stay short.
type StateCounter struct {
	w       io.Writer
	label   string
	tty     bool
	start   time.Time
	drawn   time.Time
	next    int
	states  int
	written bool
}

func NewStateCounter(w io.Writer, label string) *StateCounter {
	return &StateCounter{w: w, label: label, tty: IsTerminal(w), start: time.Now(), next: 1000}
}

// update is told the states found so far; calls never overlap.
func (c *StateCounter) Update(states int) {
	c.states = states
	if !c.tty {
		if states >= c.next {
			fmt.Fprintf(c.w, "%s: %d states\n", c.label, states)
			for c.next <= states {
				c.next *= 2
			}
		}
		return
	}
	if time.Since(c.drawn) < 50*time.Millisecond {
		return
	}
	c.drawn = time.Now()
	rate := ""
	if s := time.Since(c.start).Seconds(); s > 0.2 {
		rate = fmt.Sprintf("  %.0f states/s", float64(states)/s)
	}
	fmt.Fprintf(c.w, "\r%s: %d states%s\x1b[K", c.label, states, rate)
	c.written = true
}

// finish ends the count's line on a terminal.
func (c *StateCounter) Finish() {
	if c.tty && c.written {
		fmt.Fprintf(c.w, "\r%s: %d states\x1b[K\n", c.label, c.states)
	}
}
