// Package tuitest helps tests of the TUI and its screen draw frames the
// same on every machine and check they fit. Only tests import it.
package tuitest

import (
	"io"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
)

// ASCIIRenderer is a renderer with an explicit ASCII profile and a fixed
// background, so screens are the same on every machine without touching
// lipgloss's global renderer.
func ASCIIRenderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	r.SetHasDarkBackground(true)
	return r
}

// CheckFrame fails unless the frame fits w×h exactly or less.
func CheckFrame(t testing.TB, what string, f string, w, h int) {
	t.Helper()
	if f == "" {
		return
	}
	lines := strings.Split(f, "\n")
	if len(lines) > h {
		t.Fatalf("%s at %d×%d: %d lines", what, w, h, len(lines))
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw > w {
			t.Fatalf("%s at %d×%d: line %d is %d wide: %q", what, w, h, i, lw, l)
		}
	}
}
