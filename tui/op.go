package tui

import (
	"context"
	"fmt"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/tui/screen"
	"github.com/leaserace/leaserace/tui/text"
)

// opTimeout bounds one engine call. A local step takes milliseconds; this
// is only there so a server that stopped answering cannot hang a command.
const opTimeout = 30 * time.Second

// op is one thing the presenter asked the engine to do. Each is a type of
// its own (stepNext, toggleRenewal, openScenario, …), carrying what it
// needs to know: ops.go holds those a key only queues, and
// docs/adding-a-key.md shows how one is added.
type op interface {
	// String names the op on the busy line and in a panic's error.
	String() string
	// run does the op, off Update's loop, with m a copy of the model as
	// it was when the op started; it reads m and changes nothing in it.
	// What it returns Update applies (finish).
	run(ctx context.Context, m Model) outcome
}

// outcome is what an op reports back to Update: the one message every op
// ends with.
type outcome struct {
	// run is set when the op put another run on screen.
	run *engine.Run
	// snap is the run's state after the op; zero leaves the one shown.
	snap screen.Snapshot
	// moved is false when the op left the run where it was (at the start
	// already, past the last event); the room only hears of moves.
	moved bool
	// info goes on the status line, unless apply says more.
	info string
	err  error
	// apply does, on Update's loop, what only this op knows once the
	// common part is applied: its status line, its entry in the session
	// log, the answer to a question. It is not called when err is set.
	apply func(m *Model) tea.Cmd
}

// failed is the outcome of an op that could not be done.
func failed(err error) outcome { return outcome{err: err} }

// exec starts o as a Bubble Tea command. The model is busy with o until
// its outcome is back. The command gets a copy of the model as it is now,
// its own deadline, is registered with the session so Close waits for it,
// and a panic inside the engine becomes an error shown in place instead of
// a crash.
func (m Model) exec(o op) (Model, tea.Cmd) {
	m.Running, m.busyOp = o.String(), o
	shown := m
	// The copy's slices are its own: Update appends to the model's.
	shown.log, shown.reached = slices.Clone(m.log), slices.Clone(m.reached)
	s := m.s
	return m, func() (msg tea.Msg) {
		if !s.begin() {
			return nil
		}
		defer s.end()
		ctx, cancel := context.WithTimeout(s.ctx, opTimeout)
		defer cancel()
		var err error
		defer func() {
			if err != nil {
				msg = failed(fmt.Errorf("during %s: %w", o, err))
			}
		}()
		defer engine.CatchPanic(&err)
		return o.run(ctx, shown)
	}
}

// finish applies an op's outcome and starts the next queued op.
func (m Model) finish(d outcome) (tea.Model, tea.Cmd) {
	m.Running, m.busyOp = "", nil
	if d.run != nil {
		// The run the op put on screen, even one opened before a failure.
		m.run = d.run
		m.Psql = psqlOf(d.run, m.s.provider)
	}
	if d.err != nil {
		if d.run != nil && d.snap.Scenario != nil {
			m.Snap = d.snap
		}
		m.Failure, m.FailedPart = d.err, failedPart(d.err)
		m.queue = nil
		m.Playing = false
		if m.Replay != nil {
			// Queued walks were dropped: the walk resumes from what is shown.
			m.walkWant = m.Replay.WalkAt
		}
		return m, nil
	}
	if d.snap.Scenario != nil {
		if !sameMenu(m.Snap, d.snap) {
			// Another list: the cursor goes back to the top, so enter
			// never plays a move nobody aimed at.
			m.Play.At = 0
		}
		m.Snap = d.snap
	}
	m.Failure = nil
	m.Status = nil
	if d.info != "" {
		m.Status = []text.Span{text.Plain(d.info)}
	}
	if d.moved {
		m.noteReached()
	}
	var cmds []tea.Cmd
	if d.apply != nil {
		cmds = append(cmds, d.apply(&m))
	}
	if d.moved {
		cmds = append(cmds, m.afterMove())
	}
	if m.Play.At >= len(m.Snap.Options) {
		m.Play.At = max(0, len(m.Snap.Options)-1)
	}
	var search tea.Cmd
	m, search = m.searchGoals()
	cmds = append(cmds, search)
	if len(m.queue) > 0 {
		next := m.queue[0]
		m.queue = m.queue[1:]
		nm, cmd := m.start(next)
		return nm, tea.Batch(append(cmds, cmd)...)
	}
	return m, tea.Batch(cmds...)
}

// enqueue starts o now, or after the running op when busy, so fast key
// presses are all honoured in order and Update never waits.
func (m Model) enqueue(o op) (tea.Model, tea.Cmd) {
	if m.Busy() {
		if len(m.queue) < maxQueue {
			m.queue = append(m.queue, o)
		}
		return m, nil
	}
	return m.start(o)
}

// start runs o, unless the move it would make asks a question first.
func (m Model) start(o op) (Model, tea.Cmd) {
	if m.Ask != nil && m.Ask.Fact != "" {
		m.Ask = nil // the last answer was shown; the next step moves on
	}
	if held, ok := m.askBefore(o); ok {
		return held, nil
	}
	return m.exec(o)
}

// busyWith reports whether an op like o (of its type) is running or
// queued.
func busyWith[T op](m Model) bool {
	if _, ok := m.busyOp.(T); ok && m.Busy() {
		return true
	}
	for _, o := range m.queue {
		if _, ok := o.(T); ok {
			return true
		}
	}
	return false
}

// logEntry adds what the presenter just did to the session log, as the
// screen now shows it; change, when set, is what the op changed.
func (m *Model) logEntry(kind string, change *engine.Change) *transcript.PresenterEntry {
	e := m.entry(kind)
	if change != nil {
		e.Change = slices.Clone(change.Lines)
	}
	m.log = append(m.log, e)
	return &m.log[len(m.log)-1]
}
