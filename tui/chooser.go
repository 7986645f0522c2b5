package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/keys"
	"github.com/leaserace/leaserace/tui/styles"
	"github.com/leaserace/leaserace/tui/text"
)

// chooser is the small scenario list behind s.
type chooser struct {
	Open   bool
	Names  []string
	Titles []string
	Cursor int
	Keys   keys.Chooser
}

// chooseMsg asks the model to open a scenario.
type chooseMsg struct{ name string }

func newChooser() chooser {
	c := chooser{Keys: keys.DefaultChooser()}
	for _, n := range scenario.BuiltinNames() {
		title := ""
		// Built-ins are embedded, so loading one costs no I/O.
		if sc, err := scenario.Builtin(n); err == nil {
			title = sc.Title
		}
		c.Names = append(c.Names, n)
		c.Titles = append(c.Titles, title)
	}
	return c
}

// show opens the list with the cursor on the current scenario.
func (c chooser) show(current string) chooser {
	c.Open = true
	for i, n := range c.Names {
		if n == current {
			c.Cursor = i
		}
	}
	return c
}

// Update moves the cursor, and on enter closes the list and asks for the
// chosen scenario.
func (c chooser) Update(msg tea.Msg) (chooser, tea.Cmd) {
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

// View lists the scenarios in width cells.
func (c chooser) View(st *styles.Styles, width int) []string {
	lines := text.Wrap([]text.Span{text.Styled(&st.Title, "Choose a scenario"), text.Plain(" — enter opens it at its start with the same knobs, esc goes back.")}, width, "", "")
	if len(c.Names) == 0 {
		return append(lines, text.Wrap([]text.Span{text.Styled(&st.Warn, "⚠ no built-in scenarios were found")}, width, "", "")...)
	}
	for i, n := range c.Names {
		mark := "  "
		var sty *styles.Ink
		if i == c.Cursor {
			mark, sty = "▸ ", &st.Selected
		}
		p := []text.Span{text.Styled(sty, n)}
		if c.Titles[i] != "" {
			p = append(p, text.Styled(&st.Faint, " — "+c.Titles[i]))
		}
		lines = append(lines, text.Wrap(p, width, mark, "    ")...)
	}
	return lines
}
