package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/scenario"
)

// opTimeout bounds one engine call. A local step takes milliseconds; this
// is only there so a server that stopped answering cannot hang a command.
const opTimeout = 30 * time.Second

// opKind is one thing the presenter asked the engine to do.
type opKind int

const (
	opNext opKind = iota
	opPrev
	opTickNext
	opTickPrev
	opStart
	opEnd
	opRenewal
	opFencing
	opReconnect
	opExport
	opOpen
)

func (k opKind) String() string {
	return [...]string{"next", "previous", "tick forward", "tick back", "start", "end",
		"renewal toggle", "fencing cycle", "reconnect", "export", "open scenario"}[k]
}

// op is a queued request; name is the scenario for opOpen.
type op struct {
	kind opKind
	name string
}

// doneMsg is what an engine command reports back to Update.
type doneMsg struct {
	op   op
	run  *engine.Run // set when the command opened a new run
	snap snapshot
	// moved is false when the command left the run where it was (at the
	// start already, past the last event).
	moved  bool
	step   *engine.Step
	change *engine.Change
	paths  []string
	info   string
	err    error
}

// opEnv is what a command needs, copied from the model when it starts.
type opEnv struct {
	s         *session
	run       *engine.Run
	shown     snapshot
	log       []engine.SessionEntry
	exportDir string
	now       time.Time
}

// exec runs f as a Bubble Tea command: with its own deadline, registered
// with the session so Close waits for it, and with a panic inside the
// engine turned into an error shown in place instead of a crash.
func (e opEnv) exec(o op, f func(ctx context.Context) doneMsg) tea.Cmd {
	return func() (msg tea.Msg) {
		if !e.s.begin() {
			return nil
		}
		defer e.s.end()
		ctx, cancel := context.WithTimeout(e.s.ctx, opTimeout)
		defer cancel()
		defer func() {
			if r := recover(); r != nil {
				msg = doneMsg{op: o, err: fmt.Errorf("leaserace hit a bug during %s (%v); the screen still shows the state before it", o.kind, r)}
			}
		}()
		d := f(ctx)
		d.op = o
		return d
	}
}

// command builds the engine call for o.
func (e opEnv) command(o op) tea.Cmd {
	r := e.run
	return e.exec(o, func(ctx context.Context) doneMsg {
		switch o.kind {
		case opNext:
			st, err := r.Next(ctx)
			if errors.Is(err, engine.ErrEnd) {
				return doneMsg{snap: takeSnapshot(r), info: "That was the last event: G jumps to the end of the window, g back to the start."}
			}
			if err != nil {
				return doneMsg{err: err}
			}
			return doneMsg{snap: takeSnapshot(r), moved: true, step: &st}
		case opPrev:
			pos, now := r.Pos(), r.Now()
			if pos == 0 {
				if now <= r.Start() {
					return doneMsg{snap: takeSnapshot(r), info: "Already at the start: → runs the first event."}
				}
				return e.seek(ctx, r, func() error { return r.Seek(ctx, 0) })
			}
			target := pos - 1
			if now > r.Scenario().Events[pos-1].T {
				// The cursor was ticked past the last event: go back to it.
				target = pos
			}
			return e.seek(ctx, r, func() error { return r.Seek(ctx, target) })
		case opTickNext:
			if r.Now() >= r.End() && r.Pos() >= r.Len() {
				return doneMsg{snap: takeSnapshot(r), info: "At the end of the window."}
			}
			now := r.Now()
			return e.seek(ctx, r, func() error { return r.SeekTime(ctx, now+1) })
		case opTickPrev:
			now := r.Now()
			if now <= r.Start() {
				return doneMsg{snap: takeSnapshot(r), info: "Already at the start of the window."}
			}
			return e.seek(ctx, r, func() error { return r.SeekTime(ctx, now-1) })
		case opStart:
			return e.seek(ctx, r, func() error { return r.Seek(ctx, 0) })
		case opEnd:
			end := r.End()
			return e.seek(ctx, r, func() error { return r.SeekTime(ctx, end) })
		case opRenewal, opFencing:
			k := r.Knobs()
			if o.kind == opRenewal {
				k.Renewal = k.Renewal.Toggle()
			} else {
				k.Fencing = k.Fencing.Next()
			}
			ch, err := r.SetKnobs(ctx, k)
			if err != nil {
				return doneMsg{err: err}
			}
			return doneMsg{snap: takeSnapshot(r), moved: true, change: &ch}
		case opReconnect:
			return e.reconnect(ctx, r)
		case opExport:
			paths, err := export(ctx, r, e.log, e.exportDir, e.now)
			if err != nil {
				return doneMsg{err: err}
			}
			return doneMsg{snap: takeSnapshot(r), paths: paths}
		case opOpen:
			return e.open(ctx, o.name)
		}
		return doneMsg{err: fmt.Errorf("unknown request %d", o.kind)}
	})
}

func (e opEnv) seek(_ context.Context, r *engine.Run, f func() error) doneMsg {
	if err := f(); err != nil {
		return doneMsg{err: err}
	}
	return doneMsg{snap: takeSnapshot(r), moved: true}
}

// reconnect dials again and brings the run back to exactly the state the
// screen shows, which may differ from the engine's if a step failed midway.
func (e opEnv) reconnect(ctx context.Context, r *engine.Run) doneMsg {
	if err := r.Reconnect(ctx); err != nil {
		return doneMsg{err: err}
	}
	pos, now := e.shown.view.Pos, e.shown.view.Now
	if e.shown.sc != r.Scenario() {
		return doneMsg{snap: takeSnapshot(r), moved: true}
	}
	if r.Pos() != pos || r.Now() != now {
		evs := r.Scenario().Events
		var err error
		if (pos == 0 && now <= r.Start()) || (pos > 0 && evs[pos-1].T == now) {
			err = r.Seek(ctx, pos)
		} else {
			err = r.SeekTime(ctx, now)
		}
		if err != nil {
			return doneMsg{err: err}
		}
	}
	return doneMsg{snap: takeSnapshot(r), moved: true}
}

// open starts the named scenario on the same server with the same knobs
// and, once it is ready, closes the run it replaces.
func (e opEnv) open(ctx context.Context, name string) doneMsg {
	sc, err := scenario.Load(name)
	if err != nil {
		return doneMsg{err: err}
	}
	k := e.shown.view.Knobs
	if e.run != nil {
		k = e.run.Knobs()
	}
	nr, err := engine.Open(ctx, engine.Config{
		DSN: e.s.dsn, Scenario: sc, Knobs: k,
		Provider: e.s.provider, ServerVersion: e.s.serverVersion,
	})
	if err != nil {
		return doneMsg{err: fmt.Errorf("could not open scenario %s: %w", name, err)}
	}
	if !e.s.adopt(nr) {
		// The TUI is closing; nobody will show this run.
		_ = nr.Close(context.WithoutCancel(ctx))
		return doneMsg{err: errors.New("leaserace is shutting down")}
	}
	d := doneMsg{run: nr, snap: takeSnapshot(nr), moved: true}
	if e.run != nil && e.run != nr {
		if err := e.s.release(ctx, e.run); err != nil {
			d.info = err.Error()
		}
	}
	return d
}

// lostServer reports whether err means PostgreSQL went away rather than a
// statement failing: the cue to offer R.
func lostServer(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 57 is "operator intervention": shutdown, terminated backend.
		return strings.HasPrefix(pgErr.Code, "57") || strings.HasPrefix(pgErr.Code, "08")
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	switch {
	case errors.As(err, &connErr), errors.As(err, &netErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	// The resource reports its store's failures over HTTP, as text.
	msg := err.Error()
	for _, s := range []string{"conn closed", "connection refused", "connection reset", "SQLSTATE 57", "SQLSTATE 08", "broken pipe"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
