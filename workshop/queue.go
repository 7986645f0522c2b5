package workshop

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/internal/coalesce"
	"github.com/leaserace/leaserace/tui"
)

// An overloaded room must get slower, never fail: a report the room cannot
// take at once waits here, merged with newer ones of the same kind, and is
// sent again until it lands. Only a real outage, after outageBound, shows
// on the attendee's screen, and then as "still retrying".
const (
	// attemptTimeout bounds one try; a try that runs out is tried again.
	attemptTimeout = 15 * time.Second
	// outageBound is how long reports may wait before the screen says so.
	outageBound = 30 * time.Second
	// maxPending bounds the distinct reports waiting per participant. The
	// newest seat and lead take one place each, votes one per question and
	// goals one per goal, so only a flood of questions reaches it; Put then
	// waits for room, it never drops.
	maxPending = 256
	minRetry   = 50 * time.Millisecond
	maxRetry   = 2 * time.Second
)

// goalReport is a goal reached, as Store.Reached takes it.
type goalReport struct {
	seat, scenario, goal string
	moves                int
}

// pending is one report waiting for the room. A newer report of the same
// key replaces it (merged by mergePending); put stays the time the key
// began to wait.
type pending struct {
	put  time.Time
	seat *room.Seat
	lead *room.Lead
	vote *room.Vote
	goal *goalReport
}

// mergePending is what a newer report p makes of an older one of the same
// key: a lead that pushes stays a push, a goal keeps its fewest moves, and
// the time it began to wait is the older one's.
func mergePending(old, p pending) pending {
	switch {
	case p.lead != nil && old.lead != nil:
		l := *p.lead
		l.Push = l.Push || old.lead.Push
		p.lead = &l
	case p.goal != nil && old.goal != nil:
		g := *p.goal
		g.moves = min(g.moves, old.goal.moves)
		p.goal = &g
	}
	p.put = old.put
	return p
}

// reports is one participant's queue of reports to the room, sent in the
// order they began to wait, one at a time, by a goroutine of its own. It
// implements tui.Room: every call returns as soon as the report is queued.
//
// What waits is a coalesce.Queue keyed by report (the seat, the lead, a
// vote per question, a goal per goal); the report on its way is held
// apart (sending) until it lands, and tried again while it has not and no
// newer one of its key waits.
type reports struct {
	store *room.Store
	// seat sends a seat report: the store's Report, or the room's
	// batcher.
	seat   func(context.Context, room.Seat) error
	notify func(tea.Msg) // the participant's program; may be nil
	stats  *Backlog      // the room's figures; may be nil

	attempt, outage time.Duration

	// mu makes what waits and what is on its way change together.
	mu      sync.Mutex
	waiting *coalesce.Queue[string, pending]
	failing time.Time // when the first try of the oldest failing report failed
	told    bool      // the screen was told of an outage
	// sending is the report on its way, under sendingKey; nil when none
	// is. One that replaces it begins to wait only now, as the room is
	// about to have the older one.
	sending    *pending
	sendingKey string

	space    chan struct{}
	done     chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once
}

var _ tui.Room = (*reports)(nil)

func newReports(store *room.Store, notify func(tea.Msg), stats *Backlog) *reports {
	return newReportsVia(store, store.Report, notify, stats)
}

// newReportsVia is newReports with seat reports sent by seat.
func newReportsVia(store *room.Store, seat func(context.Context, room.Seat) error, notify func(tea.Msg), stats *Backlog) *reports {
	q := &reports{
		store: store, seat: seat, notify: notify, stats: stats, attempt: attemptTimeout, outage: outageBound,
		waiting: coalesce.New[string, pending](coalesce.Options[pending]{Merge: mergePending}),
		space:   make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{}),
	}
	go q.run()
	return q
}

// stop ends the sender; what still waits is dropped, as the participant
// has left the room.
func (q *reports) stop() {
	q.stopOnce.Do(func() { close(q.done) })
	<-q.stopped
	q.mu.Lock()
	n := q.depth()
	q.waiting.Close()
	q.sending = nil
	q.mu.Unlock()
	if q.stats != nil {
		q.stats.waiting.Add(-int64(n))
	}
}

// Depth is how many reports wait now, the one on its way included.
func (q *reports) Depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.depth()
}

// depth is Depth with q.mu held.
func (q *reports) depth() int {
	n := q.waiting.Len()
	if q.onItsWay() {
		n++
	}
	return n
}

// onItsWay says, with q.mu held, whether the report on its way is still
// the newest of its key.
func (q *reports) onItsWay() bool {
	return q.sending != nil && !q.waiting.Has(q.sendingKey)
}

// put queues p under its key, merged with what waits there already. It
// waits for a place while the queue is full.
func (q *reports) put(ctx context.Context, p pending) error {
	key := keyOf(p)
	for {
		q.mu.Lock()
		inFlight := q.onItsWay() && key == q.sendingKey
		known := inFlight || q.waiting.Has(key)
		if known || q.depth() < maxPending {
			p.put = time.Now()
			if inFlight {
				p = mergePending(*q.sending, p)
				p.put = time.Now()
			}
			q.waiting.Put(key, p)
			depth := q.depth()
			q.mu.Unlock()
			q.stats.sawDepth(depth, !known)
			return nil
		}
		q.mu.Unlock()
		select {
		case <-q.space:
		case <-q.done:
			return room.ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (q *reports) Report(ctx context.Context, s room.Seat) error {
	return q.put(ctx, pending{seat: &s})
}

// SetLead queues the lead; its Seq is known only once it lands, so the
// lead returned has none. A push waiting stays a push.
func (q *reports) SetLead(ctx context.Context, l room.Lead) (room.Lead, error) {
	return l, q.put(ctx, pending{lead: &l})
}

func (q *reports) Vote(ctx context.Context, v room.Vote) error {
	return q.put(ctx, pending{vote: &v})
}

// Reached queues a goal; the fewest moves waiting is kept, as the room
// keeps them.
func (q *reports) Reached(ctx context.Context, seat, scenarioName, goal string, moves int) error {
	g := goalReport{seat: seat, scenario: scenarioName, goal: goal, moves: moves}
	return q.put(ctx, pending{goal: &g})
}

// next is the report to try now: the one on its way again, while no newer
// one of its key waits, or else the one that has waited longest, which is
// then on its way.
func (q *reports) next() (pending, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.onItsWay() {
		return *q.sending, true
	}
	p, ok := q.waiting.Take()
	if !ok {
		q.sending = nil
		return pending{}, false
	}
	q.sending, q.sendingKey = &p, keyOf(p)
	return p, true
}

// keyOf is the key p waits under: the seat, the lead, a vote per
// question, a goal per seat, scenario and goal.
func keyOf(p pending) string {
	switch {
	case p.seat != nil:
		return "seat"
	case p.lead != nil:
		return "lead"
	case p.vote != nil:
		return "vote\x00" + p.vote.Question
	default:
		return "goal\x00" + p.goal.seat + "\x00" + p.goal.scenario + "\x00" + p.goal.goal
	}
}

// run sends the reports until stop.
func (q *reports) run() {
	defer close(q.stopped)
	retry := minRetry
	for {
		p, ok := q.next()
		if !ok {
			select {
			case <-q.waiting.Ready():
				continue
			case <-q.done:
				return
			}
		}
		err := q.send(p)
		select {
		case <-q.done:
			return
		default:
		}
		if err != nil && !permanent(err) {
			q.failed(err)
			t := time.NewTimer(retry)
			select {
			case <-t.C:
			case <-q.done:
				t.Stop()
				return
			}
			retry = min(2*retry, maxRetry)
			continue
		}
		retry = minRetry
		q.landed(p, err)
	}
}

// send makes one try at a report.
func (q *reports) send(p pending) error {
	ctx, cancel := context.WithTimeout(context.Background(), q.attempt)
	defer cancel()
	go func() {
		// Leaving ends a try that is stuck.
		select {
		case <-q.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	switch {
	case p.seat != nil:
		return q.seat(ctx, *p.seat)
	case p.lead != nil:
		_, err := q.store.SetLead(ctx, *p.lead)
		return err
	case p.vote != nil:
		return q.store.Vote(ctx, *p.vote)
	case p.goal != nil:
		return q.store.Reached(ctx, p.goal.seat, p.goal.scenario, p.goal.goal, p.goal.moves)
	}
	return nil
}

// permanent says whether trying again cannot help: the seat is gone, the
// room ended or the store closed.
func permanent(err error) bool {
	return errors.Is(err, room.ErrNoSeat) || errors.Is(err, room.ErrEnded) || errors.Is(err, room.ErrClosed) ||
		errors.Is(err, room.ErrSeatName)
}

// failed notes a try that will be made again, and tells the screen once
// reports have waited longer than the outage bound.
func (q *reports) failed(err error) {
	q.mu.Lock()
	now := time.Now()
	if q.failing.IsZero() {
		q.failing = now
	}
	// The oldest is the one on its way, unless a newer one replaced it;
	// then it is the first waiting, as reports wait in the order they
	// began to.
	var oldest time.Time
	if q.onItsWay() {
		oldest = q.sending.put
	} else if p, ok := q.waiting.Peek(); ok {
		oldest = p.put
	}
	tell := !q.told && !oldest.IsZero() && now.Sub(oldest) >= q.outage
	if tell {
		q.told = true
	}
	q.mu.Unlock()
	q.stats.sawRetry()
	if tell && q.notify != nil {
		q.notify(tui.RoomNoticeMsg{Waiting: now.Sub(oldest), Err: err})
	}
}

// landed takes a report that was sent (or refused for good, err) off its
// way; it no longer waits unless a newer one replaced it meanwhile.
func (q *reports) landed(p pending, err error) {
	q.mu.Lock()
	removed := q.onItsWay()
	q.sending = nil
	q.failing = time.Time{}
	cleared := q.told && q.depth() == 0
	if cleared {
		q.told = false
	}
	q.mu.Unlock()
	signal(q.space)
	q.stats.sawLanded(time.Since(p.put), err == nil, removed)
	if q.notify == nil {
		return
	}
	if err != nil {
		q.notify(tui.RoomNoticeMsg{Err: err, Lost: true})
	} else if cleared {
		q.notify(tui.RoomNoticeMsg{})
	}
}

// Backlog is how the room's reports fared: how many waited at once for
// one participant, how long one waited before it landed, how many tries
// failed and were made again, and how many were refused for good. Its
// methods are safe for concurrent use; a nil Backlog counts nothing.
type Backlog struct {
	maxDepth  atomic.Int64
	waiting   atomic.Int64
	maxAge    atomic.Int64 // nanoseconds
	totalAge  atomic.Int64
	landed    atomic.Int64
	retries   atomic.Int64
	refused   atomic.Int64
	maxWaited atomic.Int64
}

// BacklogStats is a Backlog read at once.
type BacklogStats struct {
	// MaxDepth is the most reports one participant had waiting at once;
	// Waiting the reports waiting in all now, MaxWaiting the most at once.
	MaxDepth, Waiting, MaxWaiting int
	// MaxAge and MeanAge are how long a report waited, from the moment it
	// was queued (or an older one it replaced) until it landed.
	MaxAge, MeanAge time.Duration
	// Landed reports taken by the room; Retries tries made again;
	// Refused reports the room refused for good.
	Landed, Retries, Refused int
}

// Stats reads the figures.
func (b *Backlog) Stats() BacklogStats {
	s := BacklogStats{
		MaxDepth: int(b.maxDepth.Load()), Waiting: int(b.waiting.Load()), MaxWaiting: int(b.maxWaited.Load()),
		MaxAge: time.Duration(b.maxAge.Load()), Landed: int(b.landed.Load()),
		Retries: int(b.retries.Load()), Refused: int(b.refused.Load()),
	}
	if s.Landed > 0 {
		s.MeanAge = time.Duration(b.totalAge.Load() / int64(s.Landed))
	}
	return s
}

func (b *Backlog) sawDepth(depth int, added bool) {
	if b == nil {
		return
	}
	storeMax(&b.maxDepth, int64(depth))
	if added {
		storeMax(&b.maxWaited, b.waiting.Add(1))
	}
}

func (b *Backlog) sawRetry() {
	if b != nil {
		b.retries.Add(1)
	}
}

func (b *Backlog) sawLanded(age time.Duration, ok, removed bool) {
	if b == nil {
		return
	}
	if removed {
		b.waiting.Add(-1)
	}
	if !ok {
		b.refused.Add(1)
		return
	}
	b.landed.Add(1)
	b.totalAge.Add(int64(age))
	storeMax(&b.maxAge, int64(age))
}

func storeMax(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}
