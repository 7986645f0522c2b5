package tui

import (
	"errors"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine/pgserver"
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
	m.Keys = m.Keys.Replay(len(ri.Walk) > 0)
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
	return m.enqueue(op{kind: opWalk, index: target})
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
