package tui

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
