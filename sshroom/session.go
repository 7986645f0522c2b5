package sshroom

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/ssh"
	"github.com/charmbracelet/wish/bubbletea"
	"github.com/leaserace/leaserace/internal/coalesce"
	gossh "golang.org/x/crypto/ssh"
)

const (
	// queryTimeout bounds the wait for the client's answer to the
	// background-colour query. wish gives up after 1 s too, but on an
	// emulated PTY its reader cannot be cancelled: without this deadline a
	// client that never answers would wait for its first frame forever.
	queryTimeout = time.Second
	// quitGrace is how long a program asked to quit may take before it is
	// killed.
	quitGrace = 2 * time.Second
	// queueLimit is how many messages may wait for one session's program;
	// beyond it the oldest are dropped.
	queueLimit = 256
	// sizeKey is the inbox's key for the window's size.
	sizeKey = "size"
)

// ending says why a session ends and what its attendee is told.
type ending struct {
	why  string // for the log
	line string // told to the attendee; empty says nothing
	code int    // exit status
	kill bool   // nobody is left to render to: kill without a last frame
}

func endQuit() ending { return ending{why: "quit"} }

func endGone() ending { return ending{why: "client gone", kill: true} }

func endShutdown() ending {
	return ending{why: "room closed", line: "The presenter closed the room. Thank you for joining!"}
}

func endIdle(d time.Duration) ending {
	return ending{why: "idle", line: fmt.Sprintf("leaserace closed your session after %s without input. Reconnect to start again.", d)}
}

func endBug() ending {
	return ending{why: "panic", code: 1,
		line: "leaserace hit a bug and closed your session; the presenter's log has the details. Reconnect to start again."}
}

func endAppError(err error) ending {
	return ending{why: "app error: " + err.Error(), code: 1, line: "leaserace could not start your session: " + err.Error()}
}

// attendee is one admitted SSH session and everything it started.
type attendee struct {
	srv                    *Server
	sess                   ssh.Session
	seq                    uint64
	id, user, remote, term string
	since                  time.Time

	// ctx ends when the session ends; App's context is derived from it.
	ctx    context.Context
	cancel context.CancelFunc
	in     *inputPump
	// inbox is the one way into the session's program: sizes put in
	// front, everything else pushed and kept, the oldest dropped past
	// queueLimit. One goroutine delivers it, so Program.Send, which waits
	// while the model is busy, never blocks a broadcaster.
	inbox *coalesce.Queue[string, tea.Msg]

	mu            sync.Mutex
	prog          *tea.Program
	end_          *ending
	width, height int
	cleanup       func()

	cleanupOnce sync.Once
	done        chan struct{} // closed when run has returned
}

func newAttendee(s *Server, sess ssh.Session, pty ssh.Pty, seq uint64) *attendee {
	ctx, cancel := context.WithCancel(context.Background())
	a := &attendee{
		srv:    s,
		sess:   sess,
		seq:    seq,
		id:     strconv.FormatUint(seq, 10),
		user:   cleanName(sess.User()),
		remote: sess.RemoteAddr().String(),
		term:   pty.Term,
		since:  time.Now(),
		ctx:    ctx,
		cancel: cancel,
		inbox:  coalesce.New[string, tea.Msg](coalesce.Options[tea.Msg]{Limit: queueLimit}),
		width:  pty.Window.Width,
		height: pty.Window.Height,
		done:   make(chan struct{}),
	}
	a.in = newInputPump(ctx.Done())
	return a
}

// maxNameRunes bounds an attendee's name as the App sees it.
const maxNameRunes = 32

// cleanName makes the SSH user name safe to show on anyone's screen: the
// client chooses it freely, escape sequences included.
func cleanName(user string) string {
	var b strings.Builder
	n := 0
	for _, r := range user {
		if !unicode.IsPrint(r) {
			continue
		}
		if n == maxNameRunes {
			break
		}
		b.WriteRune(r)
		n++
	}
	if name := strings.TrimSpace(b.String()); name != "" {
		return name
	}
	return "attendee"
}

func (a *attendee) info() AttendeeInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	return AttendeeInfo{ID: a.id, User: a.user, RemoteAddr: a.remote, Since: a.since,
		Width: a.width, Height: a.height, Dropped: a.inbox.Dropped()}
}

func (a *attendee) finished() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// ending is why the session ends, or nil while it runs.
func (a *attendee) ending() *ending {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.end_
}

// end asks the session to end for reason e; the first reason wins. It never
// blocks: the program is asked to quit from a goroutine and killed if it
// has not quit after quitGrace.
func (a *attendee) end(e ending) {
	a.mu.Lock()
	if a.end_ != nil {
		a.mu.Unlock()
		return
	}
	a.end_ = &e
	p := a.prog
	a.mu.Unlock()
	if p == nil {
		// Still setting up: this stops the colour query and tells App.
		a.cancel()
		return
	}
	if e.kill {
		p.Kill()
		return
	}
	go func() {
		defer a.guard("quitting the program")
		p.Quit() // a Send: it waits while the model is busy
	}()
	time.AfterFunc(quitGrace, p.Kill) // a no-op once Run has returned
}

// caught reports a panic in this session: logged with its stack for the
// presenter, and the session ends telling the attendee it hit a bug.
func (a *attendee) caught(where string, r any) {
	a.srv.log.Error("panic in a session; the other sessions carry on", "session", a.id, "user", a.user,
		"in", where, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	a.end(endBug())
}

// guard, deferred at the top of every goroutine the layer starts for a
// session, turns a panic there into the end of that session only.
func (a *attendee) guard(where string) {
	if r := recover(); r != nil {
		a.caught(where, r)
	}
}

func (a *attendee) runCleanup() {
	a.cleanupOnce.Do(func() {
		a.mu.Lock()
		f := a.cleanup
		a.mu.Unlock()
		if f == nil {
			return
		}
		defer func() {
			if r := recover(); r != nil {
				a.srv.log.Error("panic in a session's cleanup", "session", a.id, "user", a.user,
					"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			}
		}()
		f()
	})
}

// run serves the session: colour query, App, program, and the ending.
func (a *attendee) run(winCh <-chan ssh.Window) {
	defer close(a.done)
	defer a.finish()
	defer a.guard("the session handler")

	go a.forwardSizes(winCh)
	go a.watchClient()
	go func() {
		defer a.guard("the input pump")
		a.in.pump(a.sess, func() { a.end(endGone()) })
	}()
	a.watchIdle()

	r := a.renderer()
	if a.ending() != nil {
		return
	}
	model, err := a.startApp(r)
	if err != nil {
		a.end(endAppError(err))
		return
	}
	if model == nil {
		return // App panicked: caught has ended the session
	}
	a.mu.Lock()
	w, h := a.width, a.height
	a.mu.Unlock()
	paint := newPainter(a.output(), a.srv.cfg.FPS, w, h, a.srv.widths)
	// Whatever ends the program, the terminal gets its modes back before
	// the session's last line.
	defer paint.stop()
	f := &frame{a: a, app: model, r: r, w: w, h: h, minW: a.srv.cfg.MinWidth, minH: a.srv.cfg.MinHeight, tooSmall: sizeRule(a.srv.cfg), paint: paint}
	opts := append(bubbletea.MakeOptions(a.sess),
		// Input comes through the pump, which sees every keystroke for the
		// idle timeout and can be stopped when the session ends.
		tea.WithInput(readerFunc(func(p []byte) (int, error) { return a.in.read(p, nil) })),
		// The frame's painter draws instead (see painter).
		tea.WithoutRenderer(),
		// Each program would otherwise install a process-wide SIGINT and
		// SIGTERM handler: the server handles its own signals.
		tea.WithoutSignalHandler(),
		// tea.Suspend would send SIGTSTP to the server's whole process
		// group, stopping every session: no model may suspend.
		tea.WithFilter(dropSuspend),
	)
	p := tea.NewProgram(f, opts...)
	a.mu.Lock()
	if a.end_ != nil {
		a.mu.Unlock()
		return
	}
	a.prog = p
	a.mu.Unlock()
	go func() {
		defer a.guard("delivering messages")
		// p.Send returns once p has ended, so a dead program cannot
		// hold the delivery.
		a.inbox.Deliver(a.ctx.Done(), func(m tea.Msg) { p.Send(m) })
	}()

	_, err = p.Run()
	if errors.Is(err, tea.ErrProgramPanic) {
		// bubbletea caught a panic our wrappers did not see.
		a.caught("the program", err)
	}
	a.end(endQuit())
}

// finish ends everything the session started, tells the attendee why,
// exits with the status, and runs the App's cleanup.
func (a *attendee) finish() {
	a.end(endQuit()) // a reason if none was given
	e := a.ending()
	a.cancel()
	a.mu.Lock()
	p := a.prog
	a.mu.Unlock()
	if p != nil {
		p.Kill() // a no-op after Run; lets a pending Send return
	}
	a.inbox.Close()
	if e.line != "" && !e.kill {
		say(a.sess, e.line)
	}
	_ = a.sess.Exit(e.code)
	a.runCleanup()
}

// output is where the session's frames go: the terminal Bubble Tea would
// write to (wish's choice, for a real or an emulated PTY).
//
// With an emulated PTY the session's Write turns "\n" into "\r\n", copying
// every write twice to do it; a third of what a busy room allocated. The
// painter writes no "\n" (it moves the cursor instead), so it writes to
// the session's channel itself when the session lets reflection reach it,
// and through the session otherwise.
func (a *attendee) output() io.Writer {
	if w := realPTY(a.sess); w != nil {
		return w
	}
	if ch := rawChannel(a.sess); ch != nil {
		return ch
	}
	return a.sess
}

// rawChannel is the SSH channel a session wraps, nil if it has none that
// reflection can reach: the session embeds it as its exported Channel.
func rawChannel(sess ssh.Session) io.Writer {
	v := reflect.ValueOf(sess)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("Channel")
	if !f.IsValid() || !f.CanInterface() {
		return nil
	}
	ch, ok := f.Interface().(gossh.Channel)
	if !ok || ch == nil {
		return nil
	}
	return ch
}

// renderer makes the session's own lipgloss renderer. wish queries the
// client's background colour through the session; queryIO bounds that wait.
func (a *attendee) renderer() *lipgloss.Renderer {
	ctx, cancel := context.WithTimeout(a.ctx, queryTimeout)
	defer cancel()
	return bubbletea.MakeRenderer(queryIO{Session: a.sess, in: a.in, done: ctx.Done()})
}

// startApp calls App. A panic in App ends the session as a bug (model nil,
// err nil).
func (a *attendee) startApp(r *lipgloss.Renderer) (model tea.Model, err error) {
	defer a.guard("the App")
	a.mu.Lock()
	s := Session{ID: a.id, User: a.user, RemoteAddr: a.remote, Term: a.term,
		Width: a.width, Height: a.height, Renderer: r, Inbox: a.inbox}
	a.mu.Unlock()
	m, cleanup, err := a.srv.app(a.ctx, s)
	a.mu.Lock()
	a.cleanup = cleanup
	a.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("the app made no model")
	}
	return m, nil
}

// forwardSizes hands every window size, the first included, to the
// program. It drains winCh until the session closes it: the SSH request
// loop blocks while a size waits in it.
func (a *attendee) forwardSizes(winCh <-chan ssh.Window) {
	defer a.guard("forwarding window sizes")
	for w := range winCh {
		a.mu.Lock()
		a.width, a.height = w.Width, w.Height
		a.mu.Unlock()
		// Only the newest size matters, and every frame after it is drawn
		// to it: it goes in front of what waits.
		a.inbox.PutFront(sizeKey, tea.WindowSizeMsg{Width: w.Width, Height: w.Height})
	}
}

// watchClient ends the session when its connection goes, however it goes.
func (a *attendee) watchClient() {
	defer a.guard("watching the connection")
	select {
	case <-a.sess.Context().Done():
		a.end(endGone())
	case <-a.ctx.Done():
	}
}

// watchIdle ends the session after IdleTimeout without input.
func (a *attendee) watchIdle() {
	d := a.srv.cfg.IdleTimeout
	if d <= 0 {
		return
	}
	var t *time.Timer
	check := func() {
		defer a.guard("the idle timer")
		if left := d - time.Since(a.in.lastInput()); left > 0 {
			t.Reset(left)
			return
		}
		a.end(endIdle(d))
	}
	t = time.AfterFunc(time.Hour, check)
	t.Reset(d)
	context.AfterFunc(a.ctx, func() { t.Stop() })
}

func dropSuspend(_ tea.Model, msg tea.Msg) tea.Msg {
	if _, ok := msg.(tea.SuspendMsg); ok {
		return nil
	}
	return msg
}

type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// queryIO is the session as wish's colour query sees it: reads come from
// the pump and fail once done is closed, so a silent client cannot hold
// its own first frame back.
type queryIO struct {
	ssh.Session
	in   *inputPump
	done <-chan struct{}
}

func (q queryIO) Read(p []byte) (int, error) { return q.in.read(p, q.done) }

// inputPump reads the session's input in one goroutine and hands it to one
// reader at a time: the colour query first, then the program. It notes the
// time of the last input, and its reads end when the session ends.
type inputPump struct {
	chunks chan []byte
	stop   <-chan struct{}
	eof    chan struct{}
	last   atomic.Int64 // unix nanoseconds

	mu      sync.Mutex
	pending []byte
}

func newInputPump(stop <-chan struct{}) *inputPump {
	in := &inputPump{chunks: make(chan []byte), stop: stop, eof: make(chan struct{})}
	in.last.Store(time.Now().UnixNano())
	return in
}

func (in *inputPump) lastInput() time.Time { return time.Unix(0, in.last.Load()) }

// pump copies src into chunks until src fails or stop closes; at the end
// of the client's input it calls onEOF.
func (in *inputPump) pump(src io.Reader, onEOF func()) {
	buf := make([]byte, 4096)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			in.last.Store(time.Now().UnixNano())
			// Unbuffered: a chunk is taken before eof can be closed below.
			select {
			case in.chunks <- bytes.Clone(buf[:n]):
			case <-in.stop:
				return
			}
		}
		if err != nil {
			close(in.eof)
			onEOF()
			return
		}
	}
}

// read reads what the pump has; it fails with os.ErrDeadlineExceeded once
// done (may be nil) is closed, and with io.EOF when input ended.
func (in *inputPump) read(p []byte, done <-chan struct{}) (int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.pending) == 0 {
		select {
		case c := <-in.chunks:
			in.pending = c
		case <-in.eof:
			return 0, io.EOF
		case <-in.stop:
			return 0, io.EOF
		case <-done:
			return 0, os.ErrDeadlineExceeded
		}
	}
	n := copy(p, in.pending)
	in.pending = in.pending[n:]
	return n, nil
}
