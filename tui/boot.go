package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/tui/screen"
)

// progressMsg is one progress line from the provider; ok is false once the
// provider has finished reporting.
type progressMsg struct {
	line string
	ok   bool
}

// updateBoot advances the start-up screen's spinner and collects progress
// lines; listen waits for the provider's next line.
func updateBoot(b screen.Boot, listen tea.Cmd, msg tea.Msg) (screen.Boot, tea.Cmd) {
	switch msg := msg.(type) {
	case spinner.TickMsg:
		var cmd tea.Cmd
		b.Spin, cmd = b.Spin.Update(msg)
		return b, cmd
	case progressMsg:
		if !msg.ok {
			return b, nil
		}
		if n := len(b.Lines); n > 0 && msg.line != "" && sameSubject(b.Lines[n-1], msg.line) {
			// Newer news of the same thing (a download's bytes and rate)
			// replaces the older, so the screen shows it moving.
			b.Lines[n-1] = msg.line
		} else if msg.line != "" {
			b.Lines = append(b.Lines, msg.line)
			// A handful is enough to show it is moving.
			if len(b.Lines) > 6 {
				b.Lines = b.Lines[len(b.Lines)-6:]
			}
		}
		return b, listen
	}
	return b, nil
}

// sameSubject tells whether two progress lines report on one thing: the
// same words before ": " ("downloading PostgreSQL 16.9.0: 4.2 MB of ...").
func sameSubject(a, b string) bool {
	ha, _, okA := strings.Cut(a, ": ")
	hb, _, okB := strings.Cut(b, ": ")
	return okA && okB && ha == hb
}
