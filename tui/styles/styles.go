// Package styles builds the TUI's look from one lipgloss renderer, so a
// NO_COLOR or monochrome terminal and tests with a fixed ASCII profile get
// the same layout without colour. Every state the colours mark is also
// spelled out in words or glyphs by the views; colour only reinforces it.
package styles

import (
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Ink is an inline style reduced to the escape sequences around its text.
// The views style thousands of short runs per frame; wrapping them in two
// precomputed strings keeps a frame well under a millisecond, where a full
// lipgloss render per run does not.
type Ink struct {
	pre, post string
}

// NewInk captures what st puts around one line of text. Only inline
// attributes (colours, bold, reverse) survive; that is all the views use.
func NewInk(st lipgloss.Style) Ink {
	const probe = "X"
	out := st.Render(probe)
	i := strings.Index(out, probe)
	if i < 0 {
		return Ink{}
	}
	return Ink{pre: out[:i], post: out[i+len(probe):]}
}

// Render styles one line of text.
func (k Ink) Render(s string) string {
	if k.pre == "" && k.post == "" {
		return s
	}
	return k.pre + s + k.post
}

// Styles is every style the TUI uses, all bound to one renderer.
type Styles struct {
	Renderer *lipgloss.Renderer
	// Look is what the styles are a function of: the renderer's colour
	// profile and whether its background is dark. Two Styles with one
	// Look draw alike; "" for styles not made by New.
	Look string

	Title    Ink // app and scenario name
	Faint    Ink // secondary words
	Label    Ink // field names
	Value    Ink // plain values
	Changed  Ink // a field the last step changed
	Warn     Ink // stale, regressed, refused
	Good     Ink // accepted, current
	Alarm    Ink // 2 effects / CONFLICT
	Busy     Ink // the busy mark
	Error    Ink // an engine error shown in place
	Border   Ink // pane borders and rules
	PaneHead Ink // a pane's title
	SQL      Ink // statement text
	Tag      Ink // the command tag
	Done     Ink // timeline marks already executed
	Pending  Ink // timeline marks still to come
	Cursor   Ink // the timeline cursor
	Selected Ink // the chosen line of the scenario list

	Spinner lipgloss.Style // the start-up spinner
	Help    help.Styles
}

// NewRenderer returns a renderer for out. noColor, or NO_COLOR in the
// environment, forces the ASCII profile: no colour and no attributes.
func NewRenderer(out io.Writer, noColor bool) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(out)
	if noColor || os.Getenv("NO_COLOR") != "" {
		r.SetColorProfile(termenv.Ascii)
	}
	return r
}

// fixed is c as r will draw it, worked out once: the shade for r's
// background, in r's colour profile. Left as a hex colour, lipgloss would
// convert it on every render (for 256 colours, a search of the palette by
// perceptual distance), and the help line renders a dozen styles a frame.
func fixed(r *lipgloss.Renderer, c lipgloss.AdaptiveColor) lipgloss.TerminalColor {
	hex := c.Light
	if r.HasDarkBackground() {
		hex = c.Dark
	}
	switch v := r.ColorProfile().Color(hex).(type) {
	case termenv.ANSI256Color:
		return lipgloss.Color(strconv.Itoa(int(v)))
	case termenv.ANSIColor:
		return lipgloss.Color(strconv.Itoa(int(v)))
	case termenv.RGBColor:
		return lipgloss.Color(string(v))
	}
	return lipgloss.NoColor{}
}

// New builds the styles on r.
func New(r *lipgloss.Renderer) Styles {
	// Colours from the Okabe–Ito palette, which colour-blind viewers can
	// tell apart: blue for "changed/current", orange for "warning/stale".
	// Each has a darker shade for light backgrounds, a lighter one for dark.
	var (
		blue   = fixed(r, lipgloss.AdaptiveColor{Light: "#005A9C", Dark: "#56B4E9"})
		orange = fixed(r, lipgloss.AdaptiveColor{Light: "#A14700", Dark: "#E69F00"})
		faint  = fixed(r, lipgloss.AdaptiveColor{Light: "#5F5F5F", Dark: "#A8A8A8"})
		border = fixed(r, lipgloss.AdaptiveColor{Light: "#8A8A8A", Dark: "#6C6C6C"})
	)
	ns := r.NewStyle
	ink := func(st lipgloss.Style) Ink { return NewInk(st) }
	return Styles{
		Renderer: r,
		Look:     strconv.Itoa(int(r.ColorProfile())) + "/" + strconv.FormatBool(r.HasDarkBackground()),
		Title:    ink(ns().Bold(true)),
		Faint:    ink(ns().Foreground(faint)),
		Label:    ink(ns().Foreground(faint)),
		Value:    ink(ns()),
		Changed:  ink(ns().Foreground(blue).Bold(true)),
		Warn:     ink(ns().Foreground(orange).Bold(true)),
		Good:     ink(ns().Foreground(blue)),
		Alarm:    ink(ns().Foreground(orange).Bold(true).Reverse(true)),
		Busy:     ink(ns().Foreground(orange).Bold(true)),
		Error:    ink(ns().Foreground(orange).Bold(true)),
		Border:   ink(ns().Foreground(border)),
		PaneHead: ink(ns().Bold(true)),
		SQL:      ink(ns()),
		Tag:      ink(ns().Bold(true)),
		Done:     ink(ns().Foreground(blue).Bold(true)),
		Pending:  ink(ns().Foreground(faint)),
		Cursor:   ink(ns().Foreground(orange).Bold(true)),
		Selected: ink(ns().Foreground(blue).Bold(true)),
		Spinner:  ns().Foreground(orange).Bold(true),
		Help: help.Styles{
			Ellipsis:       ns().Foreground(faint),
			ShortKey:       ns().Bold(true),
			ShortDesc:      ns().Foreground(faint),
			ShortSeparator: ns().Foreground(border),
			FullKey:        ns().Bold(true),
			FullDesc:       ns().Foreground(faint),
			FullSeparator:  ns().Foreground(border),
		},
	}
}
