package room

import (
	"slices"
	"testing"
	"testing/synctest"
)

// TestSlowSubscriberInABubble: while a subscriber is held on one event,
// board changes that pile up behind it are one, in the place of the first;
// every other event is kept, in order; after stop, nothing more is
// delivered.
func TestSlowSubscriberInABubble(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hold := make(chan struct{})
		var got []EventKind
		var seqs []int64
		sub := newSubscription(func(e Event) {
			got = append(got, e.Kind)
			if e.Lead != nil {
				seqs = append(seqs, e.Lead.Seq)
			}
			if len(got) == 1 {
				<-hold
			}
		})
		ran := make(chan struct{})
		go func() {
			defer close(ran)
			sub.run(&Store{})
		}()
		sub.add(Event{Kind: LeadChanged, Lead: &Lead{Seq: 1}})
		synctest.Wait() // the subscriber holds the first lead
		sub.add(Event{Kind: BoardChanged})
		sub.add(Event{Kind: LeadChanged, Lead: &Lead{Seq: 2}})
		sub.add(Event{Kind: BoardChanged})
		sub.add(Event{Kind: Reconnected})
		sub.add(Event{Kind: BoardChanged})
		close(hold)
		synctest.Wait()
		want := []EventKind{LeadChanged, BoardChanged, LeadChanged, Reconnected}
		if !slices.Equal(got, want) || !slices.Equal(seqs, []int64{1, 2}) {
			t.Errorf("delivered %v (leads %v), want %v (leads [1 2])", got, seqs, want)
		}
		sub.end()
		sub.add(Event{Kind: LeadChanged, Lead: &Lead{Seq: 3}})
		<-ran
		if len(got) != len(want) {
			t.Errorf("delivered %v after stop", got[len(want):])
		}
	})
}
