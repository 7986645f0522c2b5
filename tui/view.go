package tui

import "github.com/leaserace/leaserace/tui/screen"

// The smallest terminal the full screen fits in; below it the TUI says so.
const (
	MinWidth  = screen.MinWidth
	MinHeight = screen.MinHeight
)

// TooSmall is the TUI's minimum-size rule (screen.TooSmall): a w×h
// terminal it calls too small gets a line asking for a larger one instead
// of the screen.
func TooSmall(w, h int) bool { return screen.TooSmall(w, h) }

// View renders the screen. It never calls the engine: everything comes
// from the last snapshot, so it is cheap and safe at any size.
func (m Model) View() string {
	if m.quitting {
		return ""
	}
	w, h := m.width, m.height
	if w == 0 && h == 0 {
		// Bubble Tea reports a size only for a terminal; output to a pipe
		// gets a classic 80×24 frame.
		w, h = 80, 24
	}
	return m.Frame(w, h)
}
