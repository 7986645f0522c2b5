// Package outbox keeps what a TUI in a room has still to tell the room (its
// seat, or the presenter's lead) in the order of its moves, and sends only
// the newest, one send at a time.
package outbox

import (
	"context"
	"fmt"

	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/internal/coalesce"
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
//
// What waits is a coalesce.Queue with a key per kind: a newer seat
// replaces the waiting seat, a newer lead the waiting lead.
type Box struct {
	waiting *coalesce.Queue[kind, report]

	// sending holds the one send under way, so sends reach the room in
	// order.
	sending chan struct{}
}

// kind keys the Box's queue: one seat and one lead wait at most.
type kind int

const (
	seatKind kind = iota
	leadKind
)

// report is a seat or a lead waiting to be sent.
type report struct {
	seat *room.Seat
	lead *room.Lead
}

// keepPush merges a newer lead into a waiting one: a push still waiting
// stays a push, and the newer lead takes everyone to the newer place
// instead.
func keepPush(old, new report) report {
	if old.lead != nil && new.lead != nil && old.lead.Push && !new.lead.Push {
		l := *new.lead
		l.Push = true
		new.lead = &l
	}
	return new
}

func New() *Box {
	return &Box{
		waiting: coalesce.New[kind, report](coalesce.Options[report]{Merge: keepPush}),
		sending: make(chan struct{}, 1),
	}
}

// PutSeat replaces the seat waiting to be sent.
func (o *Box) PutSeat(s room.Seat) { o.waiting.Put(seatKind, report{seat: &s}) }

// PutLead replaces the lead waiting to be sent. A push still waiting stays
// a push: the newer lead takes everyone to the newer place instead.
func (o *Box) PutLead(l room.Lead) { o.waiting.Put(leadKind, report{lead: &l}) }

// SendSeat sends the newest seat not sent yet, if any.
func (o *Box) SendSeat(ctx context.Context, to Sender) error {
	return o.send(ctx, to, "report where you are")
}

// SendLead sends the newest lead not sent yet, if any.
func (o *Box) SendLead(ctx context.Context, to Sender) error {
	return o.send(ctx, to, "tell the room where you are")
}

// send waits its turn, then sends what has waited longest, if anything
// still waits. A TUI puts only seats (an attendee) or only leads (the
// presenter), so that is the newest of its kind.
func (o *Box) send(ctx context.Context, to Sender, what string) error {
	if err := o.turn(ctx, what); err != nil {
		return err
	}
	defer func() { <-o.sending }()
	r, ok := o.waiting.Take()
	switch {
	case !ok:
		return nil
	case r.seat != nil:
		return to.Report(ctx, *r.seat)
	default:
		_, err := to.SetLead(ctx, *r.lead)
		return err
	}
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
