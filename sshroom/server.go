// Package sshroom serves one Bubble Tea program per SSH session: the transport
// layer of leaserace's room mode, where every attendee types
// `ssh -p 2222 NAME@HOST` and gets a TUI of their own.
//
// The package knows nothing of leaserace's engine or TUI. The caller hands
// New an App, a factory that builds the model for one attendee; the server
// does the rest: host key, room code, the minimum-size gate, the idle
// timeout, a full room, panics, and a bounded shutdown that tells every
// attendee and runs every cleanup.
package sshroom

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/ssh"
	"github.com/charmbracelet/wish"
	wishrecover "github.com/charmbracelet/wish/recover"
	"github.com/leaserace/leaserace/internal/coalesce"
	"github.com/leaserace/leaserace/internal/memo"
	gossh "golang.org/x/crypto/ssh"
)

// DefaultListen is the address served when Config.Listen is empty.
const DefaultListen = "127.0.0.1:2222"

// DefaultShutdownTimeout bounds Shutdown when Config.ShutdownTimeout is zero.
const DefaultShutdownTimeout = 10 * time.Second

// DefaultFPS is how many times a second, at most, a session's screen is
// written out to its terminal when Config.FPS is zero (Bubble Tea's own
// rate). The session's painter draws a changed frame at once when the
// last draw is older than a tick, and otherwise at the next tick; an
// unchanged screen costs nothing, whatever the rate. MaxFPS is the most
// Config.FPS may ask for (Bubble Tea's own bound).
const (
	DefaultFPS = 60
	MaxFPS     = 120
)

// HostKeyFile is the name of the host key inside Config.HostKeyDir.
const HostKeyFile = "ssh_host_ed25519_key"

// ErrRemoteNotAllowed is returned by New when Listen is not a loopback
// address and AllowRemote is not set.
var ErrRemoteNotAllowed = errors.New("listening beyond this machine needs AllowRemote")

// ErrServerClosed is returned by Serve when the server was shut down before
// or while it served.
var ErrServerClosed = errors.New("the room is closed")

// Config says how the room is served. The zero value of every field but
// HostKeyDir is usable.
type Config struct {
	// Listen is the TCP address, DefaultListen if empty. It must be a
	// loopback address unless AllowRemote is set.
	Listen string
	// HostKeyDir holds the ed25519 host key, made on the first start and
	// reused after. The directory is created, or changed, to mode 0700:
	// give the key a directory of its own. Required.
	HostKeyDir string
	// MaxAttendees is how many attendees may be connected at once; 0 means
	// no limit. One more is told the room is full, then disconnected.
	MaxAttendees int
	// IdleTimeout ends a session that sent no input for this long, with a
	// line saying so. 0 means never.
	IdleTimeout time.Duration
	// AllowRemote allows a Listen address beyond loopback. Unless Open is
	// set, it also makes every attendee type the room code at login.
	AllowRemote bool
	// Open, with AllowRemote, admits anyone who can reach the port, with
	// no room code.
	Open bool
	// RoomCode is the code asked for at login (keyboard-interactive). When
	// a code is needed and this is empty, one is generated; RoomCode on the
	// Server tells it. A code given here is asked for even on loopback,
	// unless Open is set.
	RoomCode string
	// MinWidth and MinHeight: a smaller window shows a "make the window at
	// least WxH" line instead of the app, until it grows.
	MinWidth, MinHeight int
	// TooSmall, when set, is the app's own minimum-size rule, so the room
	// and the app agree on which windows are too small: a window of w×h
	// cells it calls too small gets the line above instead of the app.
	// Nil: a window narrower than MinWidth or lower than MinHeight.
	TooSmall func(w, h int) bool
	// FPS caps how many times a second a session's screen is written out
	// to its terminal (DefaultFPS if zero, at most MaxFPS). Frames that
	// come faster are merged: the terminal gets the newest one at the next
	// tick. A person reads no faster; a room of hundreds saves the writes.
	FPS int
	// ShutdownTimeout bounds Shutdown; DefaultShutdownTimeout if zero.
	ShutdownTimeout time.Duration
	// Log receives what the presenter should know: sessions coming and
	// going, panics with their stacks. Nil discards.
	Log *slog.Logger
}

// Session is what the App learns about one attendee.
type Session struct {
	// ID is unique among the sessions of one Server.
	ID string
	// User is the SSH user name, which is the attendee's name, made safe to
	// show: characters that are not printable (escape sequences) are
	// removed, it is cut to 32 characters, and "attendee" stands in for a
	// name with nothing left.
	User string
	// RemoteAddr is the attendee's address, host:port.
	RemoteAddr string
	// Term is the TERM the client sent.
	Term string
	// Width and Height are the window's size at login. Every size,
	// the first included, also reaches the model as a tea.WindowSizeMsg.
	Width, Height int
	// Renderer is this session's own lipgloss renderer, with the client's
	// colour profile and background. Build every style from it, never from
	// lipgloss's package-level functions, which describe the server's
	// terminal.
	Renderer *lipgloss.Renderer
	// Inbox is the one way into this session's program: Push queues a
	// message, Put one that a newer one under the same key replaces. It
	// never blocks; when the program falls behind by more than 256
	// pushed messages, the oldest are dropped. It is safe to use after
	// the session ended (what is queued then is dropped).
	Inbox *coalesce.Queue[string, tea.Msg]
}

// App builds the model for one attendee. It is called once per admitted
// session, with a context that ends with the session. The returned cleanup,
// if not nil, is called exactly once when the session ends, however it ends.
// An error ends the session with the error shown as one line.
type App func(ctx context.Context, s Session) (tea.Model, func(), error)

// AttendeeInfo describes one connected attendee.
type AttendeeInfo struct {
	ID         string
	User       string
	RemoteAddr string
	Since      time.Time
	// Width and Height are the window's current size.
	Width, Height int
	// Dropped counts messages dropped because the session fell behind.
	Dropped int
}

// Server is a room: an SSH server giving each session its own program.
type Server struct {
	cfg         Config
	app         App
	log         *slog.Logger
	ssh         *ssh.Server
	ln          net.Listener
	fingerprint string
	code        string

	mu        sync.Mutex
	closing   bool
	serving   bool
	attendees map[*attendee]struct{}
	lastID    uint64
	handlers  sync.WaitGroup

	shutdownOnce sync.Once
	shutdownDone chan struct{}
	shutdownErr  error

	// widths are the cell widths of the lines the sessions drew lately:
	// attendees at the same step draw the same lines.
	widths *memo.Memo[string, int]
}

// New makes the host key if needed, binds the listener and returns a server
// ready to Serve. Either Serve or Shutdown must be called to release the
// listener.
func New(cfg Config, app App) (*Server, error) {
	if app == nil {
		return nil, errors.New("room: no App to serve")
	}
	if cfg.HostKeyDir == "" {
		return nil, errors.New("room: no host key directory given")
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.MaxAttendees < 0 {
		return nil, fmt.Errorf("room: max attendees %d is negative", cfg.MaxAttendees)
	}
	if cfg.FPS == 0 {
		cfg.FPS = DefaultFPS
	}
	if cfg.FPS < 0 || cfg.FPS > MaxFPS {
		return nil, fmt.Errorf("room: %d frames a second: want 1 to %d", cfg.FPS, MaxFPS)
	}
	if !cfg.AllowRemote {
		if err := checkLoopback(cfg.Listen); err != nil {
			return nil, err
		}
	}
	s := &Server{
		cfg:          cfg,
		app:          app,
		log:          cfg.Log,
		attendees:    map[*attendee]struct{}{},
		shutdownDone: make(chan struct{}),
		widths:       newWidthCache(widthCacheSize),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if !cfg.Open && (cfg.AllowRemote || cfg.RoomCode != "") {
		s.code = strings.TrimSpace(cfg.RoomCode)
		if s.code == "" {
			s.code = newRoomCode()
		}
	}

	keyPath := filepath.Join(cfg.HostKeyDir, HostKeyFile)
	opts := []ssh.Option{
		wish.WithHostKeyPath(keyPath),
		wish.WithVersion("leaserace"),
		// The PTY is emulated: input and output are the SSH channel itself,
		// so no process-wide terminal, signal or file descriptor is shared
		// between sessions, and every resize arrives on one channel only.
		ssh.EmulatePty(),
		// handle recovers by itself; wish's recover is the net under that
		// recovery, so a panic there still ends one session, not the server.
		wish.WithMiddleware(wishrecover.MiddlewareWithLogger(panicLogger{s.log},
			func(ssh.Handler) ssh.Handler { return s.handle })),
	}
	if s.code != "" {
		opts = append(opts, wish.WithKeyboardInteractiveAuth(s.checkCode))
	}
	srv, err := wish.NewServer(opts...)
	if err != nil {
		return nil, fmt.Errorf("room: the host key in %s: %w", cfg.HostKeyDir, err)
	}
	if len(srv.HostSigners) == 0 {
		return nil, fmt.Errorf("room: no host key loaded from %s", keyPath)
	}
	s.ssh = srv
	s.fingerprint = gossh.FingerprintSHA256(srv.HostSigners[0].PublicKey())

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("room: listen on %s: %w", cfg.Listen, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !cfg.AllowRemote && !tcp.IP.IsLoopback() {
		// A name that resolved to loopback may still bind elsewhere.
		_ = ln.Close()
		return nil, fmt.Errorf("room: %s bound %s: %w", cfg.Listen, tcp.IP, ErrRemoteNotAllowed)
	}
	s.ln = ln
	return s, nil
}

// checkLoopback refuses an address that is not loopback, before anything
// is bound to it.
func checkLoopback(listen string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("room: listen address %q: %w", listen, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("room: %s is not a loopback address: %w", listen, ErrRemoteNotAllowed)
	}
	if host == "" {
		return fmt.Errorf("room: %s listens on every interface: %w", listen, ErrRemoteNotAllowed)
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return fmt.Errorf("room: resolve %s: %w", host, err)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("room: %s resolves to %s, not loopback: %w", host, ip, ErrRemoteNotAllowed)
		}
	}
	return nil
}

// newRoomCode makes a code that is easy to read aloud: no 0/o, 1/l/i.
func newRoomCode() string {
	const alphabet = "abcdefghjkmnpqrstuvwxyz23456789"
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:4]) + "-" + string(b[4:])
}

// checkCode asks for the room code once per keyboard-interactive round.
func (s *Server) checkCode(ctx ssh.Context, ask gossh.KeyboardInteractiveChallenge) bool {
	answers, err := ask(ctx.User(), "This leaserace room needs its room code.", []string{"Room code: "}, []bool{false})
	if err != nil || len(answers) != 1 {
		return false
	}
	// Hashing first makes the comparison constant-time in the length too.
	got := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(answers[0]))))
	want := sha256.Sum256([]byte(strings.ToLower(s.code)))
	ok := subtle.ConstantTimeCompare(got[:], want[:]) == 1
	if !ok {
		s.log.Info("wrong room code", "user", ctx.User(), "remote", ctx.RemoteAddr().String())
	}
	return ok
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Fingerprint is the host key's SHA256 fingerprint, as ssh prints it
// ("SHA256:..."), for attendees to check.
func (s *Server) Fingerprint() string { return s.fingerprint }

// RoomCode is the code asked for at login, or "" when none is asked.
func (s *Server) RoomCode() string { return s.code }

// Serve serves attendees until ctx ends, then shuts down (bounded by
// Config.ShutdownTimeout) and returns. It returns nil after a clean
// shutdown, whoever started it.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrServerClosed
	}
	if s.serving {
		s.mu.Unlock()
		return errors.New("room: Serve called twice")
	}
	s.serving = true
	s.mu.Unlock()

	s.log.Info("room open", "addr", s.Addr().String(), "fingerprint", s.fingerprint, "room code needed", s.code != "")
	errc := make(chan error, 1)
	go func() { errc <- s.ssh.Serve(s.ln) }()
	select {
	case err := <-errc:
		if errors.Is(err, ssh.ErrServerClosed) || s.isClosing() {
			<-s.shutdownDone
			return s.shutdownErr
		}
		// The listener failed: end the sessions too, they cannot be joined.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
		defer cancel()
		_ = s.Shutdown(sctx)
		return fmt.Errorf("room: serving %s: %w", s.Addr(), err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
		defer cancel()
		err := s.Shutdown(sctx)
		<-errc
		return err
	}
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Attendees lists who is connected, in the order they joined.
func (s *Server) Attendees() []AttendeeInfo {
	s.mu.Lock()
	list := make([]*attendee, 0, len(s.attendees))
	for a := range s.attendees {
		list = append(list, a)
	}
	s.mu.Unlock()
	slices.SortFunc(list, func(a, b *attendee) int { return cmp.Compare(a.seq, b.seq) })
	infos := make([]AttendeeInfo, 0, len(list))
	for _, a := range list {
		infos = append(infos, a.info())
	}
	return infos
}

// Broadcast queues msg for every connected session's program. It never
// blocks on a slow session and never panics on one that has ended.
func (s *Server) Broadcast(msg tea.Msg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for a := range s.attendees {
		a.inbox.Push(msg)
	}
}

// Shutdown closes the room: it stops accepting, tells every attendee the
// presenter closed the room, quits every program, closes every session and
// runs every cleanup, within ctx and Config.ShutdownTimeout. A program that
// will not quit is killed; a session whose model is stuck for good has its
// cleanup run anyway and its connection closed, and Shutdown says so in its
// error. Calling it again returns the first result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() {
		s.shutdownErr = s.shutdown(ctx)
		close(s.shutdownDone)
	})
	select {
	case <-s.shutdownDone:
		return s.shutdownErr
	case <-ctx.Done():
		return fmt.Errorf("room: shutdown: %w", ctx.Err())
	}
}

func (s *Server) shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
	defer cancel()

	s.mu.Lock()
	s.closing = true
	list := make([]*attendee, 0, len(s.attendees))
	for a := range s.attendees {
		list = append(list, a)
	}
	s.mu.Unlock()
	s.log.Info("closing the room", "attendees", len(list))

	// Stop accepting now; the ssh server's own Shutdown then waits for the
	// connections, which close once their sessions have exited.
	_ = s.ln.Close()
	connsClosed := make(chan error, 1)
	go func() { connsClosed <- s.ssh.Shutdown(ctx) }()

	for _, a := range list {
		a.end(endShutdown())
	}
	handlersDone := make(chan struct{})
	go func() {
		s.handlers.Wait()
		close(handlersDone)
	}()

	var errs []error
	select {
	case <-handlersDone:
	case <-ctx.Done():
		// Some model is stuck beyond Kill's reach. Its session still has
		// to end for the attendee and its resources still have to go.
		var stuck []string
		for _, a := range list {
			if !a.finished() {
				stuck = append(stuck, a.id+" ("+a.user+")")
				a.runCleanup()
			}
		}
		_ = s.ssh.Close()
		if len(stuck) > 0 {
			errs = append(errs, fmt.Errorf("room: sessions %s did not end within %s; their cleanups ran and their connections were closed: %w",
				strings.Join(stuck, ", "), s.cfg.ShutdownTimeout, ctx.Err()))
		}
	}

	// Every session has exited; a client that keeps its connection open
	// without one is given a moment, then cut.
	grace := time.NewTimer(2 * time.Second)
	defer grace.Stop()
	select {
	case <-connsClosed:
	case <-grace.C:
		_ = s.ssh.Close()
	case <-ctx.Done():
		_ = s.ssh.Close()
	}
	s.log.Info("room closed")
	return errors.Join(errs...)
}

// admit registers the session as an attendee, or says why it cannot join.
func (s *Server) admit(sess ssh.Session, pty ssh.Pty) (*attendee, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, "The room is closed."
	}
	if max := s.cfg.MaxAttendees; max > 0 && len(s.attendees) >= max {
		return nil, fmt.Sprintf("The room is full (%d attendees). Ask the presenter, or try again later.", max)
	}
	s.lastID++
	a := newAttendee(s, sess, pty, s.lastID)
	s.attendees[a] = struct{}{}
	s.handlers.Add(1)
	return a, ""
}

func (s *Server) release(a *attendee) {
	s.mu.Lock()
	delete(s.attendees, a)
	s.mu.Unlock()
	s.handlers.Done()
}

// handle serves one SSH session from login to exit.
func (s *Server) handle(sess ssh.Session) {
	pty, winCh, ok := sess.Pty()
	if !ok {
		// No PTY: `ssh host command` without -t. One line, exit 1.
		_, _ = fmt.Fprint(sess.Stderr(), "leaserace needs a terminal: connect with plain ssh (no command), or add -t.\n")
		_ = sess.Exit(1)
		return
	}
	a, why := s.admit(sess, pty)
	if a == nil {
		// winCh is buffered with one slot: nothing reads it, nothing blocks.
		say(sess, why)
		_ = sess.Exit(1)
		return
	}
	defer s.release(a)
	s.log.Info("attendee joined", "session", a.id, "user", a.user, "remote", a.remote, "term", pty.Term,
		"size", fmt.Sprintf("%dx%d", pty.Window.Width, pty.Window.Height))
	a.run(winCh)
	s.log.Info("attendee left", "session", a.id, "user", a.user, "why", a.ending().why)
}

// say writes one line to a session whose PTY is emulated (or absent).
func say(sess ssh.Session, line string) {
	_, _ = fmt.Fprint(sess, line+"\r\n")
}

// panicLogger feeds wish's recover middleware into the server's log.
type panicLogger struct{ log *slog.Logger }

func (l panicLogger) Printf(format string, v ...any) {
	l.log.Error("panic in the SSH handler", "detail", fmt.Sprintf(format, v...))
}
