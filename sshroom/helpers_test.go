package sshroom

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/leaserace/leaserace/internal/testwait"
)

// startRoom serves app with cfg on 127.0.0.1:0 and shuts the room down at
// the end of the test. The server's log goes to the test's log.
func startRoom(t *testing.T, cfg Config, app App) *Server {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.HostKeyDir == "" {
		cfg.HostKeyDir = t.TempDir() + "/hostkey"
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	s, err := New(cfg, app)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		// Serve returns once every session has closed and run its
		// cleanup, so this waits on the whole room: twice the usual wait.
		limit := 2 * testwait.Timeout()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(limit):
			t.Errorf("Serve did not return within %s of its context ending", limit)
		}
	})
	return s
}

// testWriter sends the server's log to t.Log until the test ends.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	defer func() { _ = recover() }() // a log line after the test ended
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// recorder is the test App: it counts sessions started and cleaned up.
type recorder struct {
	mu       sync.Mutex
	started  map[string]int
	cleaned  map[string]int
	changed  chan struct{}
	release  chan struct{} // unblocks a model stuck on x
	stuck    chan string   // hears the user whose model got stuck on x
	sessions map[string]Session
}

func newRecorder() *recorder {
	return &recorder{started: map[string]int{}, cleaned: map[string]int{}, sessions: map[string]Session{},
		changed: make(chan struct{}, 1), release: make(chan struct{}), stuck: make(chan string, 16)}
}

func (r *recorder) app(ctx context.Context, s Session) (tea.Model, func(), error) {
	switch s.User {
	case "reject":
		return nil, nil, errors.New("no seat for reject")
	case "boom":
		panic("the app factory blew up")
	}
	r.mu.Lock()
	r.sessions[s.User] = s
	r.mu.Unlock()
	r.bump(r.started, s.User)
	m := &probe{s: s, ctx: ctx, rec: r, title: s.Renderer.NewStyle().Foreground(lipgloss.Color("205")).Render("probe")}
	return m, func() { r.bump(r.cleaned, s.User) }, nil
}

func (r *recorder) bump(m map[string]int, user string) {
	r.mu.Lock()
	m[user]++
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) count(m map[string]int, user string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return m[user]
}

// waitCleaned waits until user's sessions were cleaned up n times.
func (r *recorder) waitCleaned(t *testing.T, user string, n int, d time.Duration) {
	t.Helper()
	end := time.After(d)
	for r.count(r.cleaned, user) < n {
		select {
		case <-r.changed:
		case <-time.After(50 * time.Millisecond):
		case <-end:
			t.Fatalf("%s: %d cleanups within %s, want %d", user, r.count(r.cleaned, user), d, n)
		}
	}
	if got := r.count(r.cleaned, user); got != n {
		t.Fatalf("%s: %d cleanups, want exactly %d", user, got, n)
	}
}

// waitStuck waits until user's model is stuck in Update (it got an x).
func (r *recorder) waitStuck(t *testing.T, user string, d time.Duration) {
	t.Helper()
	end := time.After(d)
	for {
		select {
		case u := <-r.stuck:
			if u == user {
				return
			}
		case <-end:
			t.Fatalf("%s's model did not get stuck within %s", user, d)
		}
	}
}

type noteMsg string

// suspendedMsg comes after a tea.Suspend the probe asked for.
type suspendedMsg struct{}

// probe is the test model: it shows who it serves, its size, a counter and
// the last broadcast note, and misbehaves on request.
type probe struct {
	s         Session
	ctx       context.Context
	rec       *recorder
	title     string
	w, h      int
	count     int
	note      string
	suspends  int
	viewPanic bool
}

func (m *probe) Init() tea.Cmd { return nil }

func (m *probe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
	case noteMsg:
		m.note = string(msg)
	case suspendedMsg:
		m.suspends++
	case tea.KeyMsg:
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 {
			// Keys typed quickly arrive as one message: one at a time here.
			var cmds []tea.Cmd
			for _, r := range msg.Runes {
				_, c := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
				cmds = append(cmds, c)
			}
			return m, tea.Batch(cmds...)
		}
		switch msg.String() {
		case "+":
			m.count++
		case "p":
			panic("probe: a panic in Update")
		case "v":
			m.viewPanic = true
		case "c":
			return m, func() tea.Msg { panic("probe: a panic in a command") }
		case "b":
			return m, tea.Batch(func() tea.Msg { return nil }, func() tea.Msg { panic("probe: a panic in a batch") })
		case "s":
			return m, tea.Sequence(func() tea.Msg { return nil }, func() tea.Msg { panic("probe: a panic in a sequence") })
		case "ctrl+z", "z":
			// suspendedMsg follows the suspend through the program, so
			// the screen's suspends count proves the suspend was handled.
			return m, tea.Sequence(tea.Suspend, func() tea.Msg { return suspendedMsg{} })
		case "x":
			m.rec.stuck <- m.s.User
			<-m.rec.release // stuck until the test lets go
		case "q", "ctrl+c":
			return m, tea.Quit
		}
	}
	return m, nil
}

func (m *probe) View() string {
	if m.viewPanic {
		panic("probe: a panic in View")
	}
	return fmt.Sprintf("%s user=%s\nsize=%dx%d\ncount=%d\nnote=%s\nsuspends=%d", m.title, m.s.User, m.w, m.h, m.count, m.note, m.suspends)
}

// attendeeNamed finds user among list. Tests name attendees rather than
// count on their order: sessions that dial together arrive in any order.
func attendeeNamed(list []AttendeeInfo, user string) (AttendeeInfo, bool) {
	for _, a := range list {
		if a.User == user {
			return a, true
		}
	}
	return AttendeeInfo{}, false
}
