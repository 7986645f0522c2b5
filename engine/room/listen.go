package room

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/internal/coalesce"
)

// EventKind says what changed in a room.
type EventKind int

const (
	// LeadChanged: the presenter moved; Event.Lead is the new lead.
	LeadChanged EventKind = iota + 1
	// BoardChanged: seats, votes or goals changed; read Board again.
	// Changes that come within Options.Debounce of each other make one.
	BoardChanged
	// RoomEnded: the presenter ended the room and its tables are gone.
	RoomEnded
	// Reconnected: the Store hears the room again after its LISTEN
	// connection was lost (see ListenError). Changes in between were not
	// heard: a LeadChanged with the current lead (if any) comes just
	// before it, and a BoardChanged soon after.
	Reconnected
)

func (k EventKind) String() string {
	switch k {
	case LeadChanged:
		return "lead changed"
	case BoardChanged:
		return "board changed"
	case RoomEnded:
		return "room ended"
	case Reconnected:
		return "reconnected"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is a change in the room, from any process serving it.
type Event struct {
	Kind EventKind
	Room string
	// Lead is the new lead, for LeadChanged.
	Lead *Lead
}

// ListenError is the Store's LISTEN connection lost (the server restarted,
// the connection was terminated) or not yet back: the Store retries after
// Retry. Once it listens again it sends a LeadChanged with the current lead
// (if any), a Reconnected and a BoardChanged, as changes in between were
// not heard; a subscriber may so see a lead again, with a Seq it already
// had.
type ListenError struct {
	Room  string
	Retry time.Duration
	Err   error
}

func (e *ListenError) Error() string {
	return fmt.Sprintf("room %s stopped hearing changes, trying again in %s: %v", e.Room, e.Retry, e.Err)
}

func (e *ListenError) Unwrap() error { return e.Err }

// panicError is a panic in the Store's background work or in a
// subscriber, caught so the room goes on.
func panicError(where string, v any) error {
	return &engine.PanicError{Where: where, Value: v, Stack: debug.Stack()}
}

const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// connectListener opens the LISTEN connection.
func (s *Store) connectListener(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.listenCfg)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to listen for room %s: %w", s.room, err)
	}
	// The channel is a constant, quoted all the same.
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{Channel}.Sanitize()); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("cannot listen for room %s: %w", s.room, err)
	}
	return conn, nil
}

// listen hears the room's notifications until ctx ends, reconnecting with
// backoff when the connection drops.
func (s *Store) listen(ctx context.Context, conn *pgx.Conn) {
	defer s.wg.Done()
	backoff := minBackoff
	for {
		err := s.hear(ctx, conn)
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(closeCtx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		for conn = nil; conn == nil; {
			s.report(&ListenError{Room: s.room, Retry: backoff, Err: err})
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, maxBackoff)
			cctx, cancel := context.WithTimeout(ctx, s.opts.Idle/3+time.Second)
			conn, err = s.connectListener(cctx)
			cancel()
			if ctx.Err() != nil {
				if conn != nil {
					_ = conn.Close(context.Background())
				}
				return
			}
		}
		backoff = minBackoff
		s.catchUp(ctx)
	}
}

// hear passes notifications on until the connection fails or ctx ends. A
// connection quiet for Idle/3 is pinged: a peer that vanished without a
// word (a dropped network path) would otherwise never be noticed.
func (s *Store) hear(ctx context.Context, conn *pgx.Conn) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError("the room's listener", v)
		}
	}()
	quiet := s.opts.Idle / 3
	for {
		wctx, cancel := context.WithTimeout(ctx, quiet)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if !pgconn.Timeout(err) || conn.IsClosed() {
				return err
			}
			pctx, cancel := context.WithTimeout(ctx, quiet)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
			continue
		}
		s.heard(ctx, n.Payload)
	}
}

// heard decodes one notification and passes on those of this room.
func (s *Store) heard(ctx context.Context, p string) {
	var n notice
	if err := json.Unmarshal([]byte(p), &n); err != nil {
		s.report(fmt.Errorf("room %s heard a notice it cannot read: %w", s.room, err))
		return
	}
	if n.Room != s.room {
		return
	}
	switch n.Kind {
	case kindLead:
		if n.Lead == nil {
			s.report(fmt.Errorf("room %s heard a lead notice without a lead", s.room))
			return
		}
		s.post(ctx, Event{Kind: LeadChanged, Room: s.room, Lead: n.Lead})
	case kindBoard:
		s.post(ctx, Event{Kind: BoardChanged, Room: s.room})
	case kindEnded:
		s.ended.Store(true)
		s.post(ctx, Event{Kind: RoomEnded, Room: s.room})
	}
}

// catchUp tells subscribers what they may have missed while the listener
// was away.
func (s *Store) catchUp(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Idle/3+time.Second)
	defer cancel()
	l, err := s.Lead(ctx)
	switch {
	case errors.Is(err, ErrEnded):
		s.ended.Store(true)
		s.post(ctx, Event{Kind: RoomEnded, Room: s.room})
		return
	case err != nil:
		s.report(err)
	case l != nil:
		s.post(ctx, Event{Kind: LeadChanged, Room: s.room, Lead: l})
	}
	s.post(ctx, Event{Kind: BoardChanged, Room: s.room})
	// Last, after the lead was read: any lead set from now on arrives by
	// NOTIFY.
	s.post(ctx, Event{Kind: Reconnected, Room: s.room})
}

// post hands an event to the dispatcher, unless the Store is closing.
func (s *Store) post(ctx context.Context, e Event) {
	select {
	case s.events <- e:
	case <-ctx.Done():
	}
}

// dispatch debounces board events and passes every event on to the
// subscribers, in order.
func (s *Store) dispatch(ctx context.Context) {
	defer s.wg.Done()
	var timer *time.Timer
	var fire <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-s.events:
			if e.Kind == BoardChanged {
				if timer == nil {
					timer = time.NewTimer(s.opts.Debounce)
					fire = timer.C
				}
				continue
			}
			s.fanOut(e)
		case <-fire:
			timer, fire = nil, nil
			s.fanOut(Event{Kind: BoardChanged, Room: s.room})
		}
	}
}

func (s *Store) fanOut(e Event) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	for sub := range s.subs {
		sub.add(e)
	}
}

// Subscribe calls fn with every event of the room, in order, on a
// goroutine of the subscription's own: a slow subscriber delays only
// itself, and board events that pile up behind it merge into one. A panic
// in fn is reported to Options.OnError and the subscription goes on. The
// events start now: read Lead and Board for where the room is. stop ends
// the subscription; fn is not called after stop returns, unless it is
// running already.
func (s *Store) Subscribe(fn func(Event)) (stop func()) {
	sub := newSubscription(fn)
	s.subsMu.Lock()
	if s.subs == nil { // closed
		s.subsMu.Unlock()
		return func() {}
	}
	s.subs[sub] = struct{}{}
	s.subsMu.Unlock()
	go sub.run(s)
	return func() {
		s.subsMu.Lock()
		delete(s.subs, sub)
		s.subsMu.Unlock()
		sub.end()
	}
}

// stopSubscriptions ends every subscription; later ones are refused.
func (s *Store) stopSubscriptions() {
	s.subsMu.Lock()
	subs := s.subs
	s.subs = nil
	s.subsMu.Unlock()
	for sub := range subs {
		sub.end()
	}
}

// subscription is one subscriber's queue of events: board events merge
// into the one waiting (they carry nothing but "read the board again"),
// every other event is kept, in order.
type subscription struct {
	fn     func(Event)
	events *coalesce.Queue[EventKind, Event]
	done   chan struct{}
	once   sync.Once
}

func newSubscription(fn func(Event)) *subscription {
	return &subscription{fn: fn, events: coalesce.New[EventKind, Event](coalesce.Options[Event]{}), done: make(chan struct{})}
}

func (sub *subscription) add(e Event) {
	if e.Kind == BoardChanged {
		sub.events.Put(BoardChanged, e)
		return
	}
	sub.events.Push(e)
}

func (sub *subscription) end() {
	sub.once.Do(func() {
		close(sub.done)
		sub.events.Close()
	})
}

func (sub *subscription) run(s *Store) {
	sub.events.Deliver(sub.done, func(e Event) {
		select {
		case <-sub.done:
			return
		default:
		}
		sub.call(s, e)
	})
}

func (sub *subscription) call(s *Store, e Event) {
	defer func() {
		if v := recover(); v != nil {
			s.report(panicError("a room subscriber", v))
		}
	}()
	sub.fn(e)
}
