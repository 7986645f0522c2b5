package workshop_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/workshop"
)

// TestSlowRoomDelaysReports: a room that cannot take an attendee's reports
// for longer than a report used to be given (5 s) takes them late instead.
// Another session holds the room's seats table in SHARE mode, for real, so
// the attendee's report waits on PostgreSQL's lock; the attendee steps on
// meanwhile. Once the lock goes, the board has the attendee's newest
// position, and their screen never said the room did not take a report.
func TestSlowRoomDelaysReports(t *testing.T) {
	t.Parallel()
	d := scratch(t)
	r := serve(t, d, workshop.Config{Room: "slow"})
	c := attend(t, r, "ada")
	ctx := testCtx(t)
	seats := pgx.Identifier{"lr_room_slow", "seats"}.Sanitize()
	pos := func() int {
		var p int
		if err := d.admin.QueryRow(ctx, "SELECT pos FROM "+seats+" WHERE name = 'ada'").Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	waitFor(t, pgtest.WaitTimeout(), "ada's seat at event 0", func() bool { return pos() == 0 })

	lock, err := pgx.Connect(ctx, d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(ctx)
	tx, err := lock.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// SHARE blocks the seat's UPDATE and lets the test read it.
	if _, err := tx.Exec(ctx, "LOCK TABLE "+seats+" IN SHARE MODE"); err != nil {
		t.Fatal(err)
	}

	c.Press("l")
	c.WaitScreen(pgtest.WaitTimeout(), event(1))
	// The report is stuck on the lock: wait until it has been for longer
	// than the old give-up, by the server's clock, stepping on meanwhile.
	blocked := func(atLeast string) bool {
		var n int
		err := lock.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'
			AND application_name = 'leaserace room slow' AND clock_timestamp() - query_start > $1::interval`, atLeast).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	waitFor(t, pgtest.WaitTimeout(), "a report waiting on the lock", func() bool { return blocked("0 s") })
	c.Press("l")
	c.WaitScreen(pgtest.WaitTimeout(), event(2))
	c.Press("l")
	c.WaitScreen(pgtest.WaitTimeout(), event(3))
	// The report must wait 6 s on the lock before this holds: twice the
	// usual wait.
	waitFor(t, 2*pgtest.WaitTimeout(), "a report waiting on the lock for 6 s", func() bool { return blocked("6 s") })
	if p := pos(); p != 0 {
		t.Fatalf("the board moved to %d while its table was locked", p)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// Once the lock goes, the report stuck on it lands, then the newest
	// position in a try of its own: twice the usual wait.
	waitFor(t, 2*pgtest.WaitTimeout(), "ada's newest position on the board", func() bool { return pos() == 3 })
	// The board row commits before the queue counts the report as landed:
	// wait for the queue to say so too, then judge its figures.
	waitFor(t, pgtest.WaitTimeout(), "the report queue to drain", func() bool { return r.Backlog().Waiting == 0 })
	c.WaitScreen(pgtest.WaitTimeout(), event(3))
	for _, bad := range []string{"did not take", "has not taken"} {
		if strings.Contains(c.Output(), bad) {
			t.Errorf("the attendee's screen said the room %s a report:\n%s", bad, c.Screen())
		}
	}
	st := r.Backlog()
	if st.MaxAge < 6*time.Second || st.Refused != 0 || st.Waiting != 0 {
		t.Errorf("backlog %+v: want a report that waited 6 s or more, none refused, none waiting", st)
	}
	t.Logf("backlog: %+v", st)
}
