package workshop

import (
	"context"
	"sync"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/tui"
)

// seatLink is one attendee's line to the room, both ways. Leads go to
// their program in order, and a lead older than one already sent is
// dropped, so a late read at join time or a lead heard again after a
// reconnect cannot move the attendee back.
type seatLink struct {
	store *room.Store

	leadMu sync.Mutex
	send   func(tea.Msg)
	last   int64
}

var _ tui.Room = (*seatLink)(nil)

func newSeatLink(store *room.Store, send func(tea.Msg)) *seatLink {
	return &seatLink{store: store, send: send}
}

// lead passes a lead on to the program unless it is older than the last.
func (l *seatLink) lead(ld room.Lead) {
	l.leadMu.Lock()
	defer l.leadMu.Unlock()
	if ld.Seq <= l.last {
		return
	}
	l.last = ld.Seq
	l.send(tui.LeadMsg(ld))
}

// forget lets the next lead through whatever its Seq: a room made again
// counts its leads from one.
func (l *seatLink) forget() {
	l.leadMu.Lock()
	l.last = 0
	l.leadMu.Unlock()
}

// Report writes where the attendee is. The TUI sends its reports one at a
// time, the newest only, in the order of its moves.
func (l *seatLink) Report(ctx context.Context, s room.Seat) error { return l.store.Report(ctx, s) }

func (l *seatLink) Vote(ctx context.Context, v room.Vote) error { return l.store.Vote(ctx, v) }

func (l *seatLink) Reached(ctx context.Context, seat, scenarioName, goal string, moves int) error {
	return l.store.Reached(ctx, seat, scenarioName, goal, moves)
}

func (l *seatLink) SetLead(ctx context.Context, ld room.Lead) (room.Lead, error) {
	return l.store.SetLead(ctx, ld)
}
