package workshop

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/room"
)

// TestSeatReportsNewestWins: reports of one seat made faster than the room
// takes them are written one at a time, the newest last, and those
// overtaken while waiting are not written at all.
func TestSeatReportsNewestWins(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("reports_%d", time.Now().UnixNano())
	store, err := room.Open(ctx, dsn, name, "test", room.Options{Conns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = store.Drop(context.Background())
		_ = store.Close(context.Background())
	})
	seat, err := store.Join(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	l := newSeatLink(store, nil)

	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			s := seat
			s.Pos = i
			errs <- l.Report(ctx, s)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Report: %v", err)
		}
	}
	last := seat
	last.Pos, last.T = 999, 1135
	if err := l.Report(ctx, last); err != nil {
		t.Fatal(err)
	}
	b, err := store.Board(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Seats) != 1 || b.Seats[0].Pos != 999 {
		t.Errorf("after the last report the board shows %+v, want alice at 999", b.Seats)
	}
	if w := l.written.Load(); w >= n+1 {
		t.Errorf("%d reports written of %d asked: none was left out", w, n+1)
	} else {
		t.Logf("%d reports written of %d asked", w, n+1)
	}

	// A context that ends while an earlier report is written says so.
	l.writing <- struct{}{}
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	if err := l.Report(short, last); err == nil {
		t.Errorf("a report that could not be written in time returned nil")
	}
	<-l.writing
}
