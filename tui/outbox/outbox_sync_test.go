package outbox

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaserace/leaserace/engine/room"
)

// slowRoom records the seats and leads it is sent; each call waits until
// the test lets it through, so a send can be held in flight.
type slowRoom struct {
	mu    sync.Mutex
	seats []int
	leads []room.Lead
	gate  chan struct{}
}

func (r *slowRoom) Report(ctx context.Context, s room.Seat) error {
	select {
	case <-r.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seats = append(r.seats, s.Pos)
	return nil
}

func (r *slowRoom) SetLead(ctx context.Context, l room.Lead) (room.Lead, error) {
	select {
	case <-r.gate:
	case <-ctx.Done():
		return room.Lead{}, ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leads = append(r.leads, l)
	return l, nil
}

func (r *slowRoom) Vote(context.Context, room.Vote) error { return errors.New("not in this test") }
func (r *slowRoom) Reached(context.Context, string, string, string, int) error {
	return errors.New("not in this test")
}

// In a bubble (testing/synctest), with the room holding the first report:
// later moves' sends wait their turn, and once it comes the first of them
// sends only the newest seat and the rest send nothing; a send whose
// context ends while it waits gives up at that very moment and leaves its
// seat for the next. No real time passes and no step depends on timing.
func TestOutboxSendsWaitTheirTurnInABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &slowRoom{gate: make(chan struct{})}
		o := New()
		ctx := context.Background()
		errs := make(chan error, 8)
		send := func() { errs <- o.SendSeat(ctx, r) }

		o.PutSeat(room.Seat{Pos: 1})
		go send()
		synctest.Wait() // the first send is in flight, held by the room
		for pos := 2; pos <= 4; pos++ {
			o.PutSeat(room.Seat{Pos: pos})
			go send()
		}
		synctest.Wait() // three sends wait their turn
		r.gate <- struct{}{}
		r.gate <- struct{}{} // one more report goes through, no more
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatalf("a send: %v", err)
			}
		}
		if got := r.seats; len(got) != 2 || got[0] != 1 || got[1] != 4 {
			t.Fatalf("reports %v, want [1 4]: the held one, then only the newest", got)
		}

		// Held again: a send with a 50 ms deadline gives up after exactly
		// 50 ms of the bubble's clock, and its seat goes with the next.
		o.PutSeat(room.Seat{Pos: 5})
		go send()
		synctest.Wait()
		o.PutSeat(room.Seat{Pos: 6})
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		began := time.Now()
		err := o.SendSeat(short, r)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a send that could not have its turn: %v, want the deadline", err)
		}
		if took := time.Since(began); took != 50*time.Millisecond {
			t.Errorf("gave up after %s, want exactly 50ms", took)
		}
		r.gate <- struct{}{}
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		go send()
		r.gate <- struct{}{}
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		if got := r.seats; len(got) != 4 || got[2] != 5 || got[3] != 6 {
			t.Errorf("reports %v, want [1 4 5 6]: the seat of the send that gave up came next", got)
		}
	})
}

// Leads in a bubble: a push overtaken while a send is held still pushes,
// to the newest place, and is sent once.
func TestOutboxLeadPushSurvivesInABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &slowRoom{gate: make(chan struct{})}
		o := New()
		ctx := context.Background()
		errs := make(chan error, 4)
		send := func() { errs <- o.SendLead(ctx, r) }

		o.PutLead(room.Lead{Scenario: "renewal-race", Pos: 1})
		go send()
		synctest.Wait()
		o.PutLead(room.Lead{Scenario: "renewal-race", Pos: 2, Push: true})
		go send()
		o.PutLead(room.Lead{Scenario: "renewal-race", Pos: 3})
		go send()
		synctest.Wait()
		r.gate <- struct{}{}
		r.gate <- struct{}{}
		for range 3 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		want := []room.Lead{{Scenario: "renewal-race", Pos: 1}, {Scenario: "renewal-race", Pos: 3, Push: true}}
		if len(r.leads) != 2 || r.leads[0] != want[0] || r.leads[1] != want[1] {
			t.Errorf("leads sent %+v, want %+v", r.leads, want)
		}
	})
}
