// Package screen is the TUI's renderer: a Screen is everything a frame
// shows (a snapshot of the run and the TUI's own state: what is under way,
// the status line, the overlays) and Frame draws it at a size. It never
// calls the engine or the terminal; the tui package changes a Screen in
// answer to keys and results and hands it here to draw, and the asciicast
// writer and every SSH session draw through it alike.
package screen

import (
	"fmt"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/tui/exploremap"
	"github.com/leaserace/leaserace/tui/keys"
	"github.com/leaserace/leaserace/tui/styles"
	"github.com/leaserace/leaserace/tui/text"
)

// Phase is where the TUI is in its life.
type Phase int

const (
	PhaseBoot  Phase = iota // the provider is starting PostgreSQL
	PhaseReady              // a run is on screen
)

// Screen is everything a frame shows: a snapshot of the run and the TUI's
// own state (what is under way, the status line, the overlays). Rendering
// is a pure function of a Screen and a size: it never calls the engine, so
// the TUI, the asciicast writer and every SSH session draw alike.
type Screen struct {
	Styles *styles.Styles
	// Keys and Help are pointers because a Screen is copied on every
	// message (Bubble Tea's models are values) and these two were most of
	// its 7 KB. They are never changed in place: a change replaces them
	// (WithKeys, ToggleFullHelp, SetHelpWidth), so a copy keeps its own.
	Keys    *keys.Map
	Help    *help.Model
	Chooser Chooser
	Explore exploremap.Explorer
	Boot    Boot
	Phase   Phase
	Snap    Snapshot
	// Replay is set when the screen shows recorded runs: the banner says
	// so, where and when they were recorded, and why (offline).
	Replay *Replay

	// Running names the engine command under way, "" when none is.
	Running string
	Playing bool
	Status  []text.Span
	// Failure is the engine error shown in place, if any; FailedPart is
	// the part the engine blames it on.
	Failure    error
	FailedPart FailedPart
	// Psql is how to open psql beside the run on screen (full help).
	Psql Psql
	// Play is the move menu of play mode; Ask the question on screen.
	Play PlayMenu
	Ask  *Prompt
	// Tally counts the questions answered so far.
	Tally transcript.AskTally
	// Room is the TUI's part in a workshop room; nil outside one.
	Room *Room
	// Search is the exhaustive search of the schedules under the knobs on
	// show, for the goal panel: nil until one is asked for.
	Search *Search
	// Cast is set for frames rendered into an asciicast: no key help, as
	// nobody can press a key in a recording.
	Cast bool
	// Shared, when set, draws the sections that depend only on the
	// snapshot, the width and the look once for every screen that points
	// at it (a room's attendees); nil draws them all for this screen.
	Shared *Shared
}

// New is an empty screen whose styles are built on r (nil means
// NO_COLOR-aware stdout): each SSH session has a renderer of its own.
func New(r *lipgloss.Renderer) Screen {
	if r == nil {
		r = styles.NewRenderer(nil, false)
	}
	h := help.New()
	h.ShortSeparator = " · "
	k := keys.Default()
	c := Screen{Keys: &k, Help: &h, Chooser: NewChooser()}
	c.SetRenderer(r)
	return c
}

// WithKeys puts k in place of the key map.
func (m *Screen) WithKeys(k keys.Map) { m.Keys = &k }

// ToggleFullHelp shows every key, or the one line of them.
func (m *Screen) ToggleFullHelp() {
	h := m.help()
	h.ShowAll = !h.ShowAll
	m.Help = &h
}

// FullHelp reports whether every key is shown.
func (m Screen) FullHelp() bool { return m.Help != nil && m.Help.ShowAll }

// help is a copy of the help to change or draw; the zero Screen has none.
func (m Screen) help() help.Model {
	if m.Help == nil {
		return help.Model{}
	}
	return *m.Help
}

// SetHelpWidth is the help's width after the terminal's changed.
func (m *Screen) SetHelpWidth(w int) {
	if m.Help != nil && m.Help.Width == w {
		return
	}
	h := m.help()
	h.Width = w
	m.Help = &h
}

// SetRenderer builds the styles, the help's and the spinner's on r.
func (m *Screen) SetRenderer(r *lipgloss.Renderer) {
	st := styles.New(r)
	m.Styles = &st
	h := m.help()
	h.Styles = st.Help
	m.Help = &h
	m.Boot.Spin.Style = st.Spinner
}

// ChangeStatus says what a toggle did: the knob, then what it changed.
func (m Screen) ChangeStatus(ch *world.Change) []text.Span {
	if ch == nil {
		return nil
	}
	var p []text.Span
	switch {
	case ch.From.Renewal != ch.To.Renewal:
		p = append(p, text.Plain(fmt.Sprintf("r: renewal %s → ", ch.From.Renewal)), text.Styled(&m.Styles.Changed, ch.To.Renewal.Describe()))
	case ch.From.Fencing != ch.To.Fencing:
		p = append(p, text.Plain(fmt.Sprintf("f: fencing %s → ", ch.From.Fencing)), text.Styled(&m.Styles.Changed, ch.To.Fencing.Describe()))
	}
	p = append(p, text.Plain(fmt.Sprintf(" · same t=%d, other setting (not later in time): ", m.Snap.View.Now)))
	for i, l := range ch.Lines {
		if i > 0 {
			p = append(p, text.Plain(" · "))
		}
		p = append(p, text.Styled(&m.Styles.Changed, l))
	}
	return p
}
