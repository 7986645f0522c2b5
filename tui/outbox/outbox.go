// Package outbox keeps what a TUI in a room has still to tell the room (its
// seat, or the presenter's lead) in the order of its moves, and sends only
// the newest, one send at a time.
package outbox

import (
	"context"
	"fmt"
	"sync"

	"github.com/leaserace/leaserace/engine/room"
)

// Sender is the room a Box sends to.
type Sender interface {
	Report(ctx context.Context, s room.Seat) error
	SetLead(ctx context.Context, l room.Lead) (room.Lead, error)
}

// Box keeps the room's picture of this TUI in the order its moves
// happened. Bubble Tea runs each command on a goroutine of its own, so two
// quick moves' reports could reach the room in either order and leave the
// board, or every follower, one move behind. Instead, Update puts the
// newest seat or lead here at once (in order, as Update runs one message
// at a time), and the command only sends whatever is newest when its turn
// comes, one send at a time. A send finding nothing newer sends nothing, so
// a busy room never piles up reports.
type Box struct {
	mu   sync.Mutex // guards seat and lead
	seat *room.Seat
	lead *room.Lead

	// sending holds the one send under way, so sends reach the room in
	// order.
	sending chan struct{}
}

func New() *Box { return &Box{sending: make(chan struct{}, 1)} }

// PutSeat replaces the seat waiting to be sent.
func (o *Box) PutSeat(s room.Seat) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seat = &s
}

// PutLead replaces the lead waiting to be sent. A push still waiting stays
// a push: the newer lead takes everyone to the newer place instead.
func (o *Box) PutLead(l room.Lead) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lead != nil && o.lead.Push {
		l.Push = true
	}
	o.lead = &l
}

// SendSeat sends the newest seat not sent yet, if any.
func (o *Box) SendSeat(ctx context.Context, to Sender) error {
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

// SendLead sends the newest lead not sent yet, if any.
func (o *Box) SendLead(ctx context.Context, to Sender) error {
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
func (o *Box) turn(ctx context.Context, what string) error {
	select {
	case o.sending <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("could not %s: an earlier report is still on its way (%w)", what, ctx.Err())
	}
}
