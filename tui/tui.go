// Package tui is leaserace's terminal UI: the lease-renewal race stepped
// one event at a time against a real PostgreSQL server, with the
// coordinator row, the heartbeats in flight and the protected resource side
// by side, and the knobs toggled live. The same screen replays recorded
// transcripts without a database (engine.NewReplay, under a REPLAY banner).
//
// This package is the Bubble Tea model: it turns keys into ops (op.go,
// ops.go: one type per thing asked of the engine), runs them off the event
// loop and applies their outcomes, and owns the runs they open. What a
// frame shows is a screen.Screen, drawn by tui/screen; the asciicast and
// the export files are tui/export's, the explore map tui/exploremap's.
package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/screen"
	"github.com/leaserace/leaserace/tui/styles"
	"github.com/muesli/termenv"
)

// Options configure Run.
type Options struct {
	// Start starts (or finds) the PostgreSQL server of a live run. The
	// TUI calls it behind a spinner naming ProviderName and showing its
	// progress lines, and closes the server it returns on the way out.
	Start func(ctx context.Context, progress func(string)) (*pgserver.Server, error)
	// ProviderName names what Start starts (auto, container, local, dsn)
	// on the boot screen and in its error.
	ProviderName string
	// Replay, when set, is shown instead of a live run: no server, no
	// database, and a REPLAY banner naming where and when it was recorded.
	// Scenario and Knobs are then ignored; At still positions it.
	Replay *engine.Run
	// Fallback shows the shipped recordings of the scenario, with the
	// banner and the reason, when the provider cannot start, instead of
	// ending with the provider's error.
	Fallback bool
	// Scenario is a built-in name or a file path ("" = renewal-race).
	Scenario string
	// Knobs are the starting knobs; empty fields mean blind / off.
	Knobs scenario.Knobs
	// At opens the run positioned at t with every event up to t executed.
	At *int64
	// ExportDir is where e writes files ("" = current directory).
	ExportDir string
	NoColor   bool
	// Play opens in play mode; NoAsk skips the questions.
	Play  bool
	NoAsk bool
	// Room, with Presenter, makes this TUI the presenter of a workshop
	// room: every move sets the lead attendees follow. Inbox carries what
	// the room says back (a BoardMsg, a RoomNoticeMsg) into the program.
	Room      Room
	Presenter bool
	Inbox     *Inbox
	In        io.Reader // nil = stdin
	Out       io.Writer // nil = stdout
	// Stderr gets a psql command line for the run on screen each time a
	// live run opens (at start, after a scenario switch); nil = stderr.
	Stderr io.Writer
}

// Run starts PostgreSQL with the provider, opens the scenario and runs the
// TUI until the presenter quits or ctx is cancelled; with o.Replay it shows
// that replay instead and touches no database. Before it returns it closes
// every run and server it started, whatever the reason it ends. A
// cancelled ctx returns an error wrapping the context's error.
func Run(ctx context.Context, o Options) (err error) {
	var sc *scenario.Scenario
	var k scenario.Knobs
	if o.Replay == nil {
		if o.Start == nil {
			return errors.New("no PostgreSQL provider to start")
		}
		if sc, k, err = checkStart(o); err != nil {
			return err
		}
	}
	out := o.Out
	if out == nil {
		out = os.Stdout
	}
	r := styles.NewRenderer(out, o.NoColor)
	if r.ColorProfile() == termenv.Ascii {
		// No colour: nothing to adapt, so do not ask the terminal.
		r.SetHasDarkBackground(true)
	} else {
		// Ask the terminal for its background now, before Bubble Tea owns
		// the input; the answer is cached for AdaptiveColor.
		r.HasDarkBackground()
	}

	m := newModel(ctx, r, o.ExportDir, nil)
	m.noAsk, m.startPlay = o.NoAsk, o.Play
	if o.Room != nil {
		m = m.inRoom(o.Room, room.Seat{}, o.Presenter, false)
	}
	m.stderr = o.Stderr
	if m.stderr == nil {
		m.stderr = os.Stderr
	}
	if f, ok := m.stderr.(*os.File); ok && term.IsTerminal(f.Fd()) {
		// Written over the alternate screen it would garble the frame.
		m.stderrTTY = true
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engine.CloseTimeout)
		defer cancel()
		if cerr := m.s.Close(cctx); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	if o.Replay != nil {
		if m, err = m.openReplay(o.Replay, o.At); err != nil {
			return err
		}
	} else {
		m.Boot = screen.NewBoot(m.Styles, o.ProviderName)
		progress := newProgress()
		m.bootListen = progress.listen
		m.startup = m.bootCmd(o.Start, o.ProviderName, progress, sc, k, o.At, o.Fallback)
	}

	opts := []tea.ProgramOption{tea.WithOutput(out), tea.WithAltScreen(), tea.WithContext(ctx)}
	if o.In != nil {
		opts = append(opts, tea.WithInput(o.In))
	}
	p := tea.NewProgram(m, opts...)
	if o.Inbox != nil {
		stop := make(chan struct{})
		defer close(stop)
		go o.Inbox.Deliver(stop, func(msg tea.Msg) { p.Send(msg) })
	}
	final, runErr := p.Run()
	if fm, ok := final.(Model); ok && fm.bootErr != nil {
		return fm.bootErr
	}
	switch {
	case runErr == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("leaserace was stopped: %w", context.Cause(ctx))
	default:
		return fmt.Errorf("the terminal UI failed: %w", runErr)
	}
}

// progress carries the provider's progress lines to the boot screen. The
// provider may report from any goroutine; after done, lines are dropped.
type progress struct {
	mu     sync.Mutex
	closed bool
	ch     chan string
}

func newProgress() *progress { return &progress{ch: make(chan string, 64)} }

func (p *progress) report(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	select {
	case p.ch <- line:
	default: // the screen shows the last few lines anyway
	}
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.ch)
	}
}

// listen waits for the next line; the boot screen asks again after each.
func (p *progress) listen() tea.Msg {
	line, ok := <-p.ch
	return progressMsg{line: line, ok: ok}
}

// checkStart loads the scenario and checks the knobs before anything starts.
func checkStart(o Options) (*scenario.Scenario, scenario.Knobs, error) {
	k := o.Knobs
	sc, err := scenario.Load(o.Scenario)
	if err != nil {
		return nil, k, err
	}
	if k.Renewal == "" {
		k.Renewal = scenario.RenewalBlind
	}
	if k.Fencing == "" {
		k.Fencing = scenario.FencingOff
	}
	if _, err := scenario.ParseRenewal(string(k.Renewal)); err != nil {
		return nil, k, err
	}
	if _, err := scenario.ParseFencing(string(k.Fencing)); err != nil {
		return nil, k, err
	}
	return sc, k, nil
}

// openReplay makes the model show rp from the start, or at t=*at.
func (m Model) openReplay(rp *engine.Run, at *int64) (Model, error) {
	if !m.s.adopt(rp) {
		return m, errors.New("the session is already closed")
	}
	if at != nil {
		if err := rp.SeekTime(m.s.ctx, *at); err != nil {
			return m, err
		}
	}
	m.run, m.Snap, m.Phase = rp, screen.SnapshotOf(rp), screen.PhaseReady
	m.Psql = psqlOf(rp, "")
	m = m.asReplay("")
	m.log = append(m.log, m.entry(transcript.PresenterScenario))
	return m, nil
}

// fallback is the shipped recordings of sc with knobs k, positioned at
// *at, for when no PostgreSQL could start (startErr says why).
func fallback(ctx context.Context, sc *scenario.Scenario, k scenario.Knobs, at *int64, startErr error) readyMsg {
	rp, err := engine.ShippedReplay(sc.Name, k)
	if err == nil && sc.Source != "builtin" {
		// A scenario file that shares a built-in's name is not that one.
		err = fmt.Errorf("%s is a scenario file, and recorded runs ship only for the built-in scenarios", sc.Source)
	}
	if err != nil {
		return readyMsg{err: fmt.Errorf("%w\nand no recorded run can be shown instead: %w", startErr, err)}
	}
	if at != nil {
		if err := rp.SeekTime(ctx, *at); err != nil {
			return readyMsg{err: err}
		}
	}
	return readyMsg{run: rp, snap: screen.SnapshotOf(rp), offline: OfflineReason(startErr)}
}

// bootCmd starts the server, opens the scenario and positions it; with
// fallback, a server that cannot start gives way to the shipped recordings.
func (m Model) bootCmd(start func(context.Context, func(string)) (*pgserver.Server, error), name string, pr *progress, sc *scenario.Scenario, k scenario.Knobs, at *int64, fallBack bool) tea.Cmd {
	s := m.s
	return func() (msg tea.Msg) {
		defer pr.done()
		if !s.begin() {
			return nil
		}
		defer s.end()
		defer func() {
			if r := recover(); r != nil {
				msg = readyMsg{err: fmt.Errorf("leaserace hit a bug while starting (%v)", r)}
			}
		}()
		srv, err := start(s.ctx, pr.report)
		if err != nil {
			startErr := fmt.Errorf("could not start PostgreSQL with the %s provider: %w", name, err)
			if fallBack && s.ctx.Err() == nil {
				pr.done()
				msg := fallback(s.ctx, sc, k, at, err)
				if msg.err != nil {
					msg.err = fmt.Errorf("could not start PostgreSQL with the %s provider: %w", name, msg.err)
				} else if !s.adopt(msg.run) {
					return nil
				}
				return msg
			}
			return readyMsg{err: startErr}
		}
		if !s.adoptServer(srv) {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), engine.CloseTimeout)
			defer cancel()
			_ = srv.Close(cctx)
			return nil
		}
		pr.done()
		ctx, cancel := context.WithTimeout(s.ctx, opTimeout)
		defer cancel()
		run, err := engine.Open(ctx, engine.Config{DSN: srv.DSN, Scenario: sc, Knobs: k, Provider: srv.Provider, ServerVersion: srv.Version})
		if err != nil {
			return readyMsg{err: fmt.Errorf("could not open scenario %s on %s: %w", sc.Name, srv.Redacted(), err)}
		}
		if !s.adopt(run) {
			_ = run.Close(context.WithoutCancel(ctx))
			return nil
		}
		if at != nil {
			if err := run.SeekTime(ctx, *at); err != nil {
				return readyMsg{err: fmt.Errorf("could not run scenario %s up to t=%d: %w", sc.Name, *at, err)}
			}
		}
		return readyMsg{run: run, snap: screen.SnapshotOf(run)}
	}
}
