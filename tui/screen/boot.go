package screen

import (
	"github.com/charmbracelet/bubbles/spinner"
	"github.com/leaserace/leaserace/tui/styles"
	"github.com/leaserace/leaserace/tui/text"
)

// Boot is the start-up screen: a spinner naming the provider and the
// progress lines it reports while PostgreSQL starts.
type Boot struct {
	Spin     spinner.Model
	Provider string
	// Lines are the provider's last few progress lines.
	Lines []string
}

// NewBoot is the start-up screen for the named provider.
func NewBoot(st *styles.Styles, provider string) Boot {
	return Boot{
		Spin:     spinner.New(spinner.WithSpinner(spinner.Line), spinner.WithStyle(st.Spinner)),
		Provider: provider,
	}
}

// view renders the start-up screen in width×height cells.
func (b Boot) view(st *styles.Styles, width, height int) []string {
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
