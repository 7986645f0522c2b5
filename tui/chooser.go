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
	open   bool
	names  []string
	titles []string
	cursor int
	keys   keys.Chooser
}

// chooseMsg asks the model to open a scenario.
type chooseMsg struct{ name string }

func newChooser() chooser {
	c := chooser{keys: keys.DefaultChooser()}
	for _, n := range scenario.BuiltinNames() {
		title := ""
		// Built-ins are embedded, so loading one costs no I/O.
		if sc, err := scenario.Builtin(n); err == nil {
			title = sc.Title
		}
		c.names = append(c.names, n)
		c.titles = append(c.titles, title)
	}
	return c
}

// show opens the list with the cursor on the current scenario.
func (c chooser) show(current string) chooser {
	c.open = true
	for i, n := range c.names {
		if n == current {
			c.cursor = i
		}
	}
	return c
}

// Update moves the cursor, and on enter closes the list and asks for the
// chosen scenario.
func (c chooser) Update(msg tea.Msg) (chooser, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok || !c.open {
		return c, nil
	}
	switch {
	case key.Matches(km, c.keys.Up):
		if c.cursor > 0 {
			c.cursor--
		}
	case key.Matches(km, c.keys.Down):
		if c.cursor < len(c.names)-1 {
			c.cursor++
		}
	case key.Matches(km, c.keys.Cancel):
		c.open = false
	case key.Matches(km, c.keys.Choose):
		c.open = false
		if c.cursor < len(c.names) {
			name := c.names[c.cursor]
			return c, func() tea.Msg { return chooseMsg{name: name} }
		}
	}
	return c, nil
}

// View lists the scenarios in width cells.
func (c chooser) View(st *styles.Styles, width int) []string {
	lines := text.Wrap([]text.Span{text.Styled(&st.Title, "Choose a scenario"), text.Plain(" — enter opens it at its start with the same knobs, esc goes back.")}, width, "", "")
	if len(c.names) == 0 {
		return append(lines, text.Wrap([]text.Span{text.Styled(&st.Warn, "⚠ no built-in scenarios were found")}, width, "", "")...)
	}
	for i, n := range c.names {
		mark := "  "
		var sty *styles.Ink
		if i == c.cursor {
			mark, sty = "▸ ", &st.Selected
		}
		p := []text.Span{text.Styled(sty, n)}
		if c.titles[i] != "" {
			p = append(p, text.Styled(&st.Faint, " — "+c.titles[i]))
		}
		lines = append(lines, text.Wrap(p, width, mark, "    ")...)
	}
	return lines
}
