// Package tui is leaserace's terminal UI: the lease-renewal race stepped
// one event at a time against a real PostgreSQL server, with the
// coordinator row, the heartbeats in flight and the protected resource side
// by side, and the knobs toggled live.
package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/styles"
	"github.com/muesli/termenv"
)

// Options configure Run.
type Options struct {
	// Provider is started inside the TUI behind a spinner naming it and
	// showing its progress lines.
	Provider engine.Provider
	// Scenario is a built-in name or a file path ("" = renewal-race).
	Scenario string
	// Knobs are the starting knobs; empty fields mean blind / off.
	Knobs scenario.Knobs
	// At opens the run positioned at t with every event up to t executed.
	At *int64
	// ExportDir is where e writes files ("" = current directory).
	ExportDir string
	NoColor   bool
	In        io.Reader // nil = stdin
	Out       io.Writer // nil = stdout
}

// closeTimeout bounds cleanup after the TUI ends: dropping schemas and
// stopping a server the TUI started.
const closeTimeout = 30 * time.Second

// Run starts PostgreSQL with the provider, opens the scenario and runs the
// TUI until the presenter quits or ctx is cancelled. Before it returns it
// closes every run and server it started, whatever the reason it ends. A
// cancelled ctx returns an error wrapping the context's error.
func Run(ctx context.Context, o Options) (err error) {
	if o.Provider == nil {
		return errors.New("no PostgreSQL provider to start")
	}
	sc, err := scenario.Load(o.Scenario)
	if err != nil {
		return err
	}
	k := o.Knobs
	if k.Renewal == "" {
		k.Renewal = scenario.RenewalBlind
	}
	if k.Fencing == "" {
		k.Fencing = scenario.FencingOff
	}
	if _, err := scenario.ParseRenewal(string(k.Renewal)); err != nil {
		return err
	}
	if _, err := scenario.ParseFencing(string(k.Fencing)); err != nil {
		return err
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
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		if cerr := m.s.Close(cctx); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	m.boot = newBoot(m.st, o.Provider.Name())
	progress := newProgress()
	m.boot.listen = progress.listen
	m.startup = m.bootCmd(o.Provider, progress, sc, k, o.At)

	opts := []tea.ProgramOption{tea.WithOutput(out), tea.WithAltScreen(), tea.WithContext(ctx)}
	if o.In != nil {
		opts = append(opts, tea.WithInput(o.In))
	}
	p := tea.NewProgram(m, opts...)
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

// bootCmd starts the server, opens the scenario and positions it.
func (m Model) bootCmd(pv engine.Provider, pr *progress, sc *scenario.Scenario, k scenario.Knobs, at *int64) tea.Cmd {
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
		srv, err := pv.Start(s.ctx, pr.report)
		if err != nil {
			return readyMsg{err: fmt.Errorf("could not start PostgreSQL with the %s provider: %w", pv.Name(), err)}
		}
		if !s.adoptServer(srv) {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), closeTimeout)
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
		return readyMsg{run: run, snap: takeSnapshot(run)}
	}
}
