package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/tui/screen"
	"github.com/leaserace/leaserace/tui/text"
)

// asReplay turns a model whose run is a replay into replay mode:
// the REPLAY banner, no reconnect key, and the session keys when the
// recording on show first holds a presenter's session. offline is why no
// PostgreSQL could start, "" when the presenter asked for a replay.
func (m Model) asReplay(offline string) Model {
	ri := &screen.Replay{Offline: offline}
	if recs := m.run.Recordings(); len(recs) > 0 {
		ri.Walk = recs[0].Transcript.Presenter
	}
	m.Replay, m.home, m.walkWant = ri, m.run, 0
	m.WithKeys(m.Keys.Replay(len(ri.Walk) > 0))
	if recs := m.run.Recordings(); len(recs) > 0 {
		if st := recs[0].Transcript.PlayedSummary(); st != "" {
			m.Status = []text.Span{text.Plain(st + " · → steps through the moves played")}
		}
	}
	return m
}

// walkKey asks for the next (or previous) entry of the recorded session.
// Entries are states the presenter's screen showed, in order: walking one
// switches scenario and knobs if it must and goes to its time.
func (m Model) walkKey(forward bool) (tea.Model, tea.Cmd) {
	if m.Replay == nil || len(m.Replay.Walk) == 0 {
		return m, nil
	}
	n := len(m.Replay.Walk)
	target := m.walkWant - 1
	if forward {
		target = m.walkWant + 1
	}
	switch {
	case target < 1:
		m.Status = []text.Span{text.Plain("At the session's first action: ] walks forward.")}
		return m, nil
	case target > n:
		m.Status = []text.Span{text.Plain(fmt.Sprintf("That was the session's last action (%d of %d): [ walks back.", n, n))}
		return m, nil
	}
	m.walkWant = target
	m.Playing = false
	return m.enqueue(walkSession{index: target, to: m.Replay.Walk[target-1]})
}

// OfflineReason is why no PostgreSQL could start, in one line for the
// banner: each provider an auto start tried and why it failed, or the
// first line of any other error.
func OfflineReason(err error) string {
	var ns *pgserver.NoServerError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ns):
		return ns.Reason()
	}
	first, _, _ := strings.Cut(strings.TrimSpace(err.Error()), "\n")
	return first
}

// walkSession shows entry index (1-based) of a recorded session, to: its
// scenario, its knobs and its time. What the recordings cannot show (a
// setting with no recording, a step past a recording's end) is said on
// the status line, and the walk goes on from the nearest state they can.
type walkSession struct {
	index int
	to    transcript.PresenterEntry
}

func (walkSession) String() string { return "session walk" }

func (o walkSession) run(ctx context.Context, m Model) outcome {
	en, r := o.to, m.run
	var notes []string
	var opened *engine.Run
	if en.Scenario != "" && en.Scenario != r.Scenario().Name {
		nr, info, err := m.openRecorded(ctx, en.Scenario, en.Knobs)
		if err != nil {
			info := fmt.Sprintf("no recording of scenario %s to show", en.Scenario)
			return outcome{snap: screen.SnapshotOf(r), info: info, apply: o.shown(info, nil)}
		}
		r, opened = nr, nr
		if info != "" {
			notes = append(notes, info)
		}
	}
	var change *engine.Change
	if r.Knobs() != en.Knobs {
		ch, err := r.SetKnobs(ctx, en.Knobs)
		if err != nil {
			notes = append(notes, fmt.Sprintf("no recording with %s here, so %s", en.Knobs, r.Knobs()))
		} else {
			change = &ch
		}
	}
	if err := r.SeekView(ctx, en.Pos, en.T); err != nil {
		return failed(err)
	}
	if r.Pos() < en.Pos {
		notes = append(notes, fmt.Sprintf("the recording ends at event %d", r.Pos()))
	}
	info := strings.Join(notes, "; ")
	return outcome{run: opened, snap: screen.SnapshotOf(r), moved: true, info: info, apply: o.shown(info, func(m *Model) {
		// Walking a recorded session is, for the new session, a jump.
		if change != nil {
			m.logEntry(transcript.PresenterToggle, change)
		} else {
			m.logEntry(transcript.PresenterSeek, nil)
		}
	})}
}

// shown marks the walk's entry as the one on screen, says so with info,
// and logs it with logged, when set.
func (o walkSession) shown(info string, logged func(*Model)) func(*Model) tea.Cmd {
	return func(m *Model) tea.Cmd {
		if logged != nil {
			logged(m)
		}
		ri := *m.Replay
		ri.WalkAt = o.index
		m.Replay = &ri
		m.Status = m.WalkStatus(info)
		return nil
	}
}
