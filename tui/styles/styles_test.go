package styles

import (
	"io"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// A colour worked out once draws exactly what lipgloss draws for the
// adaptive colour, under every profile and on both backgrounds.
func TestFixedColourDrawsTheSame(t *testing.T) {
	colours := []lipgloss.AdaptiveColor{
		{Light: "#005A9C", Dark: "#56B4E9"}, {Light: "#A14700", Dark: "#E69F00"},
		{Light: "#5F5F5F", Dark: "#A8A8A8"}, {Light: "#8A8A8A", Dark: "#6C6C6C"},
	}
	for _, p := range []termenv.Profile{termenv.TrueColor, termenv.ANSI256, termenv.ANSI, termenv.Ascii} {
		for _, dark := range []bool{true, false} {
			r := lipgloss.NewRenderer(io.Discard)
			r.SetColorProfile(p)
			r.SetHasDarkBackground(dark)
			for _, c := range colours {
				want := r.NewStyle().Foreground(c).Bold(true).Render("x")
				got := r.NewStyle().Foreground(fixed(r, c)).Bold(true).Render("x")
				if got != want {
					t.Errorf("profile %v, dark %v, %v: fixed draws %q, lipgloss %q", p, dark, c, got, want)
				}
			}
		}
	}
}
