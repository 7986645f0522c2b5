package tui

import (
	"context"
	"errors"
	"fmt"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/search"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/export"
	"github.com/leaserace/leaserace/tui/screen"
	"github.com/leaserace/leaserace/tui/text"
)

// The ops a key only queues, and the keys that queue them. Ops that need
// more than a key press (a chosen scenario, a map cell, a move, the
// presenter's lead, a session entry) live beside what chooses them.

// keyOp is a key that only queues an op.
type keyOp struct {
	key key.Binding
	op  op
}

// keyOps lists the keys that only queue an op, with the op each queues.
func (m Model) keyOps() []keyOp {
	k := m.Keys
	return []keyOp{
		{k.Next, stepNext{}},
		{k.Prev, stepBack{}},
		{k.TickNext, tickForward{}},
		{k.TickPrev, tickBack{}},
		{k.Start, toStart{}},
		{k.End, toEnd{}},
		{k.Renewal, toggleRenewal{}},
		{k.Fencing, cycleFencing{}},
		{k.Export, exportRun{}},
	}
}

// stepNext runs the next event of the log.
type stepNext struct{}

func (stepNext) String() string { return "next" }

func (stepNext) moveOn(s screen.Snapshot) (scenario.Move, bool) {
	if pos := s.View.Pos; pos < len(s.Log) {
		return s.Log[pos], true
	}
	return scenario.Move{}, false
}

func (stepNext) run(ctx context.Context, m Model) outcome {
	r := m.run
	st, err := r.Next(ctx)
	if errors.Is(err, engine.ErrEnd) {
		return outcome{snap: screen.SnapshotOf(r), info: "That was the last event: G jumps to the end of the window, g back to the start.",
			apply: func(m *Model) tea.Cmd { m.Playing = false; return nil }}
	}
	if err != nil {
		return failed(err)
	}
	return outcome{snap: screen.SnapshotOf(r), moved: true, apply: func(m *Model) tea.Cmd {
		m.logEntry(transcript.PresenterStep, nil).Step = &st
		return m.answer(&st)
	}}
}

// stepBack goes back one event, or to the last event when the cursor was
// ticked past it.
type stepBack struct{}

func (stepBack) String() string { return "previous" }

func (stepBack) run(ctx context.Context, m Model) outcome {
	r := m.run
	pos, now := r.Pos(), r.Now()
	target := pos - 1
	switch {
	case pos == 0 && now <= r.Start():
		return outcome{snap: screen.SnapshotOf(r), info: "Already at the start: → runs the first event."}
	case pos == 0:
		target = 0
	case now > r.Log()[pos-1].T:
		// The cursor was ticked past the last event: go back to it.
		target = pos
	}
	return seek(r, r.Seek(ctx, target), transcript.PresenterBack)
}

// tickForward moves the cursor one tick later.
type tickForward struct{}

func (tickForward) String() string { return "tick forward" }

func (tickForward) run(ctx context.Context, m Model) outcome {
	r := m.run
	if r.Now() >= r.End() && r.Pos() >= r.Len() {
		return outcome{snap: screen.SnapshotOf(r), info: "At the end of the window."}
	}
	return seek(r, r.SeekTime(ctx, r.Now()+1), transcript.PresenterSeek)
}

// tickBack moves the cursor one tick earlier.
type tickBack struct{}

func (tickBack) String() string { return "tick back" }

func (tickBack) run(ctx context.Context, m Model) outcome {
	r := m.run
	now := r.Now()
	if now <= r.Start() {
		return outcome{snap: screen.SnapshotOf(r), info: "Already at the start of the window."}
	}
	return seek(r, r.SeekTime(ctx, now-1), transcript.PresenterSeek)
}

// toStart goes to the start of the window.
type toStart struct{}

func (toStart) String() string { return "start" }

func (toStart) run(ctx context.Context, m Model) outcome {
	return seek(m.run, m.run.Seek(ctx, 0), transcript.PresenterSeek)
}

// toEnd goes to the end of the window.
type toEnd struct{}

func (toEnd) String() string { return "end" }

func (toEnd) run(ctx context.Context, m Model) outcome {
	return seek(m.run, m.run.SeekTime(ctx, m.run.End()), transcript.PresenterSeek)
}

// seek is the outcome of moving r's cursor (err is the move's error),
// logged in the session as kind.
func seek(r *engine.Run, err error, kind string) outcome {
	if err != nil {
		return failed(err)
	}
	return outcome{snap: screen.SnapshotOf(r), moved: true, apply: func(m *Model) tea.Cmd {
		m.logEntry(kind, nil)
		return nil
	}}
}

// toggleRenewal switches the renewal knob between blind and compare.
type toggleRenewal struct{}

func (toggleRenewal) String() string { return "renewal toggle" }

func (toggleRenewal) run(ctx context.Context, m Model) outcome {
	return setKnobs(ctx, m.run, func(k *scenario.Knobs) { k.Renewal = k.Renewal.Toggle() })
}

// cycleFencing moves the fencing knob on: off, strict, monotonic.
type cycleFencing struct{}

func (cycleFencing) String() string { return "fencing cycle" }

func (cycleFencing) run(ctx context.Context, m Model) outcome {
	return setKnobs(ctx, m.run, func(k *scenario.Knobs) { k.Fencing = k.Fencing.Next() })
}

// setKnobs replays r under its knobs as change leaves them and says what
// changed.
func setKnobs(ctx context.Context, r *engine.Run, change func(*scenario.Knobs)) outcome {
	k := r.Knobs()
	change(&k)
	ch, err := r.SetKnobs(ctx, k)
	if err != nil {
		return failed(err)
	}
	return outcome{snap: screen.SnapshotOf(r), moved: true, apply: func(m *Model) tea.Cmd {
		m.Status = m.ChangeStatus(&ch)
		m.logEntry(transcript.PresenterToggle, &ch)
		return nil
	}}
}

// reconnect dials again and brings the run back to exactly the state the
// screen shows, which may differ from the engine's if a step failed
// midway. R queues it after dropping what was queued.
type reconnect struct{}

func (reconnect) String() string { return "reconnect" }

func (reconnect) run(ctx context.Context, m Model) outcome {
	r := m.run
	if err := r.Reconnect(ctx); err != nil {
		return failed(err)
	}
	pos, now := m.Snap.View.Pos, m.Snap.View.Now
	if m.Snap.Scenario == r.Scenario() && (r.Pos() != pos || r.Now() != now) {
		if err := r.SeekView(ctx, pos, now); err != nil {
			return failed(err)
		}
	}
	return outcome{snap: screen.SnapshotOf(r), moved: true, apply: func(m *Model) tea.Cmd {
		m.Status = []text.Span{text.Styled(&m.Styles.Good, "✓ reconnected"), text.Plain(fmt.Sprintf(" and replayed to t=%d", m.Snap.View.Now))}
		return nil
	}}
}

// exportRun writes the run on screen, with the presenter's session log
// and the questions' tally, in every format into the export directory. A
// played run also gets its goals against par and those the session
// reached under other settings; the status line says which run the files
// hold.
type exportRun struct{}

func (exportRun) String() string { return "export" }

func (exportRun) run(ctx context.Context, m Model) outcome {
	tr, err := m.run.Transcript()
	if err != nil {
		return failed(fmt.Errorf("could not build the transcript: %w", err))
	}
	s := export.Session{Presenter: m.log, Asks: m.Tally, Playing: m.Play.On, Reached: m.reached, Par: m.withPar}
	paths, info, err := s.Write(ctx, tr, m.run.Scenario(), m.exportDir, m.now(), m.NoColor())
	if err != nil {
		return failed(err)
	}
	return outcome{snap: screen.SnapshotOf(m.run), info: info, apply: func(m *Model) tea.Cmd {
		// Which run the files hold comes first: the paths may not fit.
		what := export.ShortPaths(paths)
		if info != "" {
			what = info + " · " + what
		}
		m.Status = []text.Span{text.Styled(&m.Styles.Good, "✓ exported"), text.Plain(" " + what)}
		return nil
	}}
}

// withPar adds par to goal records of one setting from the session's
// schedule search, waiting for one under way; without a search, or when
// it fails, the records go without par.
func (m Model) withPar(ctx context.Context, sc *scenario.Scenario, recs []transcript.GoalRecord) []transcript.GoalRecord {
	o := m.s.searched()
	if o == nil || len(recs) == 0 {
		return recs
	}
	res, err := o.Search(ctx, sc, recs[0].Knobs, nil)
	if err != nil {
		return recs
	}
	return search.WithPar(res, recs)
}
