package tui

import (
	"context"
	"fmt"
	"sync"

	"github.com/leaserace/leaserace/engine/room"
)

// outbox keeps the room's picture of this TUI in the order its moves
// happened. Bubble Tea runs each command on a goroutine of its own, so two
// quick moves' reports could reach the room in either order and leave the
// board, or every follower, one move behind. Instead, Update puts the
// newest seat or lead here at once (in order, as Update runs one message
// at a time), and the command only sends whatever is newest when its turn
// comes, one send at a time. A send finding nothing newer sends nothing, so
// a busy room never piles up reports.
type outbox struct {
	mu   sync.Mutex // guards seat and lead
	seat *room.Seat
	lead *room.Lead

	// sending holds the one send under way, so sends reach the room in
	// order.
	sending chan struct{}
}

func newOutbox() *outbox { return &outbox{sending: make(chan struct{}, 1)} }

// putSeat replaces the seat waiting to be sent.
func (o *outbox) putSeat(s room.Seat) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seat = &s
}

// putLead replaces the lead waiting to be sent. A push still waiting stays
// a push: the newer lead takes everyone to the newer place instead.
func (o *outbox) putLead(l room.Lead) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lead != nil && o.lead.Push {
		l.Push = true
	}
	o.lead = &l
}

// sendSeat sends the newest seat not sent yet, if any.
func (o *outbox) sendSeat(ctx context.Context, to Room) error {
	if err := o.turn(ctx, "report where you are"); err != nil {
		return err
	}
	defer func() { <-o.sending }()
	o.mu.Lock()
	s := o.seat
	o.seat = nil
	o.mu.Unlock()
	if s == nil {
		return nil
	}
	return to.Report(ctx, *s)
}

// sendLead sends the newest lead not sent yet, if any.
func (o *outbox) sendLead(ctx context.Context, to Room) error {
	if err := o.turn(ctx, "tell the room where you are"); err != nil {
		return err
	}
	defer func() { <-o.sending }()
	o.mu.Lock()
	l := o.lead
	o.lead = nil
	o.mu.Unlock()
	if l == nil {
		return nil
	}
	_, err := to.SetLead(ctx, *l)
	return err
}

// turn waits for the send under way to end. What this send would have
// sent stays in the box for the next one.
func (o *outbox) turn(ctx context.Context, what string) error {
	select {
	case o.sending <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("could not %s: an earlier report is still on its way (%w)", what, ctx.Err())
	}
}
