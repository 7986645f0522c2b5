package workshop

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/tui"
)

// TestReportsRetryThroughAnOutage drives one attendee's queue against a
// real room whose seats table another session holds locked for longer
// than a try may take, so tries fail and are made again: seat reports
// merge into the newest, goals keep the fewest moves, votes wait one per
// question, a full queue makes the reporter wait instead of dropping, the
// screen hears of the outage once it passes the bound and hears it end,
// and everything lands once the lock goes.
func TestReportsRetryThroughAnOutage(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := pgtest.DSN(t)
	dsn := pgtest.ScratchDSN(t, base, "lr_ws_")
	store, err := room.Open(ctx, dsn, "outage", "test", room.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = store.Close(context.Background()) }()
	seat, err := store.Join(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())

	notes := make(chan tui.RoomNoticeMsg, 16)
	var stats Backlog
	q := newReports(store, func(m tea.Msg) { notes <- m.(tui.RoomNoticeMsg) }, &stats)
	defer q.stop()
	q.attempt, q.outage = 200*time.Millisecond, time.Second

	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, "LOCK TABLE lr_room_outage.seats IN SHARE MODE"); err != nil {
		t.Fatal(err)
	}

	for p := 1; p <= 20; p++ {
		s := seat
		s.Scenario, s.Pos = "renewal-race", p
		if err := q.Report(ctx, s); err != nil {
			t.Fatal(err)
		}
		if d := q.Depth(); d != 1 {
			t.Fatalf("after %d seat reports %d wait, want 1: they merge", p, d)
		}
	}
	for _, moves := range []int{7, 3, 5} {
		if err := q.Reached(ctx, seat.ID, "renewal-race", "stale-write", moves); err != nil {
			t.Fatal(err)
		}
	}
	// Votes wait behind the seat report, one per question, until the
	// queue is full; then a vote waits for a place (here until its
	// context ends) and is not dropped.
	for i := 0; q.Depth() < maxPending; i++ {
		if err := q.Vote(ctx, room.Vote{Seat: seat.ID, Question: string(rune('a'+i%26)) + string(rune('0'+i/26)), Choice: "1"}); err != nil {
			t.Fatal(err)
		}
	}
	full, cancelFull := context.WithTimeout(ctx, 300*time.Millisecond)
	err = q.Vote(full, room.Vote{Seat: seat.ID, Question: "one too many", Choice: "2"})
	cancelFull()
	if !errors.Is(err, context.DeadlineExceeded) || q.Depth() != maxPending {
		t.Fatalf("a vote into a full queue: %v with %d waiting; want it to wait for a place, %d waiting", err, q.Depth(), maxPending)
	}
	// Another vote on a question already waiting takes no new place.
	if err := q.Vote(ctx, room.Vote{Seat: seat.ID, Question: "a0", Choice: "2"}); err != nil {
		t.Fatal(err)
	}

	n := <-notes
	if n.Lost || n.Waiting < time.Second || n.Err == nil {
		t.Fatalf("the outage notice: %+v; want a wait of 1 s or more, still retrying, with the last failure", n)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := <-notes; n != (tui.RoomNoticeMsg{}) {
		t.Fatalf("after the outage: %+v, want the all-clear", n)
	}

	var pos, moves, votes int
	var a0 string
	if err := admin.QueryRow(ctx, "SELECT pos FROM lr_room_outage.seats WHERE id = $1", seat.ID).Scan(&pos); err != nil {
		t.Fatal(err)
	}
	if err := admin.QueryRow(ctx, "SELECT moves FROM lr_room_outage.goals WHERE seat = $1", seat.ID).Scan(&moves); err != nil {
		t.Fatal(err)
	}
	if err := admin.QueryRow(ctx, "SELECT count(*), max(choice) FILTER (WHERE question = 'a0') FROM lr_room_outage.votes WHERE seat = $1", seat.ID).Scan(&votes, &a0); err != nil {
		t.Fatal(err)
	}
	if pos != 20 || moves != 3 || votes != maxPending-2 || a0 != "2" {
		t.Errorf("landed: pos %d, goal in %d moves, %d votes (a0 %q); want 20, 3, %d, \"2\"", pos, moves, votes, a0, maxPending-2)
	}
	st := stats.Stats()
	if st.Retries == 0 || st.Waiting != 0 || st.MaxDepth != maxPending || st.MaxAge < time.Second || st.Refused != 0 {
		t.Errorf("backlog %+v: want retries, none waiting, a depth of %d, an age of 1 s or more, none refused", st, maxPending)
	}

	// A report the room refuses for good is said once, not retried.
	gone := seat
	gone.ID = "no-such-seat"
	if err := q.Report(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if n := <-notes; !n.Lost || !errors.Is(n.Err, room.ErrNoSeat) {
		t.Fatalf("a report of a seat that is gone: %+v, want it lost with ErrNoSeat", n)
	}
	if d := q.Depth(); d != 0 {
		t.Errorf("%d reports wait after the refusal, want 0", d)
	}
}

// TestSeatBatcherSendsWhatWaitsTogether: seat reports that wait at the same moment
// go in one round trip, each gets its own result (a seat that is gone gets
// ErrNoSeat, the others land), and a seat reported twice lands its newest.
func TestSeatBatcherSendsWhatWaitsTogether(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := pgtest.DSN(t)
	dsn := pgtest.ScratchDSN(t, base, "lr_ws_")
	store, err := room.Open(ctx, dsn, "batch", "test", room.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = store.Close(context.Background()) }()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	const n = 40
	seats := make([]room.Seat, n)
	for i := range seats {
		if seats[i], err = store.Join(ctx, fmt.Sprintf("s%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	b := newSeatBatcher(store)
	defer b.stop()
	// Hold the table so every report waits for the one under way.
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, "LOCK TABLE lr_room_batch.seats IN SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2*n+1)
	report := func(s room.Seat) { errs <- b.Report(ctx, s) }
	first := seats[0]
	first.Pos = 1
	go report(first)
	// The first report is on its way (stuck on the lock); the rest pile up.
	waitLocked(t, ctx, tx)
	pending := func(want int) {
		t.Helper()
		// Tens of goroutines each start a report, on a machine that may be
		// loaded: three times the usual wait.
		for end := time.Now().Add(3 * pgtest.WaitTimeout()); ; time.Sleep(10 * time.Millisecond) {
			b.mu.Lock()
			k := len(b.pending)
			b.mu.Unlock()
			if k == want {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("%d reports waiting, want %d", k, want)
			}
		}
	}
	// Every seat twice, the newer after the older.
	for i, pos := range []int{2, 3} {
		for _, s := range seats {
			s.Pos = pos
			go report(s)
		}
		pending((i + 1) * n)
	}
	gone := seats[1]
	gone.ID = "gone"
	go report(gone)
	pending(2*n + 1)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var noSeat int
	for range 2*n + 2 {
		if err := <-errs; errors.Is(err, room.ErrNoSeat) {
			noSeat++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if noSeat != 1 {
		t.Errorf("%d reports refused as ErrNoSeat, want the one seat that is gone", noSeat)
	}
	var wrong int
	if err := admin.QueryRow(ctx, "SELECT count(*) FILTER (WHERE pos <> 3) FROM lr_room_batch.seats").Scan(&wrong); err != nil {
		t.Fatal(err)
	}
	if wrong != 0 {
		t.Errorf("%d seats did not land their newest position", wrong)
	}
}

// waitLocked waits until a report waits on the lock tx holds.
func waitLocked(t *testing.T, ctx context.Context, tx pgx.Tx) {
	t.Helper()
	// The report may first need a new connection to PostgreSQL before it
	// waits on the lock: three times the usual wait.
	limit := 3 * pgtest.WaitTimeout()
	for end := time.Now().Add(limit); ; time.Sleep(10 * time.Millisecond) {
		var k int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()").Scan(&k); err != nil {
			t.Fatal(err)
		}
		if k > 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("no report waited on the lock within %s", limit)
		}
	}
}
