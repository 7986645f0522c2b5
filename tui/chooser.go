package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/tui/screen"
)

// chooseMsg asks the model to open a scenario.
type chooseMsg struct{ name string }

// updateChooser moves the list's cursor, and on enter closes the list and
// asks for the chosen scenario.
func updateChooser(c screen.Chooser, msg tea.Msg) (screen.Chooser, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok || !c.Open {
		return c, nil
	}
	switch {
	case key.Matches(km, c.Keys.Up):
		if c.Cursor > 0 {
			c.Cursor--
		}
	case key.Matches(km, c.Keys.Down):
		if c.Cursor < len(c.Names)-1 {
			c.Cursor++
		}
	case key.Matches(km, c.Keys.Cancel):
		c.Open = false
	case key.Matches(km, c.Keys.Choose):
		c.Open = false
		if c.Cursor < len(c.Names) {
			name := c.Names[c.Cursor]
			return c, func() tea.Msg { return chooseMsg{name: name} }
		}
	}
	return c, nil
}
