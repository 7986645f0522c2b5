package tui

import "strings"

// View renders the screen. It never calls the engine: everything comes
// from the last snapshot, so it is cheap and safe at any size.
func (m Model) View() string {
	return strings.Join(m.ViewLines(), "\n")
}

// ViewLines is View as its lines: a room session's painter draws line by
// line, and a joined frame would only be split again.
func (m Model) ViewLines() []string {
	if m.quitting {
		return nil
	}
	w, h := m.width, m.height
	if w == 0 && h == 0 {
		// Bubble Tea reports a size only for a terminal; output to a pipe
		// gets a classic 80×24 frame.
		w, h = 80, 24
	}
	return m.Lines(w, h)
}
