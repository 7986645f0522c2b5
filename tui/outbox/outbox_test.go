package outbox

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/room"
)

// countingRoom is a real room store that counts the reports it is given.
type countingRoom struct {
	*room.Store
	reports, leads atomic.Int64
}

func (c *countingRoom) Report(ctx context.Context, s room.Seat) error {
	c.reports.Add(1)
	return c.Store.Report(ctx, s)
}

func (c *countingRoom) SetLead(ctx context.Context, l room.Lead) (room.Lead, error) {
	c.leads.Add(1)
	return c.Store.SetLead(ctx, l)
}

func openTestRoom(t *testing.T) (*countingRoom, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	name := fmt.Sprintf("outbox_%d", time.Now().UnixNano())
	store, err := room.Open(ctx, pgtest.DSN(t), name, "test", room.Options{Conns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = store.Drop(context.Background())
		_ = store.Close(context.Background())
	})
	return &countingRoom{Store: store}, ctx
}

// TestOutboxSeatsArriveInMoveOrder: moves made faster than the room takes
// their reports, each report sent from a goroutine of its own as Bubble
// Tea does, whichever runs first: the board ends at the last move, and
// reports overtaken while waiting are not written at all.
func TestOutboxSeatsArriveInMoveOrder(t *testing.T) {
	r, ctx := openTestRoom(t)
	seat, err := r.Join(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	o := New()
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		s := seat
		s.Pos = i
		o.PutSeat(s) // in Update, in the order of the moves
		wg.Go(func() { errs <- o.SendSeat(ctx, r) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("SendSeat: %v", err)
		}
	}
	b, err := r.Board(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Seats) != 1 || b.Seats[0].Pos != n-1 {
		t.Errorf("after the last move the board shows %+v, want alice at %d", b.Seats, n-1)
	}
	if w := r.reports.Load(); w < 1 || w >= n {
		t.Errorf("%d reports written for %d moves: want at least one, and fewer than the moves", w, n)
	} else {
		t.Logf("%d reports written for %d moves", w, n)
	}

	// A send that cannot have its turn in time says so, and leaves its
	// seat for the next send.
	o.sending <- struct{}{}
	last := seat
	last.Pos = 999
	o.PutSeat(last)
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	if err := o.SendSeat(short, r); err == nil {
		t.Errorf("a report that could not be sent in time returned nil")
	}
	<-o.sending
	if err := o.SendSeat(ctx, r); err != nil {
		t.Fatal(err)
	}
	if b, err := r.Board(ctx); err != nil || len(b.Seats) != 1 || b.Seats[0].Pos != 999 {
		t.Errorf("the seat kept after a send gave up was not sent by the next: %+v (%v)", b.Seats, err)
	}
}

// TestOutboxLeadsArriveInMoveOrder: the presenter's leads end at its last
// move, and a push overtaken before it was sent still pushes, to the newer
// place.
func TestOutboxLeadsArriveInMoveOrder(t *testing.T) {
	r, ctx := openTestRoom(t)
	o := New()
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		o.PutLead(room.Lead{Scenario: "renewal-race", Pos: i, T: 1060 + int64(i)})
		wg.Go(func() { errs <- o.SendLead(ctx, r) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("SendLead: %v", err)
		}
	}
	l, err := r.Lead(ctx)
	if err != nil || l == nil || l.Pos != n-1 {
		t.Fatalf("the room's lead after the last move: %+v (%v), want position %d", l, err, n-1)
	}
	if w := r.leads.Load(); w < 1 || w >= n {
		t.Errorf("%d leads written for %d moves", w, n)
	}

	o.PutLead(room.Lead{Scenario: "renewal-race", Pos: 3, T: 1070, Push: true})
	o.PutLead(room.Lead{Scenario: "renewal-race", Pos: 4, T: 1075})
	if err := o.SendLead(ctx, r); err != nil {
		t.Fatal(err)
	}
	pushed, err := r.Lead(ctx)
	if err != nil || pushed == nil || pushed.Pos != 4 || !pushed.Push {
		t.Fatalf("a push overtaken by a newer lead: the room has %+v (%v), want position 4, pushed", pushed, err)
	}
	before := r.leads.Load()
	if err := o.SendLead(ctx, r); err != nil {
		t.Fatal(err)
	}
	if l, err := r.Lead(ctx); err != nil || l == nil || l.Seq != pushed.Seq || r.leads.Load() != before {
		t.Errorf("a send with nothing new wrote a lead: %+v (%v), was %+v", l, err, pushed)
	}
}

func TestMain(m *testing.M) { pgtest.Main(m) }
