package workshop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui"
)

// PresentConfig says which room the presenter leads and where their TUI
// runs.
type PresentConfig struct {
	// DSN reaches the room's PostgreSQL. Required.
	DSN string
	// Room is the room to lead (DefaultRoom if empty).
	Room string
	// Server names the presenter's process in the room; default
	// "present HOST:PID".
	Server string
	// Scenario (a built-in name or a file; DefaultScenario if empty) and
	// Knobs are where the presenter starts.
	Scenario string
	Knobs    scenario.Knobs
	// NoColor turns colour off; NoAsk skips the questions at pivotal steps.
	NoColor, NoAsk bool
	// In, Out and Stderr are the presenter's terminal; nil means the
	// process's own.
	In          io.Reader
	Out, Stderr io.Writer
}

// roomReadTimeout bounds one read of the room's board.
const roomReadTimeout = 5 * time.Second

// Present runs the presenter's TUI until they quit or ctx ends: every move
// they make is the lead the room's attendees follow, and the board (b)
// shows the room as it changes. It returns what tui.Run returns.
func Present(ctx context.Context, cfg PresentConfig) (err error) {
	if cfg.DSN == "" {
		return errors.New("no PostgreSQL to find the room on: the DSN is empty")
	}
	if cfg.Room == "" {
		cfg.Room = DefaultRoom
	}
	if cfg.Scenario == "" {
		cfg.Scenario = DefaultScenario
	}
	if cfg.Server == "" {
		hostname, _ := os.Hostname()
		cfg.Server = fmt.Sprintf("present %s:%d", hostname, os.Getpid())
	}
	store, err := room.Open(ctx, cfg.DSN, cfg.Room, cfg.Server, room.Options{})
	if err != nil {
		return fmt.Errorf("cannot open room %s: %w", cfg.Room, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if cerr := store.Close(cctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("could not leave room %s cleanly: %w", cfg.Room, cerr))
		}
	}()
	// Everything the room says to the presenter's program goes through
	// its inbox: a board under tui.BoardKey, where a newer one replaces
	// one the program has not taken yet, and the queue's notices, kept. A
	// board the room cannot give at once is read again, later: the board
	// lags, it never goes blank.
	inbox := tui.NewInbox()
	defer inbox.Close()
	post := func() {
		for retry := minRetry; ; retry = min(2*retry, maxRetry) {
			bctx, cancel := context.WithTimeout(ctx, roomReadTimeout)
			b, err := store.Board(bctx)
			cancel()
			if err == nil {
				inbox.Put(tui.BoardKey, tui.BoardMsg(b))
				return
			}
			if errors.Is(err, room.ErrEnded) || errors.Is(err, room.ErrClosed) {
				return
			}
			t := time.NewTimer(retry)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
	stop := store.Subscribe(func(ev room.Event) {
		if ev.Kind == room.BoardChanged || ev.Kind == room.Reconnected {
			post()
		}
	})
	defer stop()
	go post()
	// The presenter's leads go through a queue, as attendees' reports do:
	// a busy room takes them late, never drops them. Its notices reach
	// the program through the inbox.
	leads := newReports(store, func(msg tea.Msg) { inbox.Push(msg) }, nil)
	defer leads.stop()
	prov := pgserver.DSNProvider{DSN: cfg.DSN}
	return tui.Run(ctx, tui.Options{
		Start: prov.Start, ProviderName: prov.Name(), Scenario: cfg.Scenario, Knobs: cfg.Knobs,
		NoColor: cfg.NoColor, NoAsk: cfg.NoAsk, In: cfg.In, Out: cfg.Out, Stderr: cfg.Stderr,
		Room: leads, Presenter: true, Inbox: inbox,
	})
}
