package screen

import (
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/keys"
	"github.com/leaserace/leaserace/tui/styles"
	"github.com/leaserace/leaserace/tui/text"
)

// Chooser is the small scenario list behind s: the built-in scenarios,
// their titles and the cursor.
type Chooser struct {
	Open   bool
	Names  []string
	Titles []string
	Cursor int
	Keys   keys.Chooser
}

// NewChooser is the list of the built-in scenarios, closed and not yet
// read: parsing every built-in for its title is most of what a new room
// attendee allocates, and most never open the list.
func NewChooser() Chooser {
	return Chooser{Keys: keys.DefaultChooser()}
}

// Show opens the list with the cursor on current, reading the built-ins'
// names and titles the first time it opens.
func (c Chooser) Show(current string) Chooser {
	if c.Names == nil {
		c.Names = []string{}
		for _, n := range scenario.BuiltinNames() {
			title := ""
			// Built-ins are embedded, so loading one costs no I/O.
			if sc, err := scenario.Builtin(n); err == nil {
				title = sc.Title
			}
			c.Names = append(c.Names, n)
			c.Titles = append(c.Titles, title)
		}
	}
	c.Open = true
	for i, n := range c.Names {
		if n == current {
			c.Cursor = i
		}
	}
	return c
}

// view lists the scenarios in width cells.
func (c Chooser) view(st *styles.Styles, width int) []string {
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
