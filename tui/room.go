package tui

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/internal/coalesce"
	"github.com/leaserace/leaserace/tui/outbox"
	"github.com/leaserace/leaserace/tui/screen"
	"github.com/leaserace/leaserace/tui/text"
)

// Room is the workshop room a TUI reports to: an attendee reports where
// it is, its predictions and the goals it reached; the presenter sets the
// lead everyone follows. engine/room's Store is one.
type Room interface {
	Report(ctx context.Context, s room.Seat) error
	Vote(ctx context.Context, v room.Vote) error
	Reached(ctx context.Context, seat, scenarioName, goal string, moves int) error
	SetLead(ctx context.Context, l room.Lead) (room.Lead, error)
}

// Inbox is the one way into a TUI's program from outside it: the room's
// leads, boards and notices. Push queues a message and keeps it; Put
// queues one that a newer one under the same key replaces (a board under
// BoardKey). sshroom gives every attendee's session one; Run delivers
// Options.Inbox. docs/room-path.md draws the whole path.
type Inbox = coalesce.Queue[string, tea.Msg]

// NewInbox makes an empty Inbox.
func NewInbox() *Inbox { return coalesce.New[string, tea.Msg](coalesce.Options[tea.Msg]{}) }

// BoardKey is the Inbox key of a BoardMsg: only the newest board matters.
const BoardKey = "board"

// LeadMsg tells an attendee's TUI where the presenter is now.
type LeadMsg room.Lead

// BoardMsg gives the presenter's TUI the room at a glance.
type BoardMsg room.Board

// roomLink is the rest of the TUI's part in a room: the room it reports
// to and what it remembers. It is set, and copied on change, with
// Screen.Room.
type roomLink struct {
	to   Room
	seat room.Seat
	// lead is the presenter's last known position.
	lead *room.Lead
	// reached remembers goals already reported, by scenario/goal.
	reached map[string]bool
	// out keeps seat and lead reports in the order of the moves; shared
	// by every copy of the link.
	out *outbox.Box
}

// inRoom makes the model part of a workshop room: as the presenter, or
// as the attendee in seat, following the presenter or not.
func (m Model) inRoom(to Room, seat room.Seat, presenter, following bool) Model {
	m.Room = &screen.Room{Presenter: presenter, Following: following}
	m.link = &roomLink{to: to, seat: seat, out: outbox.New()}
	m.WithKeys(m.Keys.InRoom(presenter))
	return m
}

// roomTimeout bounds one report to the room.
const roomTimeout = 5 * time.Second

// onLead takes the presenter's new position: an attendee who follows (or
// any attendee, for a push) goes there.
func (m Model) onLead(l LeadMsg) (tea.Model, tea.Cmd) {
	if m.Room == nil || m.Room.Presenter {
		return m, nil
	}
	lead := room.Lead(l)
	k := *m.link
	k.lead = &lead
	m.link = &k
	r := *m.Room
	if lead.Push {
		r.Following = true
	}
	m.Room = &r
	if !r.Following {
		return m, nil
	}
	return m.enqueue(follow{lead: lead})
}

// follow takes the run where the presenter's lead is: the scenario, the
// knobs, then the position. A lead that arrives, or F, queues it.
type follow struct{ lead room.Lead }

func (follow) String() string { return "follow" }

func (o follow) run(ctx context.Context, m Model) outcome {
	l, r := o.lead, m.run
	var opened *engine.Run
	if r.Scenario().Name != l.Scenario {
		nr, _, err := m.open(ctx, l.Scenario)
		if err != nil {
			return failed(err)
		}
		r, opened = nr, nr
	}
	if r.Knobs() != l.Knobs {
		if _, err := r.SetKnobs(ctx, l.Knobs); err != nil {
			return outcome{err: err, run: opened, snap: screen.SnapshotOf(r)}
		}
	}
	if err := r.SeekView(ctx, l.Pos, l.T); err != nil {
		return outcome{err: err, run: opened, snap: screen.SnapshotOf(r)}
	}
	return outcome{run: opened, snap: screen.SnapshotOf(r), moved: true}
}

// toggleFollow breaks away from the presenter or rejoins.
func (m Model) toggleFollow() (tea.Model, tea.Cmd) {
	if m.Room == nil || m.Room.Presenter {
		return m, nil
	}
	r := *m.Room
	r.Following = !r.Following
	m.Room = &r
	if !r.Following {
		// A follow still queued from before would move a run that is now
		// on its own; only a push may.
		m.queue = slices.DeleteFunc(slices.Clone(m.queue), func(o op) bool {
			f, ok := o.(follow)
			return ok && !f.lead.Push
		})
		m.Status = []text.Span{text.Plain("On your own: the presenter's steps no longer move your run. F rejoins.")}
		return m, m.reportSeat()
	}
	m.Status = []text.Span{text.Plain("Following the presenter again.")}
	if l := m.link.lead; l != nil {
		next, cmd := m.enqueue(follow{lead: *l})
		return next, tea.Batch(cmd, next.(Model).reportSeat())
	}
	return m, m.reportSeat()
}

// afterMove tells the room what just changed: the presenter's new lead,
// or the attendee's seat and any goal it newly reached.
func (m *Model) afterMove() tea.Cmd {
	if m.Room == nil {
		return nil
	}
	if m.Room.Presenter {
		return m.setLead(false)
	}
	cmds := []tea.Cmd{m.reportSeat()}
	for _, g := range m.Snap.Goals {
		key := m.Snap.Scenario.Name + "/" + g.Goal.ID
		if g.Reached && !m.link.reached[key] {
			k := *m.link
			k.reached = maps.Clone(k.reached)
			if k.reached == nil {
				k.reached = map[string]bool{}
			}
			k.reached[key] = true
			m.link = &k
			link, seat, sc, id, moves := m.link.to, m.link.seat.ID, m.Snap.Scenario.Name, g.Goal.ID, g.Moves
			cmds = append(cmds, m.roomCall(func(ctx context.Context) error { return link.Reached(ctx, seat, sc, id, moves) }))
		}
	}
	return tea.Batch(cmds...)
}

// setLead publishes where the presenter is; push makes every attendee go
// there, even those who broke away.
func (m Model) setLead(push bool) tea.Cmd {
	v := m.Snap.View
	l := room.Lead{Scenario: m.Snap.Scenario.Name, Knobs: v.Knobs, Pos: v.Pos, T: v.Now, Push: push}
	link, out := m.link.to, m.link.out
	out.PutLead(l)
	return m.roomCall(func(ctx context.Context) error { return out.SendLead(ctx, link) })
}

// reportSeat tells the room where this attendee's run is.
func (m Model) reportSeat() tea.Cmd {
	if m.Room == nil || m.Room.Presenter || m.Snap.Scenario == nil {
		return nil
	}
	s := m.link.seat
	v := m.Snap.View
	s.Scenario, s.Knobs, s.Pos, s.T, s.Following = m.Snap.Scenario.Name, v.Knobs, v.Pos, v.Now, m.Room.Following
	link, out := m.link.to, m.link.out
	out.PutSeat(s)
	return m.roomCall(func(ctx context.Context) error { return out.SendSeat(ctx, link) })
}

// vote tells the room the attendee's prediction.
func (m Model) vote(question, choice string) tea.Cmd {
	if m.Room == nil || m.Room.Presenter {
		return nil
	}
	v := room.Vote{Seat: m.link.seat.ID, Question: question, Choice: choice}
	link := m.link.to
	return m.roomCall(func(ctx context.Context) error { return link.Vote(ctx, v) })
}

// RoomNoticeMsg says how the TUI's reports fare when the room cannot take
// them at once (a queue in front of the room retries them): Waiting is how
// long the oldest has waited, still being retried, and Err the last try's
// failure; Lost is a report the room refused for good (the seat is gone,
// the room ended). The zero value says every report got through again.
type RoomNoticeMsg struct {
	Waiting time.Duration
	Err     error
	Lost    bool
}

// onRoomNotice puts a RoomNoticeMsg on the status line.
func (m Model) onRoomNotice(n RoomNoticeMsg) Model {
	switch {
	case n.Lost:
		return m.onRoomErr(roomErrMsg{err: n.Err})
	case n.Waiting > 0:
		m.Status = []text.Span{
			text.Styled(&m.Styles.Warn, fmt.Sprintf("⚠ the room has not taken your reports for %s; still retrying, nothing is lost", n.Waiting.Round(time.Second))),
		}
		if n.Err != nil {
			m.Status = append(m.Status, text.Plain(": "+n.Err.Error()))
		}
	default:
		m.Status = []text.Span{text.Plain("The room took your reports again.")}
	}
	return m
}

func (m Model) onRoomErr(msg roomErrMsg) Model {
	m.Status = []text.Span{text.Styled(&m.Styles.Warn, "⚠ the room did not take the last report: "), text.Plain(msg.err.Error())}
	return m
}

// roomErrMsg is a report the room did not take.
type roomErrMsg struct{ err error }

// roomCall runs a report in the background with its own deadline; a
// failure is said on the status line and changes nothing else.
func (m Model) roomCall(f func(ctx context.Context) error) tea.Cmd {
	s := m.s
	return func() tea.Msg {
		if !s.begin() {
			return nil
		}
		defer s.end()
		ctx, cancel := context.WithTimeout(s.ctx, roomTimeout)
		defer cancel()
		if err := f(ctx); err != nil {
			return roomErrMsg{err: err}
		}
		return nil
	}
}

// questionKey names a question on the board: the scenario, its time and
// its text.
func questionKey(scenarioName string, t int64, q string) string {
	return fmt.Sprintf("%s@%d: %s", scenarioName, t, q)
}
