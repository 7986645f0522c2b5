package workshop

import (
	"sync"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/tui"
)

// seatLink is one attendee's line to the room, both ways. Leads go to
// their program's inbox (sshroom's Session.Inbox), kept in order, and a
// lead older than one already sent is dropped, so a late read at join
// time or a lead heard again after a reconnect cannot move the attendee
// back.
//
// Reports the other way go through a queue of the attendee's own
// (reports): a room too busy to take them at once makes them late, never
// lost.
type seatLink struct {
	*reports
	user string

	leadMu sync.Mutex
	inbox  *tui.Inbox
	last   int64
}

var _ tui.Room = (*seatLink)(nil)

func newSeatLink(store *room.Store, seats *seatBatcher, inbox *tui.Inbox, stats *Backlog, user string) *seatLink {
	return &seatLink{reports: newReportsVia(store, seats.Report, func(m tea.Msg) { inbox.Push(m) }, stats), inbox: inbox, user: user}
}

// lead passes a lead on to the program unless it is older than the last,
// and says whether it did.
func (l *seatLink) lead(ld room.Lead) bool {
	l.leadMu.Lock()
	defer l.leadMu.Unlock()
	if ld.Seq <= l.last {
		return false
	}
	l.last = ld.Seq
	l.inbox.Push(tui.LeadMsg(ld))
	return true
}

// forget lets the next lead through whatever its Seq: a room made again
// counts its leads from one.
func (l *seatLink) forget() {
	l.leadMu.Lock()
	l.last = 0
	l.leadMu.Unlock()
}
