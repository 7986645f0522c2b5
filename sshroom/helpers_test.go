package sshroom

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	gossh "golang.org/x/crypto/ssh"
)

// colourAnswer is what a real terminal answers to wish's background query:
// OSC 11 with a colour, then the DA1 reply that ends the query.
const colourAnswer = "\x1b]11;rgb:0000/0000/0000\x07\x1b[?62c"

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
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("Serve did not return within 15 s of its context ending")
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

type clientOpts struct {
	user   string
	term   string // default xterm-256color
	w, h   int    // default 80x24
	silent bool   // never answer the colour query
	code   string // answer to the room code prompt
	noPTY  bool
	cmd    string // with noPTY: the command to run
}

// client is an attendee: a real SSH client with a PTY whose output is
// rendered into a screen.
type client struct {
	t     *testing.T
	raw   net.Conn
	conn  *gossh.Client
	sess  *gossh.Session
	stdin io.WriteCloser

	mu       sync.Mutex
	out      bytes.Buffer
	errOut   bytes.Buffer
	scr      *screen
	answered bool
	exit     chan error
	drained  chan struct{} // closed once stdout and stderr reached EOF
}

func dialOpts(t *testing.T, addr string, o clientOpts) (*client, error) {
	t.Helper()
	if o.term == "" {
		o.term = "xterm-256color"
	}
	if o.w == 0 {
		o.w, o.h = 80, 24
	}
	cfg := &gossh.ClientConfig{
		User:            o.user,
		HostKeyCallback: gossh.InsecureIgnoreHostKey(),
		Timeout:         5 * time.Second,
		Auth: []gossh.AuthMethod{gossh.KeyboardInteractive(
			func(_, _ string, questions []string, _ []bool) ([]string, error) {
				answers := make([]string, len(questions))
				for i := range answers {
					answers[i] = o.code
				}
				return answers, nil
			})},
	}
	raw, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	cc, chans, reqs, err := gossh.NewClientConn(raw, addr, cfg)
	if err != nil {
		raw.Close()
		return nil, err
	}
	c := &client{t: t, raw: raw, conn: gossh.NewClient(cc, chans, reqs), scr: newScreen(o.w, o.h),
		exit: make(chan error, 1), drained: make(chan struct{})}
	t.Cleanup(func() { c.conn.Close() })
	if c.sess, err = c.conn.NewSession(); err != nil {
		return nil, err
	}
	if c.stdin, err = c.sess.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := c.sess.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := c.sess.StderrPipe()
	if err != nil {
		return nil, err
	}
	if !o.noPTY {
		// Rows before columns.
		if err := c.sess.RequestPty(o.term, o.h, o.w, gossh.TerminalModes{gossh.ECHO: 0}); err != nil {
			return nil, fmt.Errorf("pty request: %w", err)
		}
	}
	var streams sync.WaitGroup
	streams.Add(2)
	go func() {
		defer streams.Done()
		c.read(stdout, o.silent)
	}()
	go func() {
		defer streams.Done()
		_, _ = io.Copy(&lockedWriter{c: c, b: &c.errOut}, stderr)
	}()
	go func() {
		streams.Wait()
		close(c.drained)
	}()
	if o.noPTY {
		err = c.sess.Start(o.cmd)
	} else {
		err = c.sess.Shell()
	}
	if err != nil {
		return nil, err
	}
	go func() {
		err := c.sess.Wait()
		// The exit status can overtake the last output: wait for the
		// streams, so that the screen is final when the exit is seen.
		select {
		case <-c.drained:
		case <-time.After(2 * time.Second):
		}
		c.exit <- err
	}()
	return c, nil
}

func dial(t *testing.T, addr string, o clientOpts) *client {
	t.Helper()
	c, err := dialOpts(t, addr, o)
	if err != nil {
		t.Fatalf("%s: connect: %v", o.user, err)
	}
	return c
}

type lockedWriter struct {
	c *client
	b *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return w.b.Write(p)
}

// read renders the output and answers the colour query the way a terminal
// does, unless the client plays a silent one.
func (c *client) read(r io.Reader, silent bool) {
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.mu.Lock()
			c.out.Write(buf[:n])
			_, _ = c.scr.Write(buf[:n])
			answer := !silent && !c.answered && bytes.Contains(c.out.Bytes(), []byte("\x1b]11;?"))
			if answer {
				c.answered = true
			}
			c.mu.Unlock()
			if answer {
				_, _ = c.stdin.Write([]byte(colourAnswer))
			}
		}
		if err != nil {
			return
		}
	}
}

func (c *client) screen() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scr.String()
}

func (c *client) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

func (c *client) stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errOut.String()
}

// waitScreen waits until the screen shows every one of want.
func (c *client) waitScreen(d time.Duration, want ...string) string {
	c.t.Helper()
	end := time.Now().Add(d)
	for {
		scr := c.screen()
		ok := true
		for _, w := range want {
			if !strings.Contains(scr, w) {
				ok = false
			}
		}
		if ok {
			return scr
		}
		if time.Now().After(end) {
			c.t.Fatalf("the screen never showed %q within %s; it shows:\n%s", want, d, scr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *client) press(keys string) {
	c.t.Helper()
	if _, err := c.stdin.Write([]byte(keys)); err != nil {
		c.t.Fatalf("press %q: %v", keys, err)
	}
}

func (c *client) resize(w, h int) {
	c.t.Helper()
	c.mu.Lock()
	c.scr.resize(w, h)
	c.mu.Unlock()
	if err := c.sess.WindowChange(h, w); err != nil {
		c.t.Fatalf("window change: %v", err)
	}
}

// waitGone waits for the session to end, with or without an exit status.
func (c *client) waitGone(d time.Duration) {
	c.t.Helper()
	select {
	case <-c.exit:
	case <-time.After(d):
		c.t.Fatalf("the session did not end within %s; screen:\n%s", d, c.screen())
	}
}

// waitOutput waits until the raw output holds want.
func (c *client) waitOutput(d time.Duration, want string) {
	c.t.Helper()
	for end := time.Now().Add(d); !strings.Contains(c.output(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			c.t.Fatalf("the output never held %q within %s: %q", want, d, c.output())
		}
	}
}

// flat is the screen's words joined by single spaces, for text that
// wraps.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// waitExit waits for the session to end and returns its exit status.
func (c *client) waitExit(d time.Duration) int {
	c.t.Helper()
	select {
	case err := <-c.exit:
		var ee *gossh.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee):
			return ee.ExitStatus()
		default:
			c.t.Fatalf("session ended without an exit status: %v; screen:\n%s", err, c.screen())
		}
	case <-time.After(d):
		c.t.Fatalf("the session did not end within %s; screen:\n%s", d, c.screen())
	}
	return -1
}

// recorder is the test App: it counts sessions started and cleaned up.
type recorder struct {
	mu       sync.Mutex
	started  map[string]int
	cleaned  map[string]int
	changed  chan struct{}
	release  chan struct{} // unblocks a model stuck on x
	sessions map[string]Session
}

func newRecorder() *recorder {
	return &recorder{started: map[string]int{}, cleaned: map[string]int{}, sessions: map[string]Session{},
		changed: make(chan struct{}, 1), release: make(chan struct{})}
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

type noteMsg string

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
	viewPanic bool
}

func (m *probe) Init() tea.Cmd { return nil }

func (m *probe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
	case noteMsg:
		m.note = string(msg)
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
			return m, tea.Suspend
		case "x":
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
	return fmt.Sprintf("%s user=%s\nsize=%dx%d\ncount=%d\nnote=%s", m.title, m.s.User, m.w, m.h, m.count, m.note)
}
