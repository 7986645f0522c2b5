// Package sshtest is a test attendee for rooms served over SSH: a real
// golang.org/x/crypto/ssh client with a PTY that answers the terminal
// queries a real terminal answers, and renders what it receives into a
// small terminal emulator (Screen), so tests assert on what an attendee
// would see. It is shared by sshroom's tests, workshop's and the
// benchmarks.
package sshtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaserace/leaserace/internal/testwait"
	gossh "golang.org/x/crypto/ssh"
)

// ColourAnswer is what a real terminal answers to the background-colour
// query lipgloss sends through wish: OSC 11 with a colour, then the DA1
// reply that ends the query. Without it the first frame waits for the
// query to time out.
const ColourAnswer = "\x1b]11;rgb:0000/0000/0000\x07\x1b[?62c"

// colourQuery starts the query (OSC 11 with "?").
var colourQuery = []byte("\x1b]11;?")

// Options describe one attendee's client.
type Options struct {
	// User is the SSH user name: the attendee's name.
	User string
	// Term is the TERM sent with the PTY request; default xterm-256color.
	Term string
	// Width and Height are the window's size; default 80x24.
	Width, Height int
	// Silent never answers the colour query, as some terminals do not.
	Silent bool
	// Code answers every keyboard-interactive question (the room code).
	Code string
	// NoPTY asks for no PTY and runs Command instead of a shell, as
	// `ssh host command` does.
	NoPTY   bool
	Command string
	// OnOutput, when set, is called from the reader with the time each
	// chunk of output arrived, after the screen took it in.
	OnOutput func(at time.Time)
	// NoLog keeps no copy of the raw output (Output is then empty): a
	// long-running client's log would otherwise grow without end.
	NoLog bool
	// KeepOpen keeps the connection open after the session ends, as a
	// client sharing one connection among sessions (OpenSSH's
	// ControlMaster) does. Without it the client closes the connection
	// once its session has ended, as the ssh command does when it exits.
	KeepOpen bool
}

// Client is one attendee: an SSH session with a PTY whose output is
// rendered into a Screen. Its methods are safe for concurrent use; those
// that fail the test (Press, WaitScreen, ...) must be called from the
// test's goroutine, the others (Send, Await) from any.
type Client struct {
	t     testing.TB
	raw   net.Conn
	conn  *gossh.Client
	sess  *gossh.Session
	stdin io.WriteCloser

	mu       sync.Mutex
	out      bytes.Buffer
	noLog    bool
	tail     []byte // the last bytes of output, for a query split across reads
	errOut   bytes.Buffer
	scr      *Screen
	answered bool
	exit     chan error
	drained  chan struct{} // closed once stdout and stderr reached EOF
}

// Dial connects to addr as o says and starts a shell (or o.Command). The
// connection is closed when the test ends.
func Dial(t testing.TB, addr string, o Options) (*Client, error) {
	t.Helper()
	if o.Term == "" {
		o.Term = "xterm-256color"
	}
	if o.Width == 0 {
		o.Width, o.Height = 80, 24
	}
	cfg := &gossh.ClientConfig{
		User:            o.User,
		HostKeyCallback: gossh.InsecureIgnoreHostKey(),
		Timeout:         testwait.Timeout(),
		Auth: []gossh.AuthMethod{gossh.KeyboardInteractive(
			func(_, _ string, questions []string, _ []bool) ([]string, error) {
				answers := make([]string, len(questions))
				for i := range answers {
					answers[i] = o.Code
				}
				return answers, nil
			})},
	}
	raw, err := net.DialTimeout("tcp", addr, testwait.Timeout())
	if err != nil {
		return nil, err
	}
	cc, chans, reqs, err := gossh.NewClientConn(raw, addr, cfg)
	if err != nil {
		raw.Close()
		return nil, err
	}
	c := &Client{t: t, raw: raw, conn: gossh.NewClient(cc, chans, reqs), scr: NewScreen(o.Width, o.Height),
		noLog: o.NoLog, exit: make(chan error, 1), drained: make(chan struct{})}
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
	if !o.NoPTY {
		// Rows before columns.
		if err := c.sess.RequestPty(o.Term, o.Height, o.Width, gossh.TerminalModes{gossh.ECHO: 0}); err != nil {
			return nil, fmt.Errorf("pty request: %w", err)
		}
	}
	var streams sync.WaitGroup
	streams.Add(2)
	go func() {
		defer streams.Done()
		c.read(stdout, o.Silent, o.OnOutput)
	}()
	go func() {
		defer streams.Done()
		_, _ = io.Copy(&lockedWriter{c: c, b: &c.errOut}, stderr)
	}()
	go func() {
		streams.Wait()
		close(c.drained)
	}()
	if o.NoPTY {
		err = c.sess.Start(o.Command)
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
		if !o.KeepOpen {
			_ = c.conn.Close()
		}
		c.exit <- err
	}()
	return c, nil
}

// MustDial is Dial that fails the test on an error.
func MustDial(t testing.TB, addr string, o Options) *Client {
	t.Helper()
	c, err := Dial(t, addr, o)
	if err != nil {
		t.Fatalf("%s: connect to %s: %v", o.User, addr, err)
	}
	return c
}

type lockedWriter struct {
	c *Client
	b *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return w.b.Write(p)
}

// read renders the output and answers the colour query the way a terminal
// does, unless the client plays a silent one.
func (c *Client) read(r io.Reader, silent bool, onOutput func(time.Time)) {
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			at := time.Now()
			c.mu.Lock()
			if !c.noLog {
				c.out.Write(buf[:n])
			}
			_, _ = c.scr.Write(buf[:n])
			answer := false
			if !silent && !c.answered {
				seen := append(c.tail, buf[:n]...)
				answer = bytes.Contains(seen, colourQuery)
				c.answered = answer
				c.tail = bytes.Clone(seen[max(0, len(seen)-len(colourQuery)):])
			}
			c.mu.Unlock()
			if answer {
				_, _ = c.stdin.Write([]byte(ColourAnswer))
			}
			if onOutput != nil {
				onOutput(at)
			}
		}
		if err != nil {
			return
		}
	}
}

// Screen is what the attendee sees now.
func (c *Client) Screen() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scr.String()
}

// Output is every byte received so far.
func (c *Client) Output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// Stderr is what arrived on the session's standard error.
func (c *Client) Stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.errOut.String()
}

// Await waits until the screen shows every one of want and returns it, or
// fails with the last screen. It may be called from any goroutine.
func (c *Client) Await(d time.Duration, want ...string) (string, error) {
	end := time.Now().Add(d)
	for {
		scr := c.Screen()
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(scr, w)
		}
		if ok {
			return scr, nil
		}
		if time.Now().After(end) {
			return scr, fmt.Errorf("the screen never showed %q within %s; it shows:\n%s", want, d, scr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitScreen waits until the screen shows every one of want.
func (c *Client) WaitScreen(d time.Duration, want ...string) string {
	c.t.Helper()
	scr, err := c.Await(d, want...)
	if err != nil {
		c.t.Fatal(err)
	}
	return scr
}

// Send types keys. It may be called from any goroutine.
func (c *Client) Send(keys string) error {
	if _, err := c.stdin.Write([]byte(keys)); err != nil {
		return fmt.Errorf("press %q: %w", keys, err)
	}
	return nil
}

// Press types keys, failing the test if they cannot be sent.
func (c *Client) Press(keys string) {
	c.t.Helper()
	if err := c.Send(keys); err != nil {
		c.t.Fatal(err)
	}
}

// Resize changes the window's size, as a terminal window resized does.
func (c *Client) Resize(w, h int) {
	c.t.Helper()
	c.mu.Lock()
	c.scr.Resize(w, h)
	c.mu.Unlock()
	if err := c.sess.WindowChange(h, w); err != nil {
		c.t.Fatalf("window change: %v", err)
	}
}

// WaitGone waits for the session to end, with or without an exit status.
func (c *Client) WaitGone(d time.Duration) {
	c.t.Helper()
	select {
	case <-c.exit:
	case <-time.After(d):
		c.t.Fatalf("the session did not end within %s; screen:\n%s", d, c.Screen())
	}
}

// WaitOutput waits until the raw output holds want.
func (c *Client) WaitOutput(d time.Duration, want string) {
	c.t.Helper()
	for end := time.Now().Add(d); !strings.Contains(c.Output(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			c.t.Fatalf("the output never held %q within %s: %q", want, d, c.Output())
		}
	}
}

// WaitExit waits for the session to end and returns its exit status.
func (c *Client) WaitExit(d time.Duration) int {
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
			c.t.Fatalf("session ended without an exit status: %v; screen:\n%s", err, c.Screen())
		}
	case <-time.After(d):
		c.t.Fatalf("the session did not end within %s; screen:\n%s", d, c.Screen())
	}
	return -1
}

// Ended is closed once the session's output ended: the server closed the
// session or the connection dropped.
func (c *Client) Ended() <-chan struct{} { return c.drained }

// ConnClosed is closed once the connection is closed, by either side.
func (c *Client) ConnClosed() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		_ = c.conn.Wait()
		close(done)
	}()
	return done
}

// Close ends the connection the polite way, as ssh does on exit.
func (c *Client) Close() error { return c.conn.Close() }

// Kill drops the TCP connection without a word of SSH, as when the
// client's process is killed with -9 or its laptop lid shuts.
// SO_LINGER 0 makes the close a reset, the most abrupt end there is.
func (c *Client) Kill() error {
	if tcp, ok := c.raw.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	return c.raw.Close()
}
