package workshop_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/sshroom"
	"github.com/leaserace/leaserace/sshroom/sshtest"
	"github.com/leaserace/leaserace/workshop"
	"go.uber.org/goleak"
)

// TestAttendeesStepIndependently: two attendees, each with a run of their
// own, step apart: each screen shows its own position and each schema its
// own rows. The session that changes alice's lease is named for her, the
// actor and her run's schema, and no statement of hers names another.
func TestAttendeesStepIndependently(t *testing.T) {
	t.Parallel()
	d := scratch(t)
	r := serve(t, d, workshop.Config{Room: "apart"})
	alice, aliceRun := attendRun(t, d, r, "alice")
	bob, bobRun := attendRun(t, d, r, "bob")
	if aliceRun == bobRun {
		t.Fatalf("alice and bob share the run schema %s", aliceRun)
	}

	// Every change to alice's lease row records the application_name of
	// the session that made it: a sample of pg_stat_activity can miss a
	// statement as short as B's takeover, a trigger cannot.
	auditLeaseWriters(t, d, aliceRun)
	// Watch pg_stat_activity from a connection of its own while alice steps.
	seen := watchAppNames(t, d)
	alice.Press("l")
	alice.WaitScreen(pgtest.WaitTimeout(), event(1))
	alice.Press("l")
	alice.WaitScreen(pgtest.WaitTimeout(), event(2))
	alice.Press("l")
	alice.WaitScreen(pgtest.WaitTimeout(), event(3), "B acquire", "UPDATE 1")
	names := seen()

	if got, want := d.lease(t, aliceRun), (lease{owner: "B", fence: 2}); got != want {
		t.Errorf("alice's lease after B's takeover: %+v, want %+v", got, want)
	}
	if got, want := d.lease(t, bobRun), (lease{owner: "A", fence: 1}); got != want {
		t.Errorf("bob's lease, who has not moved: %+v, want %+v", got, want)
	}
	if scr := bob.Screen(); !strings.Contains(scr, event(0)) {
		t.Errorf("alice's steps moved bob; he sees:\n%s", scr)
	}

	bob.Press("l")
	bob.WaitScreen(pgtest.WaitTimeout(), event(1))
	// Not a pause: the board has bob's step, and alice's program handles a
	// key of hers after it (full help on); only then is her unchanged
	// screen evidence that bob's step did not move her.
	waitFor(t, pgtest.WaitTimeout(), "the board showing bob at event 1", func() bool { return seatOf(t, r.Store(), "bob").Pos == 1 })
	alice.Press("?")
	if scr := alice.WaitScreen(pgtest.WaitTimeout(), fullHelp); !strings.Contains(scr, event(3)) {
		t.Errorf("bob's step moved alice; she sees:\n%s", scr)
	}
	if got, want := d.lease(t, aliceRun), (lease{owner: "B", fence: 2}); got != want {
		t.Errorf("alice's lease after bob's step: %+v, want %+v", got, want)
	}

	// B's takeover ran as "leaserace alice B <schema>".
	want := "leaserace alice B " + aliceRun
	if writers := leaseWriters(t, d, aliceRun); !slices.Contains(writers, want) {
		t.Errorf("no change to alice's lease was made by a session named %q; the sessions that changed it were named %q", want, writers)
	}
	// A pooled connection keeps the name of the batch it last ran, and pgx
	// prepares a new statement in a round trip of its own, before the batch
	// that names the connection anew: a row may so show bob's old name on
	// alice's way in. No row may name alice with another schema.
	for _, n := range names {
		if strings.HasPrefix(n, "leaserace alice ") && !strings.HasSuffix(n, " "+aliceRun) {
			t.Errorf("a statement of alice's names another schema: %q", n)
		}
	}

	// The board says where each is.
	b, err := r.Store().Board(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	where := map[string]int{}
	for _, s := range b.Seats {
		where[s.Name] = s.Pos
	}
	if where["alice"] != 3 || where["bob"] != 1 || len(where) != 2 {
		t.Errorf("the board's seats: %+v, want alice at 3 and bob at 1", b.Seats)
	}
}

// auditLeaseWriters adds a trigger to the leases table of schema that
// records, for every row inserted or updated, the application_name of the
// session doing it.
func auditLeaseWriters(t *testing.T, d db, schema string) {
	t.Helper()
	audit := pgx.Identifier{schema, "lr_test_writers"}.Sanitize()
	fn := pgx.Identifier{schema, "lr_test_record_writer"}.Sanitize()
	for _, q := range []string{
		"CREATE TABLE " + audit + " (name text NOT NULL)",
		"CREATE FUNCTION " + fn + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO " + audit +
			" VALUES (current_setting('application_name')); RETURN NULL; END $$",
		"CREATE TRIGGER lr_test_record_writer AFTER INSERT OR UPDATE ON " + pgx.Identifier{schema, "leases"}.Sanitize() +
			" FOR EACH ROW EXECUTE FUNCTION " + fn + "()",
	} {
		if _, err := d.admin.Exec(testCtx(t), q); err != nil {
			t.Fatalf("auditing the lease writers of %s: %v", schema, err)
		}
	}
}

// leaseWriters is what auditLeaseWriters recorded, without repeats.
func leaseWriters(t *testing.T, d db, schema string) []string {
	t.Helper()
	rows, err := d.admin.Query(testCtx(t), "SELECT DISTINCT name FROM "+pgx.Identifier{schema, "lr_test_writers"}.Sanitize()+" ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// watchAppNames polls pg_stat_activity for the database's sessions until
// the returned function is called, which returns the application_name of
// every statement that started meanwhile, sorted and without repeats. A
// row caught while its batch's first statement names the connection anew
// still shows the name before; such rows are left out.
func watchAppNames(t *testing.T, d db) func() []string {
	t.Helper()
	conn, err := pgx.Connect(testCtx(t), d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	var since time.Time
	if err := conn.QueryRow(testCtx(t), "SELECT clock_timestamp()").Scan(&since); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	seen := map[string]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			rows, _ := conn.Query(ctx, `SELECT application_name FROM pg_stat_activity
				WHERE datname = $1 AND pid <> pg_backend_pid() AND query_start >= $2
				AND query NOT LIKE '%set_config(''application_name''%'`, d.name, since)
			names, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return
			}
			for _, n := range names {
				seen[n] = true
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	var once sync.Once
	stop := func() []string {
		once.Do(func() {
			cancel()
			<-done
			conn.Close(context.Background())
		})
		out := make([]string, 0, len(seen))
		for n := range seen {
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	t.Cleanup(func() { stop() })
	return stop
}

// TestFollowThePresenter: attendees follow the presenter's steps; F breaks
// away, so the presenter's steps no longer move that attendee's run, and F
// again rejoins where the presenter is; P pushes even to one on their own.
func TestFollowThePresenter(t *testing.T) {
	t.Parallel()
	d := scratch(t)
	r := serve(t, d, workshop.Config{Room: "follow"})
	p := present(t, d, "follow")
	alice, aliceRun := attendRun(t, d, r, "alice")
	bob := attend(t, r, "bob")

	p.press("l")
	alice.WaitScreen(pgtest.WaitTimeout(), event(1), "following the presenter")
	bob.WaitScreen(pgtest.WaitTimeout(), event(1))

	alice.Press("F")
	alice.WaitScreen(pgtest.WaitTimeout(), "on your own")
	p.press("l")
	p.press("l")
	bob.WaitScreen(pgtest.WaitTimeout(), event(3), "B acquire")
	// Not a pause: bob, following, has both steps, and alice's program
	// handles a key of hers after that (full help on, then off again).
	alice.Press("?")
	if scr := alice.WaitScreen(pgtest.WaitTimeout(), fullHelp); !strings.Contains(scr, event(1)) {
		t.Errorf("the presenter moved alice after she broke away; she sees:\n%s", scr)
	}
	alice.Press("?")
	if got, want := d.lease(t, aliceRun), (lease{owner: "A", fence: 1}); got != want {
		t.Errorf("alice's lease while on her own: %+v, want %+v (untouched)", got, want)
	}
	waitFor(t, pgtest.WaitTimeout(), "the board showing alice on her own", func() bool {
		return seatOf(t, r.Store(), "alice").Following == false
	})

	alice.Press("F")
	alice.WaitScreen(pgtest.WaitTimeout(), "following the presenter", event(3), "B acquire")
	if got, want := d.lease(t, aliceRun), (lease{owner: "B", fence: 2}); got != want {
		t.Errorf("alice's lease after rejoining: %+v, want %+v", got, want)
	}

	// On her own again; the presenter's push brings her along anyway.
	alice.Press("F")
	alice.WaitScreen(pgtest.WaitTimeout(), "on your own")
	p.press("l")
	bob.WaitScreen(pgtest.WaitTimeout(), event(4))
	p.press("P")
	alice.WaitScreen(pgtest.WaitTimeout(), event(4), "following the presenter")
	waitFor(t, pgtest.WaitTimeout(), "the board showing alice following at event 4", func() bool {
		s := seatOf(t, r.Store(), "alice")
		return s.Following && s.Pos == 4
	})
}

// seatOf is name's seat on the board (the zero Seat if absent).
func seatOf(t testing.TB, s *room.Store, name string) room.Seat {
	t.Helper()
	b, err := s.Board(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, seat := range b.Seats {
		if seat.Name == name {
			return seat
		}
	}
	return room.Seat{}
}

// TestVoteReachesTheBoard: an attendee's answer to a question is tallied on
// the board, in the store and on the presenter's screen.
func TestVoteReachesTheBoard(t *testing.T) {
	t.Parallel()
	d := scratch(t)
	r := serve(t, d, workshop.Config{Room: "vote"})
	p := present(t, d, "vote")
	alice := attend(t, r, "alice")
	alice.Press("F") // on her own, so only her keys move her run
	alice.WaitScreen(pgtest.WaitTimeout(), "on your own")
	alice.Press("llll")
	alice.WaitScreen(pgtest.WaitTimeout(), event(4))
	alice.Press("l")
	alice.WaitScreen(pgtest.WaitTimeout(), "What will PostgreSQL answer?")
	alice.Press("1")
	alice.WaitScreen(pgtest.WaitTimeout(), event(5), "UPDATE 1")

	question := "renewal-race@1075: A's heartbeat, sent before the expiry, arrives after B took over. What will PostgreSQL answer?"
	waitFor(t, pgtest.WaitTimeout(), "alice's vote on the board", func() bool {
		b, err := r.Store().Board(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		return b.Votes[question]["UPDATE 1"] == 1
	})
	p.press("b")
	p.waitScreen(pgtest.WaitTimeout(), "Votes", "UPDATE 1 1")
}

// TestOddClientsDisturbNobody: a terminal that never answers the colour
// query, a client without a PTY and a 10x5 window are each handled on
// their own, while an attendee and the presenter carry on.
func TestOddClientsDisturbNobody(t *testing.T) {
	t.Parallel()
	d := scratch(t)
	r := serve(t, d, workshop.Config{Room: "odd"})
	p := present(t, d, "odd")
	addr := r.Addr().String()

	mute := sshtest.MustDial(t, addr, sshtest.Options{User: "mute", Silent: true, Width: 120, Height: 40})
	tiny := sshtest.MustDial(t, addr, sshtest.Options{User: "tiny", Width: 10, Height: 5})
	script := sshtest.MustDial(t, addr, sshtest.Options{User: "script", NoPTY: true, Command: "ls"})
	alice := attend(t, r, "alice")

	p.press("l")
	alice.WaitScreen(pgtest.WaitTimeout(), event(1))
	alice.Press("F")
	alice.Press("ll")
	alice.WaitScreen(pgtest.WaitTimeout(), event(3))

	if code := script.WaitExit(pgtest.WaitTimeout()); code != 1 {
		t.Errorf("the client without a PTY: exit %d, want 1", code)
	}
	if e := script.Stderr(); strings.Count(e, "\n") != 1 || !strings.Contains(e, "needs a terminal") {
		t.Errorf("the client without a PTY was told %q, want one line saying a terminal is needed", e)
	}
	tiny.WaitScreen(pgtest.WaitTimeout(), "Make the")
	if scr := sshtest.Flat(tiny.Screen()); !strings.Contains(scr, "least 60x16") {
		t.Errorf("the 10x5 window shows %q, want the size gate", scr)
	}
	// The silent terminal gets its frame once its query gives up, and
	// follows like anyone.
	mute.WaitScreen(pgtest.WaitTimeout(), "renewal-race", event(1))
	p.press("l")
	mute.WaitScreen(pgtest.WaitTimeout(), event(2))
	tiny.Resize(120, 40)
	tiny.WaitScreen(pgtest.WaitTimeout(), "renewal-race", event(2))
	if scr := alice.Screen(); !strings.Contains(scr, event(3)) {
		t.Errorf("alice, on her own, moved with the presenter:\n%s", scr)
	}
	if n := len(r.Attendees()); n != 3 {
		t.Errorf("%d attendees, want 3 (mute, tiny, alice): %+v", n, r.Attendees())
	}
}

// TestTwoServersOneRoom: two serve processes of one room on one
// PostgreSQL; an attendee on each follows the one presenter, and the
// board shows both with the server they are on.
func TestTwoServersOneRoom(t *testing.T) {
	t.Parallel()
	d := scratch(t)
	r1 := serve(t, d, workshop.Config{Room: "shared"})
	r2 := serve(t, d, workshop.Config{Room: "shared"})
	if r1.Addr().String() == r2.Addr().String() || r1.Server() == r2.Server() {
		t.Fatalf("the two servers share an address or a name: %s %s / %s %s", r1.Addr(), r1.Server(), r2.Addr(), r2.Server())
	}
	p := present(t, d, "shared")
	alice := attend(t, r1, "alice")
	bob := attend(t, r2, "bob")

	p.press("lll")
	alice.WaitScreen(pgtest.WaitTimeout(), event(3), "B acquire")
	bob.WaitScreen(pgtest.WaitTimeout(), event(3), "B acquire")
	p.press("h")
	alice.WaitScreen(pgtest.WaitTimeout(), event(2))
	bob.WaitScreen(pgtest.WaitTimeout(), event(2))

	servers := map[string]string{}
	waitFor(t, pgtest.WaitTimeout(), "both attendees on the board at event 2", func() bool {
		b, err := r2.Store().Board(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range b.Seats {
			servers[s.Name] = s.Server
			if s.Pos == 2 {
				n++
			}
		}
		return n == 2 && len(b.Seats) == 2
	})
	if servers["alice"] != r1.Server() || servers["bob"] != r2.Server() {
		t.Errorf("the board puts alice on %q and bob on %q, want %q and %q", servers["alice"], servers["bob"], r1.Server(), r2.Server())
	}
	p.press("b")
	p.waitScreen(pgtest.WaitTimeout(), "Room shared: 2 attendees")
}

// TestVanishedClientLeavesNothing: an attendee whose connection drops
// without a goodbye (ssh killed with -9), and one who goes silent until
// the idle timeout, leave no schema and no seat; the others carry on.
func TestVanishedClientLeavesNothing(t *testing.T) {
	t.Parallel()
	d := scratch(t)
	r := serve(t, d, workshop.Config{Room: "vanish", SSH: sshroom.Config{IdleTimeout: 3 * time.Second}})
	// Only carol falls silent: alice and bob keep typing from the moment
	// they join, so however slowly a loaded machine seats the others, the
	// idle timeout can end carol's session and no one else's.
	alice, aliceRun := attendRun(t, d, r, "alice")
	stopAlice := keepTyping(alice)
	defer stopAlice()
	bob := attend(t, r, "bob")
	stopBob := keepTyping(bob)
	defer stopBob()
	_, carolRun := attendRun(t, d, r, "carol")
	alice.Press("ll")
	alice.WaitScreen(pgtest.WaitTimeout(), event(2))

	stopAlice()
	if err := alice.Kill(); err != nil {
		t.Fatal(err)
	}
	gone := func(schema string) func() bool {
		return func() bool {
			for _, s := range d.schemas(t) {
				if s == schema || s == schema+"_res" {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, pgtest.WaitTimeout(), "alice's run schemas dropped after her connection vanished", gone(aliceRun))
	waitFor(t, pgtest.WaitTimeout(), "alice's seat gone", func() bool { return seatOf(t, r.Store(), "alice").ID == "" })

	// bob still typing; carol says nothing and is ended by the timeout,
	// at least 3 s after she joined: bob, typing all along, outlasts it.
	// The session's end drops the run's schemas, then the seat, then the
	// attendee: as for alice, each is waited for.
	waitFor(t, pgtest.WaitTimeout(), "carol's run schemas dropped after the idle timeout", gone(carolRun))
	waitFor(t, pgtest.WaitTimeout(), "carol's seat gone after her idle session", func() bool { return seatOf(t, r.Store(), "carol").ID == "" })
	waitFor(t, pgtest.WaitTimeout(), "bob the only attendee left", func() bool {
		got := r.Attendees()
		return len(got) == 1 && got[0].User == "bob"
	})
	stopBob()
	bob.Press("l")
	bob.WaitScreen(pgtest.WaitTimeout(), event(1))
}

// TestShutdownLeavesNothing: Shutdown, as SIGTERM to serve does it, tells
// every attendee (in the race, at the size gate, still being asked for
// colours), ends their sessions, drops every schema the room made and
// closes every connection, within 10 s; the port no longer listens.
func TestShutdownLeavesNothing(t *testing.T) {
	d := scratch(t)
	before := goleak.IgnoreCurrent()
	r, err := workshop.Start(testCtx(t), workshop.Config{
		DSN: d.dsn, Room: "closing", SSH: sshroom.Config{Listen: "127.0.0.1:0", HostKeyDir: t.TempDir() + "/k"}, MaxConns: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	addr := r.Addr().String()
	if _, err := r.Store().SetLead(testCtx(t), room.Lead{Scenario: "renewal-race",
		Knobs: scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff}, Pos: 2, T: 1060}); err != nil {
		t.Fatal(err)
	}
	alice := attend(t, r, "alice")
	alice.WaitScreen(pgtest.WaitTimeout(), event(2))
	bob := attend(t, r, "bob")
	bob.Press("F")
	bob.Press("l")
	tiny := sshtest.MustDial(t, addr, sshtest.Options{User: "tiny", Width: 10, Height: 5})
	tiny.WaitScreen(pgtest.WaitTimeout(), "Make the")
	mute := sshtest.MustDial(t, addr, sshtest.Options{User: "mute", Silent: true})
	mute.WaitOutput(pgtest.WaitTimeout(), "\x1b]11;?")
	if n := len(d.schemas(t)); n < 2*3+2 {
		t.Fatalf("before the shutdown only %d schemas: %v", n, d.schemas(t))
	}

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	took := time.Since(start)
	t.Logf("Shutdown took %s", took)
	if took > 10*time.Second {
		t.Errorf("Shutdown took %s, want at most 10 s", took)
	}
	select {
	case <-r.Done():
	default:
		t.Errorf("Done is not closed after Shutdown")
	}
	for _, c := range []*sshtest.Client{alice, bob, tiny, mute} {
		if code := c.WaitExit(pgtest.WaitTimeout()); code != 0 {
			t.Errorf("exit status %d after the room closed, want 0", code)
		}
		if !strings.Contains(c.Output(), "The presenter closed the room") {
			t.Errorf("an attendee was not told the room closed; screen:\n%s", c.Screen())
		}
	}
	if left := d.schemas(t); len(left) != 0 {
		t.Errorf("schemas left after Shutdown: %v", left)
	}
	waitFor(t, pgtest.WaitTimeout(), "every connection of the room closed", func() bool { return d.sessions(t) == 0 })
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still listens after Shutdown", addr)
	}
	if err := r.Shutdown(context.Background()); err != nil {
		t.Errorf("a second Shutdown: %v", err)
	}
	// Once the attendees hang up, no goroutine of the room is left.
	for _, c := range []*sshtest.Client{alice, bob, tiny, mute} {
		_ = c.Close()
	}
	goleak.VerifyNone(t, before)
}

// TestStartFailureLeavesNothing: a room that cannot bind its port starts
// nothing else, and leaves no schema or connection behind.
func TestStartFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	d := scratch(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = workshop.Start(testCtx(t), workshop.Config{DSN: d.dsn, SSH: sshroom.Config{Listen: ln.Addr().String(), HostKeyDir: t.TempDir() + "/k"}})
	if err == nil {
		t.Fatalf("a room started on a port already taken")
	}
	_, err = workshop.Start(testCtx(t), workshop.Config{DSN: d.dsn, SSH: sshroom.Config{Listen: "0.0.0.0:0", HostKeyDir: t.TempDir() + "/k"}})
	if !errors.Is(err, workshop.ErrRemoteNotAllowed) {
		t.Errorf("a room on every interface without AllowRemote: %v, want ErrRemoteNotAllowed", err)
	}
	_, err = workshop.Start(testCtx(t), workshop.Config{DSN: d.dsn, Room: "Bad Name", SSH: sshroom.Config{Listen: "127.0.0.1:0", HostKeyDir: t.TempDir() + "/k"}})
	if !errors.Is(err, room.ErrRoomName) {
		t.Errorf("a bad room name: %v, want room.ErrRoomName", err)
	}
	if left := d.schemas(t); len(left) != 0 {
		t.Errorf("schemas left after failed starts: %v", left)
	}
	waitFor(t, pgtest.WaitTimeout(), "no connection left", func() bool { return d.sessions(t) == 0 })
}
