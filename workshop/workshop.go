// Package workshop is leaserace's room mode put together: an SSH server
// (sshroom) that gives every attendee a TUI (tui) and a run of their own
// (engine) on one shared Host, each seated in a room whose state lives in
// PostgreSQL (engine/room) and following the presenter's lead.
//
// Start serves a room; Present runs the presenter's TUI for it. Any number
// of rooms started with the same Config.Room on one PostgreSQL, in one
// process or many, form one room.
package workshop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/sshroom"
	"github.com/leaserace/leaserace/tui"
	"github.com/leaserace/leaserace/tui/screen"
)

// Defaults of Config.
const (
	DefaultRoom     = "main"
	DefaultMaxConns = 16
	DefaultScenario = "renewal-race"
)

// cleanupTimeout bounds what one attendee's leaving does: dropping their
// run's schemas and taking their seat out of the room. It stays under
// sshroom.DefaultShutdownTimeout, so a room closes in time even while the
// database is slow.
const cleanupTimeout = 5 * time.Second

// closeReserve is what Shutdown keeps of its time for closing the store and
// the host once the sessions have ended.
const closeReserve = 2 * time.Second

// Config says what room to serve, where, and how many may join.
type Config struct {
	// DSN reaches the PostgreSQL server of the room and of every run.
	// Required; it may hold a password.
	DSN string
	// Room names the room (DefaultRoom if empty): rooms with the same name
	// on one PostgreSQL are one room.
	Room string
	// Server names this process on the presenter's board; default
	// HOST:PORT of the SSH listener.
	Server string
	// SSH is the SSH server's: its listener, host key (HostKeyDir is
	// required), limits, room code, shutdown timeout and log, which the
	// room shares. The room sets its minimum window size itself.
	SSH sshroom.Config
	// RoomIdle is how long this process may go silent (die) before the
	// room's other processes sweep its seats off the board; room.Options'
	// Idle, one minute if 0.
	RoomIdle time.Duration
	// MaxConns bounds the PostgreSQL connections every attendee's run
	// shares (DefaultMaxConns if 0); the resource service has as many.
	MaxConns int
	// Scenario is what attendees start with (DefaultScenario if nil) until
	// the presenter's lead moves them; Knobs likewise (blind / off if empty).
	Scenario *scenario.Scenario
	Knobs    scenario.Knobs
	// OnError hears what goes wrong in the room's background work (the
	// LISTEN connection lost, say). Calls never overlap. Nil discards.
	OnError func(error)
}

// Room is a served room: the SSH server, the Host every run shares and
// the room's store, until Shutdown.
type Room struct {
	cfg   Config
	host  *engine.Host
	store *room.Store
	ssh   *sshroom.Server
	sc    *scenario.Scenario

	stopSub func()
	done    chan struct{} // closed when serving stopped
	served  error

	mu       sync.Mutex
	sessions map[string]*seatLink // by sshroom session ID

	backlog Backlog
	seats   *seatBatcher
	// frames draws the parts of the attendees' frames that followers at
	// one step share once for all of them.
	frames *screen.Shared

	shutdownOnce sync.Once
	shutdownErr  error
}

// ErrRemoteNotAllowed is sshroom's: Listen is beyond loopback and
// AllowRemote is not set.
var ErrRemoteNotAllowed = sshroom.ErrRemoteNotAllowed

// Start opens the shared Host and the room's store, binds the SSH
// listener and serves attendees until Shutdown. ctx bounds the start only.
// On an error nothing is left running.
func Start(ctx context.Context, cfg Config) (_ *Room, err error) {
	if cfg.DSN == "" {
		return nil, errors.New("no PostgreSQL to serve the room on: the DSN is empty")
	}
	if cfg.Room == "" {
		cfg.Room = DefaultRoom
	}
	if err := room.ValidRoom(cfg.Room); err != nil {
		return nil, err
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxConns < 2 {
		return nil, fmt.Errorf("%d PostgreSQL connections cannot serve a room: want at least 2", cfg.MaxConns)
	}
	if cfg.Knobs.Renewal == "" {
		cfg.Knobs.Renewal = scenario.RenewalBlind
	}
	if cfg.Knobs.Fencing == "" {
		cfg.Knobs.Fencing = scenario.FencingOff
	}
	if _, err := scenario.ParseRenewal(string(cfg.Knobs.Renewal)); err != nil {
		return nil, err
	}
	if _, err := scenario.ParseFencing(string(cfg.Knobs.Fencing)); err != nil {
		return nil, err
	}
	sc := cfg.Scenario
	if sc == nil {
		if sc, err = scenario.Load(DefaultScenario); err != nil {
			return nil, err
		}
	}
	r := &Room{cfg: cfg, sc: sc, done: make(chan struct{}), sessions: map[string]*seatLink{}, frames: screen.NewShared(screen.DefaultShared)}

	// Bind first: a port taken or an address refused fails before
	// anything else starts, and the port names this process on the board.
	sshCfg := cfg.SSH
	// The room gates a small window by the TUI's own rule.
	sshCfg.MinWidth, sshCfg.MinHeight, sshCfg.TooSmall = screen.MinWidth, screen.MinHeight, screen.TooSmall
	r.ssh, err = sshroom.New(sshCfg, r.attendee)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			// Nothing was served: this releases the listener and what
			// else was started.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			_ = r.ssh.Shutdown(cctx)
			err = errors.Join(err, r.closeParts(cctx))
		}
	}()
	if cfg.Server == "" {
		hostname, _ := os.Hostname()
		_, port, _ := net.SplitHostPort(r.ssh.Addr().String())
		cfg.Server = net.JoinHostPort(hostname, port)
		r.cfg.Server = cfg.Server
	}
	r.host, err = engine.OpenHost(ctx, engine.HostConfig{DSN: cfg.DSN, MaxConns: int32(cfg.MaxConns)})
	if err != nil {
		return nil, fmt.Errorf("cannot set up the attendees' connections: %w", err)
	}
	// Two pooled connections: the attendees' reports, votes and goals go
	// through them, a report per move.
	r.store, err = room.Open(ctx, cfg.DSN, cfg.Room, cfg.Server, room.Options{Conns: 2, Idle: cfg.RoomIdle, OnError: cfg.OnError})
	if err != nil {
		return nil, fmt.Errorf("cannot open room %s: %w", cfg.Room, err)
	}
	r.seats = newSeatBatcher(r.store)
	r.stopSub = r.store.Subscribe(r.heard)
	go func() {
		defer close(r.done)
		r.served = r.ssh.Serve(context.Background())
	}()
	return r, nil
}

// heard passes the room's events on to the attendees of this process.
func (r *Room) heard(ev room.Event) {
	switch {
	case ev.Kind == room.LeadChanged && ev.Lead != nil:
		for _, l := range r.links() {
			r.leadTo(l, *ev.Lead, "heard")
		}
	case ev.Kind == room.RoomEnded:
		// A room made again starts its leads from one.
		for _, l := range r.links() {
			l.forget()
		}
	}
}

// leadTo passes a lead to one attendee's program, and logs it at debug
// level: which leads reached whom, in what order, is what a question
// about an attendee's position needs.
func (r *Room) leadTo(l *seatLink, ld room.Lead, why string) {
	passed := l.lead(ld)
	if log := r.cfg.SSH.Log; log != nil {
		log.Debug("lead", "user", l.user, "why", why, "seq", ld.Seq, "scenario", ld.Scenario, "pos", ld.Pos, "t", ld.T, "push", ld.Push, "passed", passed)
	}
}

func (r *Room) links() []*seatLink {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*seatLink, 0, len(r.sessions))
	for _, l := range r.sessions {
		out = append(out, l)
	}
	return out
}

// attendee builds one attendee's TUI: a seat in the room and a run of
// their own on the shared host, following the presenter.
func (r *Room) attendee(ctx context.Context, s sshroom.Session) (tea.Model, func(), error) {
	seat, err := r.store.Join(ctx, s.User)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot take a seat in the room: %w", err)
	}
	leave := func() {
		cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		_ = r.store.Leave(cctx, seat.ID)
	}
	run, err := engine.Open(ctx, engine.Config{Scenario: r.sc, Knobs: r.cfg.Knobs, Host: r.host, Who: s.User, Provider: "room"})
	if err != nil {
		leave()
		return nil, nil, fmt.Errorf("cannot open a run for %s: %w", s.User, err)
	}
	link := newSeatLink(r.store, r.seats, s.Inbox, &r.backlog, s.User)
	// The model outlives App's context, which ends with the session: its
	// own Close, in the cleanup, ends what it started.
	m, err := tui.NewModel(context.WithoutCancel(ctx), tui.Config{
		Run: run, Host: r.host, Who: s.User, Room: link, Seat: seat, Follow: true,
		Renderer: s.Renderer, Remote: true, Provider: "room", Frames: r.frames,
	})
	if err != nil {
		cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		_ = run.Close(cctx)
		link.stop()
		leave()
		return nil, nil, err
	}
	r.mu.Lock()
	r.sessions[s.ID] = link
	r.mu.Unlock()
	if l, err := r.store.Lead(ctx); err == nil && l != nil {
		// Join the presenter where they are now.
		r.leadTo(link, *l, "joined")
	}
	cleanup := func() {
		r.mu.Lock()
		delete(r.sessions, s.ID)
		r.mu.Unlock()
		cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		_ = m.Close(cctx)
		link.stop()
		leave()
	}
	return m, cleanup, nil
}

// Addr is the SSH listener's address.
func (r *Room) Addr() net.Addr { return r.ssh.Addr() }

// Fingerprint is the host key's SHA256 fingerprint, as ssh prints it.
func (r *Room) Fingerprint() string { return r.ssh.Fingerprint() }

// RoomCode is the code asked for at login, or "" when none is.
func (r *Room) RoomCode() string { return r.ssh.RoomCode() }

// Name is the room's name; Server names this process on the board.
func (r *Room) Name() string   { return r.cfg.Room }
func (r *Room) Server() string { return r.cfg.Server }

// Attendees lists who is connected to this process, in the order they
// joined.
func (r *Room) Attendees() []sshroom.AttendeeInfo { return r.ssh.Attendees() }

// Frames is how the attendees' frames shared their sections: hits are
// frames that found them drawn by another attendee (or an earlier frame).
func (r *Room) Frames() screen.SharedStats { return r.frames.Stats() }

// Backlog is how the attendees' reports fared on their way to the room:
// how many waited and for how long.
func (r *Room) Backlog() BacklogStats { return r.backlog.Stats() }

// Host is the pool and resource every attendee's run shares.
func (r *Room) Host() *engine.Host { return r.host }

// Store is this process's handle on the room's shared state.
func (r *Room) Store() *room.Store { return r.store }

// Done is closed when the room stopped serving: after Shutdown, or when
// its listener failed (Err says why).
func (r *Room) Done() <-chan struct{} { return r.done }

// Err is why serving stopped, once Done is closed; nil after a clean
// Shutdown.
func (r *Room) Err() error {
	select {
	case <-r.done:
		return r.served
	default:
		return nil
	}
}

// Shutdown closes the room: every attendee is told and their session
// ends, every run's schemas are dropped, this process's seats leave the
// room, and the Host and the store are closed, all within ctx. The room's
// own schema stays for the room's other processes and the presenter.
// Later calls return the first call's result.
func (r *Room) Shutdown(ctx context.Context) error {
	r.shutdownOnce.Do(func() {
		// Sessions that will not end must not take all the time: the
		// store and the host still have to close, and the host drops the
		// schemas it made.
		sshCtx := ctx
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) > 2*closeReserve {
			var cancel context.CancelFunc
			sshCtx, cancel = context.WithDeadline(ctx, dl.Add(-closeReserve))
			defer cancel()
		}
		err := r.ssh.Shutdown(sshCtx)
		if errors.Is(err, sshroom.ErrServerClosed) {
			err = nil
		}
		select {
		case <-r.done:
		case <-sshCtx.Done():
		}
		r.shutdownErr = errors.Join(err, r.closeParts(ctx))
	})
	return r.shutdownErr
}

// closeParts closes what Start opened after the SSH server, in reverse.
func (r *Room) closeParts(ctx context.Context) error {
	var errs []error
	if r.stopSub != nil {
		r.stopSub()
	}
	if r.seats != nil {
		r.seats.stop()
	}
	if r.store != nil {
		if err := r.store.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("could not leave room %s cleanly: %w", r.cfg.Room, err))
		}
	}
	if r.host != nil {
		if err := r.host.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("could not close the attendees' connections cleanly: %w", err))
		}
	}
	return errors.Join(errs...)
}
