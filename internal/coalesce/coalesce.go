// Package coalesce is the one queue on the room's path from a presenter's
// key to an attendee's frame (docs/room-path.md). A Queue holds values for
// one consumer, in the order they began to wait, under two rules:
//
//   - Put is latest-wins. A value put under a key that still waits replaces
//     the waiting one in its place; a Merge function may carry something
//     of the old value over (a lead's push, say). Frames, sizes and boards
//     go this way: only the newest matters.
//   - Push keeps. A pushed value is never replaced and is taken in order:
//     reports, notices and leads go this way. Only a Queue with a Limit
//     ever drops one: when more than Limit pushed values wait, the oldest
//     of them goes, and Dropped counts it.
//
// The package imports only the standard library, so every layer of the
// module may use it (engine/layout_test.go holds it to that).
package coalesce

import (
	"container/list"
	"sync"
)

// Options shape a Queue. The zero value keeps every pushed value and
// lets a newer put value replace an older one outright.
type Options[V any] struct {
	// Merge, if set, makes the value that replaces a waiting one under
	// the same key: Merge(waiting, newer).
	Merge func(old, new V) V
	// Limit bounds the pushed values that wait; 0 is no bound. Put
	// values, one per key, never count against it.
	Limit int
}

// Queue is a latest-wins queue with kept pushes; see the package doc. Its
// methods are safe for concurrent use. After Close every Put and Push is
// a no-op, so a producer may outlive its consumer.
type Queue[K comparable, V any] struct {
	opts Options[V]
	wake chan struct{}

	mu      sync.Mutex
	order   list.List // of *entry[K, V], oldest first
	keyed   map[K]*list.Element
	pushed  int
	dropped int
	closed  bool
}

type entry[K comparable, V any] struct {
	key   K
	keyed bool
	v     V
}

// New makes an empty Queue.
func New[K comparable, V any](opts Options[V]) *Queue[K, V] {
	return &Queue[K, V]{opts: opts, wake: make(chan struct{}, 1), keyed: map[K]*list.Element{}}
}

// Put queues v under key: it replaces (or, with Merge, merges with) a
// value still waiting under key, in that value's place, or waits at the
// back if none does.
func (q *Queue[K, V]) Put(key K, v V) { q.put(key, v, false) }

// PutFront is Put for a value everything else waits behind, such as a
// window's size that every later frame is drawn to: it is taken next.
func (q *Queue[K, V]) PutFront(key K, v V) { q.put(key, v, true) }

func (q *Queue[K, V]) put(key K, v V, front bool) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	if el, ok := q.keyed[key]; ok {
		e := el.Value.(*entry[K, V])
		if q.opts.Merge != nil {
			v = q.opts.Merge(e.v, v)
		}
		e.v = v
		if front {
			q.order.MoveToFront(el)
		}
	} else {
		e := &entry[K, V]{key: key, keyed: true, v: v}
		if front {
			q.keyed[key] = q.order.PushFront(e)
		} else {
			q.keyed[key] = q.order.PushBack(e)
		}
	}
	q.mu.Unlock()
	q.signal()
}

// Push queues v at the back. It is never replaced; with a Limit, the
// oldest pushed value waiting goes when v makes one too many.
func (q *Queue[K, V]) Push(v V) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.order.PushBack(&entry[K, V]{v: v})
	q.pushed++
	if q.opts.Limit > 0 && q.pushed > q.opts.Limit {
		for el := q.order.Front(); el != nil; el = el.Next() {
			if !el.Value.(*entry[K, V]).keyed {
				q.order.Remove(el)
				q.pushed--
				q.dropped++
				break
			}
		}
	}
	q.mu.Unlock()
	q.signal()
}

func (q *Queue[K, V]) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Take removes and returns the value that has waited longest (a value
// put in front first); ok is false when none waits.
func (q *Queue[K, V]) Take() (v V, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	el := q.order.Front()
	if el == nil {
		return v, false
	}
	e := q.order.Remove(el).(*entry[K, V])
	if e.keyed {
		delete(q.keyed, e.key)
	} else {
		q.pushed--
	}
	return e.v, true
}

// Peek returns what Take would, leaving it waiting.
func (q *Queue[K, V]) Peek() (v V, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if el := q.order.Front(); el != nil {
		return el.Value.(*entry[K, V]).v, true
	}
	return v, false
}

// Has says whether a value waits under key.
func (q *Queue[K, V]) Has(key K) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.keyed[key]
	return ok
}

// Ready receives after a Put or a Push, for a consumer that takes with
// Take and also waits for something else (a retry's timer, its end). One
// receive may stand for many values, or for one taken already: take
// until Take says none waits, then wait again.
func (q *Queue[K, V]) Ready() <-chan struct{} { return q.wake }

// Wait is Take that waits for a value until one comes, the Queue is
// closed or stop is closed (stop may be nil); ok is false in the last two
// cases.
func (q *Queue[K, V]) Wait(stop <-chan struct{}) (v V, ok bool) {
	for {
		q.mu.Lock()
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return v, false
		}
		if v, ok := q.Take(); ok {
			return v, true
		}
		select {
		case <-q.wake:
		case <-stop:
			return v, false
		}
	}
}

// Deliver hands every value, in turn, to deliver until the Queue is
// closed or stop is. It is the Queue's one consumer: deliver may block
// (a busy program, a slow subscriber) while producers carry on, and what
// they put meanwhile is merged by the rules above.
func (q *Queue[K, V]) Deliver(stop <-chan struct{}, deliver func(V)) {
	for {
		v, ok := q.Wait(stop)
		if !ok {
			return
		}
		deliver(v)
	}
}

// Close drops what waits and ends Wait and Deliver; later Puts and Pushes
// are dropped silently. It may be called more than once.
func (q *Queue[K, V]) Close() {
	q.mu.Lock()
	q.closed = true
	q.order.Init()
	clear(q.keyed)
	q.pushed = 0
	q.mu.Unlock()
	q.signal()
}

// Len is how many values wait now.
func (q *Queue[K, V]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.order.Len()
}

// Dropped is how many pushed values went because of the Limit.
func (q *Queue[K, V]) Dropped() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped
}
