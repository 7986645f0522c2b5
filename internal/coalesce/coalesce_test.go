package coalesce

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
)

// drain takes everything waiting, in order.
func drain[K comparable, V any](q *Queue[K, V]) []V {
	var out []V
	for {
		v, ok := q.Take()
		if !ok {
			return out
		}
		out = append(out, v)
	}
}

// TestPutIsLatestWinsInPlace: a value put under a waiting key replaces it
// where it waits; pushed values are all kept, in order.
func TestPutIsLatestWinsInPlace(t *testing.T) {
	q := New[string, string](Options[string]{})
	q.Push("report 1")
	q.Put("board", "board A")
	q.Push("report 2")
	q.Put("board", "board B")
	q.Push("report 3")
	if v, ok := q.Peek(); !ok || v != "report 1" || q.Len() != 4 || !q.Has("board") || q.Has("frame") {
		t.Errorf("Peek %q (%v), %d waiting, board waits %v, frame waits %v; want report 1 of 4, a board and no frame",
			v, ok, q.Len(), q.Has("board"), q.Has("frame"))
	}
	if got, want := drain(q), []string{"report 1", "board B", "report 2", "report 3"}; !slices.Equal(got, want) {
		t.Errorf("took %q, want %q", got, want)
	}
	q.Put("board", "board C") // the key waits no more: back of the line
	q.Push("report 4")
	if got, want := drain(q), []string{"board C", "report 4"}; !slices.Equal(got, want) {
		t.Errorf("after a take: took %q, want %q", got, want)
	}
	if _, ok := q.Peek(); ok || q.Has("board") {
		t.Error("an empty queue has something to peek at, or a board")
	}
}

// TestMergeCarriesOverWhatMustNotBeLost: a push flag on a waiting lead
// survives a newer lead that replaces it.
func TestMergeCarriesOverWhatMustNotBeLost(t *testing.T) {
	type lead struct {
		pos  int
		push bool
	}
	q := New[string, lead](Options[lead]{Merge: func(old, new lead) lead {
		new.push = new.push || old.push
		return new
	}})
	q.Put("lead", lead{pos: 1})
	q.Put("lead", lead{pos: 2, push: true})
	q.Put("lead", lead{pos: 3})
	if got := drain(q); len(got) != 1 || got[0] != (lead{pos: 3, push: true}) {
		t.Errorf("took %+v, want one lead at 3 that still pushes", got)
	}
}

// TestPutFrontGoesFirst: a size put in front is taken before what waits,
// and a newer size moves the waiting one to the front.
func TestPutFrontGoesFirst(t *testing.T) {
	q := New[string, string](Options[string]{})
	q.Push("a")
	q.PutFront("size", "80x24")
	q.Push("b")
	q.PutFront("size", "100x30")
	if got, want := drain(q), []string{"100x30", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("took %q, want %q", got, want)
	}
}

// TestLimitDropsTheOldestPush: past the limit the oldest pushed value goes
// and is counted; a put value neither counts nor goes.
func TestLimitDropsTheOldestPush(t *testing.T) {
	q := New[string, int](Options[int]{Limit: 3})
	q.Put("size", -1)
	for i := range 5 {
		q.Push(i)
	}
	if q.Dropped() != 2 || q.Len() != 4 {
		t.Errorf("dropped %d with %d waiting, want 2 dropped and 4 waiting", q.Dropped(), q.Len())
	}
	if got, want := drain(q), []int{-1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("took %v, want %v", got, want)
	}
}

// TestCloseDropsAndRefuses: Close drops what waits, later values are
// dropped silently, and Wait returns at once.
func TestCloseDropsAndRefuses(t *testing.T) {
	q := New[string, int](Options[int]{})
	q.Push(1)
	q.Close()
	q.Push(2)
	q.Put("k", 3)
	q.PutFront("k", 4)
	q.Close()
	if n := q.Len(); n != 0 {
		t.Errorf("%d values wait after Close", n)
	}
	if _, ok := q.Wait(nil); ok {
		t.Error("Wait took a value from a closed queue")
	}
}

// TestDeliverWhileTheConsumerIsBusy, in a bubble: while the consumer is
// held on one value, frames put meanwhile merge into the newest and
// reports pushed meanwhile all arrive, in order; Deliver ends when the
// queue is closed, and also when stop is.
func TestDeliverWhileTheConsumerIsBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New[string, string](Options[string]{})
		hold := make(chan struct{})
		var got []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			q.Deliver(nil, func(v string) {
				got = append(got, v)
				if v == "frame 0" {
					<-hold
				}
			})
		}()
		q.Put("frame", "frame 0")
		synctest.Wait() // the consumer holds frame 0
		for i := 1; i <= 50; i++ {
			q.Put("frame", fmt.Sprint("frame ", i))
			if i%10 == 0 {
				q.Push(fmt.Sprint("report ", i/10))
			}
		}
		close(hold)
		synctest.Wait() // everything delivered; Deliver waits for more
		want := []string{"frame 0", "frame 50", "report 1", "report 2", "report 3", "report 4", "report 5"}
		if !slices.Equal(got, want) {
			t.Errorf("delivered %q, want %q", got, want)
		}
		q.Close()
		<-done

		stop := make(chan struct{})
		q2 := New[string, string](Options[string]{})
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			q2.Deliver(stop, func(string) { t.Error("delivered from an empty queue") })
		}()
		synctest.Wait()
		close(stop)
		<-ended
	})
}
