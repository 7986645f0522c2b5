package sshroom

import (
	"fmt"
	"reflect"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// frame wraps the App's model for one session. It keeps the window size,
// shows the minimum-size gate instead of the app while the window is too
// small, and turns a panic in the app's Init, Update, View or commands into
// the end of this session alone.
type frame struct {
	a          *attendee
	app        tea.Model
	r          *lipgloss.Renderer
	w, h       int
	minW, minH int
	// tooSmall is the minimum-size rule (Config.TooSmall, or its default).
	tooSmall func(w, h int) bool
	broken   bool // the app panicked: nothing of it is called again
	// paint draws every frame View makes (nil in tests of the frame alone).
	paint *painter
}

// recovered, deferred in the frame's methods, catches a panic of the app.
// Methods run on the program's event loop, so broken needs no lock.
func (f *frame) recovered(where string) {
	if r := recover(); r != nil {
		f.broken = true
		f.a.caught(where, r)
	}
}

func (f *frame) Init() (cmd tea.Cmd) {
	defer f.recovered("the model's Init")
	return guardCmd(f.a, f.app.Init())
}

func (f *frame) Update(msg tea.Msg) (m tea.Model, cmd tea.Cmd) {
	m = f
	if f.broken {
		return m, nil
	}
	if ws, ok := msg.(tea.WindowSizeMsg); ok {
		f.w, f.h = ws.Width, ws.Height
		if f.paint != nil {
			f.paint.resize(ws.Width, ws.Height)
		}
	}
	if f.gated() {
		// The attendee cannot see what keys would do: only Ctrl-C counts.
		switch k := msg.(type) {
		case tea.KeyMsg:
			if k.Type == tea.KeyCtrlC {
				return m, tea.Quit
			}
			return m, nil
		case tea.MouseMsg:
			return m, nil
		}
	}
	defer f.recovered("the model's Update")
	next, c := f.app.Update(msg)
	if next != nil {
		f.app = next
	}
	return m, guardCmd(f.a, c)
}

// lineViewer is an app that can give its frame as lines: the painter
// draws line by line, and a joined frame would only be split again.
type lineViewer interface {
	ViewLines() []string
}

// View is called by Bubble Tea after every message. With a painter, the
// painter draws the frame if it changed and Bubble Tea (which has no
// renderer then) gets nothing.
func (f *frame) View() string {
	if f.paint == nil {
		return f.view()
	}
	f.paint.setLines(f.lines())
	return ""
}

func (f *frame) view() (v string) {
	if f.broken {
		return ""
	}
	if f.gated() {
		return f.gate()
	}
	defer f.recovered("the model's View")
	return f.app.View()
}

// lines is view as lines, from the app's ViewLines where it has one.
func (f *frame) lines() (ls []string) {
	lv, ok := f.app.(lineViewer)
	if !ok || f.broken || f.gated() {
		return strings.Split(f.view(), "\n")
	}
	defer f.recovered("the model's View")
	return lv.ViewLines()
}

// gated says the window is known and too small by the rule.
func (f *frame) gated() bool {
	return f.w > 0 && f.h > 0 && f.tooSmall(f.w, f.h)
}

// sizeRule is the minimum-size rule cfg asks for: its TooSmall, or else
// below MinWidth×MinHeight (no gate when both are 0).
func sizeRule(cfg Config) func(w, h int) bool {
	if cfg.TooSmall != nil {
		return cfg.TooSmall
	}
	minW, minH := cfg.MinWidth, cfg.MinHeight
	return func(w, h int) bool { return (minW > 0 && w < minW) || (minH > 0 && h < minH) }
}

func (f *frame) gate() string {
	text := fmt.Sprintf("Make the window at least %dx%d to join (it is %dx%d now).", f.minW, f.minH, f.w, f.h)
	return f.r.NewStyle().Width(f.w).MaxWidth(f.w).MaxHeight(f.h).Render(text)
}

// guardCmd wraps cmd so that a panic in it ends the session, not the
// program's goroutine. Batches and sequences are wrapped to the leaf.
func guardCmd(a *attendee, cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	return func() (msg tea.Msg) {
		defer func() {
			if r := recover(); r != nil {
				msg = nil
				a.caught("a command of the model", r)
			}
		}()
		return guardBatch(a, cmd())
	}
}

// guardBatch wraps the commands inside a tea.BatchMsg or the unexported
// message of tea.Sequence: both are slices of tea.Cmd, and bubbletea runs
// their commands itself, beyond guardCmd's reach.
func guardBatch(a *attendee, msg tea.Msg) tea.Msg {
	v := reflect.ValueOf(msg)
	if !v.IsValid() || v.Kind() != reflect.Slice || v.Type().Elem() != reflect.TypeFor[tea.Cmd]() {
		return msg
	}
	out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
	for i := range v.Len() {
		c, _ := v.Index(i).Interface().(tea.Cmd)
		out.Index(i).Set(reflect.ValueOf(guardCmd(a, c)))
	}
	return out.Interface()
}
