package tui

import (
	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/tui/styles"
	"github.com/leaserace/leaserace/tui/text"
)

// boot is the start-up screen: a spinner naming the provider and the
// progress lines it reports while PostgreSQL starts.
type boot struct {
	Spin     spinner.Model
	Provider string
	Lines    []string
	// listen waits for the provider's next progress line.
	listen tea.Cmd
}

// progressMsg is one progress line from the provider; ok is false once the
// provider has finished reporting.
type progressMsg struct {
	line string
	ok   bool
}

func newBoot(st *styles.Styles, provider string) boot {
	return boot{
		Spin:     spinner.New(spinner.WithSpinner(spinner.Line), spinner.WithStyle(st.Spinner)),
		Provider: provider,
	}
}

// Update advances the spinner and collects progress lines.
func (b boot) Update(msg tea.Msg) (boot, tea.Cmd) {
	switch msg := msg.(type) {
	case spinner.TickMsg:
		var cmd tea.Cmd
		b.Spin, cmd = b.Spin.Update(msg)
		return b, cmd
	case progressMsg:
		if !msg.ok {
			return b, nil
		}
		if msg.line != "" {
			b.Lines = append(b.Lines, msg.line)
			// A handful is enough to show it is moving.
			if len(b.Lines) > 6 {
				b.Lines = b.Lines[len(b.Lines)-6:]
			}
		}
		return b, b.listen
	}
	return b, nil
}

// View renders the start-up screen in width×height cells.
func (b boot) View(st *styles.Styles, width, height int) []string {
	if width < 1 || height < 1 {
		return nil
	}
	head := []text.Span{text.Plain(b.Spin.View() + " "), text.Styled(&st.Title, "leaserace"),
		text.Plain(" is starting PostgreSQL with the " + b.Provider + " provider…")}
	lines := text.Wrap(head, width, "", "  ")
	for _, l := range b.Lines {
		lines = append(lines, text.Wrap([]text.Span{text.Styled(&st.Faint, l)}, width, "  · ", "    ")...)
	}
	return text.Clip(lines, height)
}
