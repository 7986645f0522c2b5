package workshop

import (
	"context"
	"sync"

	"github.com/leaserace/leaserace/engine/room"
)

// maxBatch bounds the seats one round trip reports.
const maxBatch = 512

// seatBatcher sends the seat reports of every attendee of this process
// that wait at the same moment in one round trip (Store.ReportMany): a
// busy room makes one trip for many attendees instead of one each, and its
// two pooled connections keep up. Each attendee's queue still sends one
// report at a time and waits for its result.
type seatBatcher struct {
	store *room.Store

	mu      sync.Mutex
	pending []*seatReq
	wake    chan struct{}
	done    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

type seatReq struct {
	seat room.Seat
	err  error
	done chan struct{}
}

func newSeatBatcher(store *room.Store) *seatBatcher {
	b := &seatBatcher{store: store, wake: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	go b.run()
	return b
}

// Report sends seat with whatever else waits, and returns its result. A
// report abandoned when ctx ends may still land, older than any the
// attendee sends later, so never after them.
func (b *seatBatcher) Report(ctx context.Context, seat room.Seat) error {
	r := &seatReq{seat: seat, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, r)
	b.mu.Unlock()
	signal(b.wake)
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	case <-b.stopped:
		return room.ErrClosed
	}
}

func (b *seatBatcher) stop() {
	b.once.Do(func() { close(b.done) })
	<-b.stopped
}

func (b *seatBatcher) run() {
	defer close(b.stopped)
	for {
		select {
		case <-b.wake:
		case <-b.done:
			return
		}
		for {
			b.mu.Lock()
			n := min(len(b.pending), maxBatch)
			reqs := b.pending[:n:n]
			b.pending = b.pending[n:]
			b.mu.Unlock()
			if n == 0 {
				break
			}
			b.send(reqs)
		}
	}
}

// send reports reqs in one round trip; a seat reported twice goes once,
// with its newest report.
func (b *seatBatcher) send(reqs []*seatReq) {
	idx := map[string]int{}
	var seats []room.Seat
	for _, r := range reqs {
		if i, ok := idx[r.seat.ID]; ok {
			seats[i] = r.seat
			continue
		}
		idx[r.seat.ID] = len(seats)
		seats = append(seats, r.seat)
	}
	ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
	go func() {
		select {
		case <-b.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	errs, err := b.store.ReportMany(ctx, seats)
	cancel()
	for _, r := range reqs {
		r.err = err
		if err == nil {
			r.err = errs[idx[r.seat.ID]]
		}
		close(r.done)
	}
}
