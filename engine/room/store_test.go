package room_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/scenario"
)

// admin is a connection of the test's own, beside the stores.
func admin(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	ctx := enginetest.Ctx(t)
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// fresh names a room for the test and drops its schema when the test ends,
// after the stores' own Close (cleanups run last first).
func fresh(t testing.TB, dsn, name string) string {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("dropping room %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{room.SchemaPrefix + name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping room %s: %v", name, err)
		}
	})
	return name
}

func open(t testing.TB, dsn, name, server string, opts room.Options) *room.Store {
	t.Helper()
	s, err := room.Open(enginetest.Ctx(t), dsn, name, server, opts)
	if err != nil {
		t.Fatalf("open room %s as %s: %v", name, server, err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Errorf("close %s: %v", server, err)
		}
	})
	return s
}

// recorder keeps what a subscriber and an OnError heard.
type recorder struct {
	mu     sync.Mutex
	events []room.Event
	errs   []error
}

func (r *recorder) event(e room.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) onError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

func (r *recorder) all() []room.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) errors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// count is how many events of kind were heard.
func (r *recorder) count(kind room.EventKind) int {
	n := 0
	for _, e := range r.all() {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// lead is the heard lead with seq, or nil.
func (r *recorder) lead(seq int64) *room.Lead {
	for _, e := range r.all() {
		if e.Kind == room.LeadChanged && e.Lead != nil && e.Lead.Seq == seq {
			return e.Lead
		}
	}
	return nil
}

// waitFor polls cond until it holds, failing the test after pgtest's
// WaitTimeout.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	pgtest.Eventually(t, what, cond)
}

func board(t testing.TB, s *room.Store) room.Board {
	t.Helper()
	b, err := s.Board(enginetest.Ctx(t))
	if err != nil {
		t.Fatalf("board: %v", err)
	}
	return b
}

func seatNames(b room.Board) []string {
	var out []string
	for _, s := range b.Seats {
		out = append(out, s.Name+"@"+s.Server)
	}
	return out
}

func join(t testing.TB, s *room.Store, name string) room.Seat {
	t.Helper()
	seat, err := s.Join(enginetest.Ctx(t), name)
	if err != nil {
		t.Fatalf("join %s: %v", name, err)
	}
	return seat
}

// Two stores on one PostgreSQL are two serve processes of one room: each
// sees the other's seats, in join order, and a report on one reaches the
// other's board and its subscriber.
func TestTwoServersFormOneRoom(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	name := fresh(t, dsn, "two_servers")
	a := open(t, dsn, name, "host-a:1", room.Options{})
	b := open(t, dsn, name, "host-b:2", room.Options{})
	var heard recorder
	defer a.Subscribe(heard.event)()

	alice := join(t, a, "alice")
	bob := join(t, b, "bob")
	carol := join(t, a, "carol")
	if alice.ID == bob.ID || alice.ID == carol.ID || bob.ID == carol.ID || alice.ID == "" {
		t.Fatalf("seat ids not unique: %q %q %q", alice.ID, bob.ID, carol.ID)
	}
	if bob.Server != "host-b:2" || bob.Name != "bob" || bob.Joined.IsZero() {
		t.Errorf("bob's seat %+v", bob)
	}
	want := []string{"alice@host-a:1", "bob@host-b:2", "carol@host-a:1"}
	for _, s := range []*room.Store{a, b} {
		if got := seatNames(board(t, s)); !slices.Equal(got, want) {
			t.Errorf("board of %s: seats %q, want %q", s.Room(), got, want)
		}
	}
	waitFor(t, "a's subscriber heard no board change after the joins",
		func() bool { return heard.count(room.BoardChanged) > 0 })

	// bob moves on b; a sees it.
	before := heard.count(room.BoardChanged)
	bob.Scenario, bob.Pos, bob.T, bob.Following = "renewal-race", 4, 1075, true
	bob.Knobs = scenario.Knobs{Renewal: scenario.RenewalCompare, Fencing: scenario.FencingMonotonic}
	if err := b.Report(ctx, bob); err != nil {
		t.Fatalf("report: %v", err)
	}
	waitFor(t, "a's subscriber heard no board change after bob's report",
		func() bool { return heard.count(room.BoardChanged) > before })
	got := board(t, a).Seats[1]
	if got.ID != bob.ID || got.Scenario != "renewal-race" || got.Pos != 4 || got.T != 1075 ||
		!got.Following || got.Knobs != bob.Knobs || !got.Seen.After(bob.Seen) || !got.Joined.Equal(bob.Joined) {
		t.Errorf("bob on a's board %+v after reporting %+v", got, bob)
	}
}

// A lead set on one serve process reaches the other's subscriber within a
// second, whole and in order: a pushed lead followed at once by another is
// not lost.
func TestLeadReachesEveryServer(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	name := fresh(t, dsn, "lead")
	presenter := open(t, dsn, name, "present:1", room.Options{})
	serve := open(t, dsn, name, "serve:2", room.Options{})
	var heard recorder
	defer serve.Subscribe(heard.event)()

	if l, err := serve.Lead(ctx); err != nil || l != nil {
		t.Fatalf("lead before any was set: %+v, %v", l, err)
	}
	push, err := presenter.SetLead(ctx, room.Lead{Scenario: "renewal-race", Pos: 3, T: 1070, Push: true,
		Knobs: scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingStrict}})
	if err != nil {
		t.Fatal(err)
	}
	next, err := presenter.SetLead(ctx, room.Lead{Scenario: "renewal-race", Pos: 4, T: 1075,
		Knobs: scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingStrict}})
	if err != nil {
		t.Fatal(err)
	}
	if push.Seq < 1 || next.Seq != push.Seq+1 {
		t.Fatalf("seqs %d then %d", push.Seq, next.Seq)
	}
	waitFor(t, "the second lead did not reach the other server",
		func() bool { return heard.lead(next.Seq) != nil })
	var leads []room.Lead
	for _, e := range heard.all() {
		if e.Kind == room.LeadChanged {
			if e.Room != name {
				t.Errorf("event for room %q", e.Room)
			}
			leads = append(leads, *e.Lead)
		}
	}
	if !slices.Equal(leads, []room.Lead{push, next}) {
		t.Errorf("heard leads %+v, want %+v", leads, []room.Lead{push, next})
	}
	if l, err := serve.Lead(ctx); err != nil || l == nil || *l != next {
		t.Errorf("Lead on the other server: %+v, %v; want %+v", l, err, next)
	}
	if b := board(t, presenter); b.Lead == nil || *b.Lead != next {
		t.Errorf("board's lead %+v, want %+v", b.Lead, next)
	}
}

// Votes reach the board's tally, one per seat and question; goals are
// counted per seat; a seat that leaves takes both with it.
func TestVotesAndGoalsReachTheBoard(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	name := fresh(t, dsn, "votes")
	a := open(t, dsn, name, "a", room.Options{})
	b := open(t, dsn, name, "b", room.Options{})
	alice, bob, carol := join(t, a, "alice"), join(t, b, "bob"), join(t, b, "carol")
	q1, q2 := "renewal-race@1075: does A's heartbeat apply?", "renewal-race@1080: conflict?"
	for _, v := range []room.Vote{
		{Seat: alice.ID, Question: q1, Choice: "yes"},
		{Seat: bob.ID, Question: q1, Choice: "yes"},
		{Seat: carol.ID, Question: q1, Choice: "yes"},
		{Seat: carol.ID, Question: q1, Choice: "no"}, // carol changes her mind
		{Seat: bob.ID, Question: q2, Choice: "conflict"},
	} {
		if err := b.Vote(ctx, v); err != nil {
			t.Fatalf("vote %+v: %v", v, err)
		}
	}
	for _, r := range []struct {
		seat, goal string
		moves      int
	}{{alice.ID, "break-it", 5}, {alice.ID, "break-it", 3}, {bob.ID, "break-it", 4}, {bob.ID, "fix-it", 6}} {
		if err := a.Reached(ctx, r.seat, "renewal-race", r.goal, r.moves); err != nil {
			t.Fatalf("reached: %v", err)
		}
	}
	bd := board(t, a)
	wantVotes := map[string]map[string]int{q1: {"yes": 2, "no": 1}, q2: {"conflict": 1}}
	if fmt.Sprint(bd.Votes) != fmt.Sprint(wantVotes) {
		t.Errorf("votes %v, want %v", bd.Votes, wantVotes)
	}
	wantGoals := map[string]int{"renewal-race/break-it": 2, "renewal-race/fix-it": 1}
	if fmt.Sprint(bd.Goals) != fmt.Sprint(wantGoals) {
		t.Errorf("goals %v, want %v", bd.Goals, wantGoals)
	}

	if err := a.Leave(ctx, bob.ID); err != nil {
		t.Fatal(err)
	}
	bd = board(t, b)
	wantVotes = map[string]map[string]int{q1: {"yes": 1, "no": 1}}
	if fmt.Sprint(bd.Votes) != fmt.Sprint(wantVotes) {
		t.Errorf("votes after bob left %v, want %v", bd.Votes, wantVotes)
	}
	if want := map[string]int{"renewal-race/break-it": 1}; fmt.Sprint(bd.Goals) != fmt.Sprint(want) {
		t.Errorf("goals after bob left %v, want %v", bd.Goals, want)
	}
	if err := a.Vote(ctx, room.Vote{Seat: bob.ID, Question: q1, Choice: "no"}); !errors.Is(err, room.ErrNoSeat) {
		t.Errorf("vote of a seat that left: %v, want ErrNoSeat", err)
	}
	if err := a.Reached(ctx, bob.ID, "renewal-race", "fix-it", 1); !errors.Is(err, room.ErrNoSeat) {
		t.Errorf("goal of a seat that left: %v, want ErrNoSeat", err)
	}
}

// Leave removes one seat, Close every seat of its process; what is gone
// says ErrNoSeat, and a closed store ErrClosed.
func TestLeaveAndCloseRemoveSeats(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	name := fresh(t, dsn, "leave")
	a := open(t, dsn, name, "a", room.Options{})
	b, err := room.Open(ctx, dsn, name, "b", room.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var heard recorder
	defer a.Subscribe(heard.event)()
	alice := join(t, a, "alice")
	bob, dave := join(t, b, "bob"), join(t, b, "dave")
	join(t, a, "carol")

	if err := b.Leave(ctx, alice.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.Leave(ctx, alice.ID); err != nil {
		t.Errorf("leaving twice: %v", err)
	}
	if got, want := seatNames(board(t, a)), []string{"bob@b", "dave@b", "carol@a"}; !slices.Equal(got, want) {
		t.Errorf("after alice left: %q, want %q", got, want)
	}
	if err := a.Report(ctx, alice); !errors.Is(err, room.ErrNoSeat) {
		t.Errorf("report of a seat that left: %v, want ErrNoSeat", err)
	}

	waitFor(t, "no board change heard", func() bool { return heard.count(room.BoardChanged) > 0 })
	before := heard.count(room.BoardChanged)
	if err := b.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := b.Close(ctx); err != nil {
		t.Errorf("second close: %v", err)
	}
	if got, want := seatNames(board(t, a)), []string{"carol@a"}; !slices.Equal(got, want) {
		t.Errorf("after b closed: %q, want %q", got, want)
	}
	waitFor(t, "a heard no board change when b closed",
		func() bool { return heard.count(room.BoardChanged) > before })
	if err := a.Report(ctx, dave); !errors.Is(err, room.ErrNoSeat) {
		t.Errorf("report of a seat of a closed server: %v, want ErrNoSeat", err)
	}
	if _, err := b.Join(ctx, "erin"); !errors.Is(err, room.ErrClosed) {
		t.Errorf("join on a closed store: %v, want ErrClosed", err)
	}
	if err := b.Report(ctx, bob); !errors.Is(err, room.ErrClosed) {
		t.Errorf("report on a closed store: %v, want ErrClosed", err)
	}
	if _, err := b.Board(ctx); !errors.Is(err, room.ErrClosed) {
		t.Errorf("board on a closed store: %v, want ErrClosed", err)
	}
}

// staleBeat says whether the process named server stopped beating for
// longer than its idle bound, by the server's clock.
func staleBeat(t testing.TB, c *pgx.Conn, name, server string) bool {
	t.Helper()
	var stale bool
	err := c.QueryRow(enginetest.Ctx(t), "SELECT beat < now() - idle_ms * interval '1 millisecond' FROM "+
		pgx.Identifier{room.SchemaPrefix + name, "servers"}.Sanitize()+" WHERE name = $1", server).Scan(&stale)
	if err != nil {
		t.Fatalf("beat of %s: %v", server, err)
	}
	return stale
}

// A serve process that dies leaves its seats behind; the periodic sweep of
// a live one removes them once the dead one has been silent for its idle
// bound, and the live one's own seats stay.
func TestSweepRemovesTheSeatsOfADeadServer(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	name := fresh(t, dsn, "sweep")
	opts := room.Options{Idle: time.Second}
	live := open(t, dsn, name, "live", opts)
	dead := open(t, dsn, name, "dead", opts)
	var heard recorder
	defer live.Subscribe(heard.event)()
	join(t, live, "alice")
	bob := join(t, dead, "bob")
	if err := dead.Vote(ctx, room.Vote{Seat: bob.ID, Question: "q", Choice: "yes"}); err != nil {
		t.Fatal(err)
	}
	dead.Crash()
	if got := seatNames(board(t, live)); !slices.Equal(got, []string{"alice@live", "bob@dead"}) {
		t.Fatalf("seats after the crash %q: the crash must leave bob behind", got)
	}

	began := time.Now()
	waitFor(t, "the dead server's seat was not swept", func() bool {
		return slices.Equal(seatNames(board(t, live)), []string{"alice@live"})
	})
	// Swept by the dead one's idle bound, not before.
	if took := time.Since(began); took < 500*time.Millisecond {
		t.Errorf("swept after %s, before the dead server was silent for its idle bound", took)
	}
	if bd := board(t, live); len(bd.Votes) != 0 {
		t.Errorf("the swept seat's vote is still counted: %v", bd.Votes)
	}
	waitFor(t, "no board change heard after the sweep",
		func() bool { return heard.count(room.BoardChanged) > 0 })
}

// Open sweeps too: a room whose only process died is cleaned up by the
// next one to open it, before Open returns.
func TestOpenSweepsTheSeatsOfADeadServer(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	name := fresh(t, dsn, "open_sweep")
	dead := open(t, dsn, name, "dead", room.Options{Idle: time.Second})
	join(t, dead, "bob")
	dead.Crash()
	c := admin(t, dsn)
	waitFor(t, "the dead server's beat did not go stale",
		func() bool { return staleBeat(t, c, name, "dead") })

	// A long idle bound: its own periodic sweep does not run in this test.
	next := open(t, dsn, name, "next", room.Options{Idle: time.Hour})
	if got := seatNames(board(t, next)); len(got) != 0 {
		t.Errorf("seats right after Open: %q, want none", got)
	}
}

// Two serve processes starting at once open the same new room.
func TestConcurrentOpensOfOneRoom(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	for round := range 3 {
		name := fresh(t, dsn, fmt.Sprintf("concurrent_%d", round))
		const n = 6
		stores := make([]*room.Store, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				stores[i], errs[i] = room.Open(ctx, dsn, name, fmt.Sprintf("s%d", i), room.Options{})
			})
		}
		close(start)
		wg.Wait()
		for i, s := range stores {
			if s != nil {
				t.Cleanup(func() { s.Close(context.Background()) })
			}
			if errs[i] != nil {
				t.Fatalf("round %d: open %d of %d at once: %v", round, i, n, errs[i])
			}
		}
		for i, s := range stores {
			join(t, s, fmt.Sprintf("p%d", i))
		}
		if got := board(t, stores[0]).Seats; len(got) != n {
			t.Errorf("round %d: %d seats, want %d", round, len(got), n)
		}
	}
}

// listeners lists the backend pids of the room's LISTEN connections.
func listeners(t testing.TB, c *pgx.Conn, name string) []int {
	t.Helper()
	rows, err := c.Query(enginetest.Ctx(t), "SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid",
		"leaserace room "+name+" listen")
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// The LISTEN connection terminated under it (as by a server restart), a
// store says so, reconnects, catches up with the lead it missed and hears
// the leads set after that.
func TestListenerSurvivesTerminatedConnection(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	name := fresh(t, dsn, "terminate")
	var heard recorder
	serve := open(t, dsn, name, "serve", room.Options{Idle: time.Second, OnError: heard.onError})
	defer serve.Subscribe(heard.event)()
	presenter := open(t, dsn, name, "present", room.Options{})
	var presenterHeard recorder
	defer presenter.Subscribe(presenterHeard.event)()
	first, err := presenter.SetLead(ctx, room.Lead{Scenario: "renewal-race", Pos: 1})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first lead did not arrive", func() bool { return heard.lead(first.Seq) != nil })

	c := admin(t, dsn)
	old := listeners(t, c, name)
	if len(old) != 2 {
		t.Fatalf("listeners %v, want one per store", old)
	}
	for _, pid := range old {
		if _, err := c.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the store did not report losing its LISTEN connection", func() bool {
		for _, err := range heard.errors() {
			var le *room.ListenError
			if errors.As(err, &le) && le.Room == name {
				return true
			}
		}
		return false
	})
	// Set while the store may still be away: it arrives all the same,
	// by NOTIFY or by the catch-up after reconnecting.
	missed, err := presenter.SetLead(ctx, room.Lead{Scenario: "renewal-race", Pos: 2})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the store did not reconnect", func() bool { return heard.count(room.Reconnected) > 0 })
	waitFor(t, "the lead set meanwhile did not arrive", func() bool { return heard.lead(missed.Seq) != nil })

	// Listening again: a lead set now arrives by NOTIFY.
	after, err := presenter.SetLead(ctx, room.Lead{Scenario: "renewal-race", Pos: 3, Push: true})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a lead set after the reconnect did not arrive",
		func() bool { return heard.lead(after.Seq) != nil })
	if got := heard.lead(after.Seq); *got != after {
		t.Errorf("heard %+v, want %+v", *got, after)
	}
	// The presenter's store reconnects on its own: its Reconnected event
	// says it listens again, and then both LISTEN connections are new.
	waitFor(t, "the presenter's store did not reconnect", func() bool { return presenterHeard.count(room.Reconnected) > 0 })
	if now := listeners(t, c, name); len(now) != 2 || slices.Contains(now, old[0]) || slices.Contains(now, old[1]) {
		t.Errorf("listeners now %v, before %v: want two new ones", now, old)
	}
}

func TestBadNamesRefused(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "Room", "a-b", "x;drop", "a b", "é", `"q"`, strings.Repeat("a", 41)} {
		// No server: a bad name is refused before any connection.
		_, err := room.Open(context.Background(), "postgres://nobody@127.0.0.1:1/none", name, "s", room.Options{})
		if !errors.Is(err, room.ErrRoomName) {
			t.Errorf("room name %q: %v, want ErrRoomName", name, err)
		}
	}
	for _, name := range []string{"a", "room_1", "2026", strings.Repeat("z", 40)} {
		if err := room.ValidRoom(name); err != nil {
			t.Errorf("room name %q refused: %v", name, err)
		}
	}

	dsn := pgtest.DSN(t)
	s := open(t, dsn, fresh(t, dsn, "names"), "s", room.Options{})
	for _, name := range []string{"", "\x1b]0;pwned\a", "tab\there", strings.Repeat("n", 65), "\xff"} {
		if _, err := s.Join(enginetest.Ctx(t), name); !errors.Is(err, room.ErrSeatName) {
			t.Errorf("attendee name %q: %v, want ErrSeatName", name, err)
		}
	}
	if seat, err := s.Join(enginetest.Ctx(t), "Zoë O'Brien"); err != nil || seat.Name != "Zoë O'Brien" {
		t.Errorf("a plain name with a quote: %+v, %v", seat, err)
	}
}

// TestIdleBoundsRefused: an idle bound shorter than the store's beat can
// keep up with is refused before any connection; 0 is the default.
func TestIdleBoundsRefused(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{-time.Second, time.Millisecond, 299 * time.Millisecond} {
		if err := room.ValidIdle(d); !errors.Is(err, room.ErrIdleTooShort) {
			t.Errorf("idle %s: %v, want ErrIdleTooShort", d, err)
		}
		// No server: refused before any connection.
		_, err := room.Open(context.Background(), "postgres://nobody@127.0.0.1:1/none", "idle", "s", room.Options{Idle: d})
		if !errors.Is(err, room.ErrIdleTooShort) {
			t.Errorf("Open with idle %s: %v, want ErrIdleTooShort", d, err)
		}
	}
	for _, d := range []time.Duration{0, 300 * time.Millisecond, time.Minute} {
		if err := room.ValidIdle(d); err != nil {
			t.Errorf("idle %s refused: %v", d, err)
		}
	}
}

// Drop ends the room: every process hears it, the schema is gone, the
// stores say ErrEnded and still close cleanly, and no connection stays.
func TestDropLeavesNothing(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	name := fresh(t, dsn, "drop")
	presenter, err := room.Open(ctx, dsn, name, "present", room.Options{})
	if err != nil {
		t.Fatal(err)
	}
	serve, err := room.Open(ctx, dsn, name, "serve", room.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var heard recorder
	defer serve.Subscribe(heard.event)()
	alice := join(t, serve, "alice")
	if err := serve.Vote(ctx, room.Vote{Seat: alice.ID, Question: "q", Choice: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := presenter.SetLead(ctx, room.Lead{Scenario: "renewal-race"}); err != nil {
		t.Fatal(err)
	}

	if err := presenter.Drop(ctx); err != nil {
		t.Fatalf("drop: %v", err)
	}
	waitFor(t, "the other server did not hear the room end",
		func() bool { return heard.count(room.RoomEnded) > 0 })
	c := admin(t, dsn)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", presenter.Schema()).Scan(&n); err != nil || n != 0 {
		t.Errorf("schema %s after Drop: %d, %v", presenter.Schema(), n, err)
	}
	if err := serve.Report(ctx, alice); !errors.Is(err, room.ErrEnded) {
		t.Errorf("report after the room ended: %v, want ErrEnded", err)
	}
	if _, err := serve.Board(ctx); !errors.Is(err, room.ErrEnded) {
		t.Errorf("board after the room ended: %v, want ErrEnded", err)
	}
	for _, s := range []*room.Store{serve, presenter} {
		if err := s.Close(ctx); err != nil {
			t.Errorf("close after the room ended: %v", err)
		}
	}
	// The server drops a closed session's backend a moment after the
	// client has gone.
	waitFor(t, "every connection of the room gone after Close", func() bool {
		if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE $1",
			"leaserace room "+name+"%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
}

// A burst of reports from many attendees reaches the presenter as a few
// board events, and the store never holds more than MaxConns connections.
func TestBoardEventsAreDebouncedAndConnectionsBounded(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	name := fresh(t, dsn, "burst")
	const debounce = 100 * time.Millisecond
	serve := open(t, dsn, name, "serve", room.Options{})
	presenter := open(t, dsn, name, "present", room.Options{Debounce: debounce})
	if serve.MaxConns() != 2 {
		t.Errorf("MaxConns %d, want 2 (a pool of one and the listener)", serve.MaxConns())
	}
	var heard recorder
	defer presenter.Subscribe(heard.event)()
	var seats []room.Seat
	for i := range 20 {
		seats = append(seats, join(t, serve, fmt.Sprintf("p%02d", i)))
	}
	waitFor(t, "no board event after the joins", func() bool { return heard.count(room.BoardChanged) > 0 })
	heard.mu.Lock()
	heard.events = nil
	heard.mu.Unlock()

	c := admin(t, dsn)
	conns := func() int {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE $1",
			"leaserace room "+name+"%").Scan(&n); err != nil {
			t.Error(err)
		}
		return n
	}
	began := time.Now()
	var wg sync.WaitGroup
	var reports sync.WaitGroup
	most := 0
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			most = max(most, conns())
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	for _, seat := range seats {
		reports.Go(func() {
			for pos := range 10 {
				seat.Pos = pos
				if err := serve.Report(ctx, seat); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	reports.Wait()
	close(stop)
	wg.Wait()
	// Both stores: two each.
	if most > 4 || most == 0 {
		t.Errorf("at most %d connections of the room during the burst, want 1 to 4 (two stores of two)", most)
	}
	// Quiet for a few debounce windows: every event of the burst is in.
	last, since := -1, time.Now()
	waitFor(t, "board events kept coming after the burst", func() bool {
		if n := heard.count(room.BoardChanged); n != last {
			last, since = n, time.Now()
			return false
		}
		return last > 0 && time.Since(since) >= 3*debounce
	})
	span := time.Since(began)
	n := heard.count(room.BoardChanged)
	// Each event closes a window of at least debounce.
	if limit := int(span/debounce) + 1; n > limit {
		t.Errorf("%d board events for 200 reports in %s, want at most %d", n, span, limit)
	}
	t.Logf("200 reports, %d board events in %s", n, span)
}

// A subscriber that panics is reported and goes on hearing events.
func TestPanickingSubscriberGoesOn(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	name := fresh(t, dsn, "panic")
	var heard recorder
	s := open(t, dsn, name, "s", room.Options{OnError: heard.onError})
	var once sync.Once
	defer s.Subscribe(func(e room.Event) {
		once.Do(func() { panic("subscriber bug") })
		heard.event(e)
	})()
	first, err := s.SetLead(ctx, room.Lead{Scenario: "a"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.SetLead(ctx, room.Lead{Scenario: "b"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the lead after the panic did not arrive", func() bool { return heard.lead(second.Seq) != nil })
	if heard.lead(first.Seq) != nil {
		t.Errorf("the event whose call panicked was recorded")
	}
	var pe *engine.PanicError
	if errs := heard.errors(); len(errs) != 1 || !errors.As(errs[0], &pe) || pe.Value != "subscriber bug" {
		t.Errorf("errors reported %v, want the subscriber's panic", errs)
	}
}

// A connection string that cannot be read or reached never shows its
// password in the error.
func TestOpenKeepsPasswordsOutOfErrors(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"postgres://u:sekrit-pw@127.0.0.1:notaport/db",
		"host=127.0.0.1 port=1 user=u password=sekrit-pw connect_timeout=2 sslmode=disable",
	} {
		_, err := room.Open(enginetest.Ctx(t), dsn, "pw", "s", room.Options{})
		if err == nil || strings.Contains(err.Error(), "sekrit") {
			t.Errorf("open with %s: %v", strings.Fields(dsn)[0], err)
		}
	}
	if _, err := room.Open(enginetest.Ctx(t), "", "pw", "s\x1b[2J", room.Options{}); err == nil {
		t.Error("a process name with an escape sequence was taken")
	}
}
