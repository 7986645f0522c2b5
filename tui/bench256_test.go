package tui

import (
	"io"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// BenchmarkView120x40ANSI256 is a room attendee's frame: 120×40 in 256
// colours, what an SSH client with TERM=xterm-256color gets.
func BenchmarkView120x40ANSI256(b *testing.B) {
	m := at1075(b, blindOff(), 120, 40)
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI256)
	r.SetHasDarkBackground(true)
	m.SetRenderer(r)
	benchView(b, m)
}
