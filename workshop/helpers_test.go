package workshop_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/sshroom/sshtest"
	"github.com/leaserace/leaserace/workshop"

	"github.com/leaserace/leaserace/internal/testwait"
)

// Attendees' sessions spend their time waiting on SSH, the room's
// debounce and the server, not on this process's CPU.
func TestMain(m *testing.M) {
	testwait.WaitingInParallel()
	pgtest.Main(m)
}

// db is a database of the test's own on the shared test server, so that
// every schema and session in it is the test's.
type db struct {
	name, dsn string
	admin     *pgx.Conn
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// scratch creates an empty database, dropped (with whatever is still
// connected to it) when the test ends.
func scratch(t testing.TB) db {
	t.Helper()
	base := pgtest.DSN(t)
	name := pgtest.ScratchDatabase(t, base, "lr_ws_")
	ctx := testCtx(t)
	d := db{name: name, dsn: pgtest.WithDatabase(t, base, name)}
	var err error
	if d.admin, err = pgx.Connect(ctx, d.dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.admin.Close(context.Background()) })
	return d
}

// schemas lists the lr_* schemas in the database, the room's own
// excepted.
func (d db) schemas(t testing.TB) []string {
	t.Helper()
	rows, _ := d.admin.Query(testCtx(t), `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lr\_%' AND nspname NOT LIKE 'lr\_room\_%' ORDER BY 1`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// sessions counts the connections to the database but the admin's.
func (d db) sessions(t testing.TB) int {
	t.Helper()
	var n int
	if err := d.admin.QueryRow(testCtx(t), `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, d.name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// serve starts a room on d with small pools, shut down when the test ends.
func serve(t testing.TB, d db, cfg workshop.Config) *workshop.Room {
	t.Helper()
	cfg.DSN = d.dsn
	if cfg.SSH.Listen == "" {
		cfg.SSH.Listen = "127.0.0.1:0"
	}
	if cfg.SSH.HostKeyDir == "" {
		cfg.SSH.HostKeyDir = t.TempDir() + "/hostkey"
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 4
	}
	if cfg.SSH.Log == nil {
		// Debug: a failing test shows every lead each attendee was given.
		cfg.SSH.Log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if cfg.OnError == nil {
		cfg.OnError = func(err error) { t.Logf("room %s: %v", cfg.Room, err) }
	}
	r, err := workshop.Start(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("workshop.Start: %v", err)
	}
	t.Cleanup(func() {
		// Shutdown ends every session and drops every schema the room
		// made: twice the usual wait.
		ctx, cancel := context.WithTimeout(context.Background(), 2*pgtest.WaitTimeout())
		defer cancel()
		if err := r.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return r
}

// testWriter sends a log to t.Log until the test ends.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	defer func() { _ = recover() }() // a log line after the test ended
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// attend connects user to r at 120x40 and waits for the race.
func attend(t testing.TB, r *workshop.Room, user string) *sshtest.Client {
	t.Helper()
	c := sshtest.MustDial(t, r.Addr().String(), sshtest.Options{User: user, Width: 120, Height: 40})
	// The first frame waits on the attendee's seat and run being made in
	// PostgreSQL (schemas and all): twice the usual wait.
	c.WaitScreen(2*pgtest.WaitTimeout(), "renewal-race", "following the presenter")
	return c
}

// presenter is the presenter's TUI run in the test's process, as
// leaserace present runs it, on a pipe and a screen of 80x24 (what
// Bubble Tea draws for output that is not a terminal).
type presenter struct {
	t    testing.TB
	in   *io.PipeWriter
	mu   sync.Mutex
	scr  *sshtest.Screen
	done chan error
}

func (p *presenter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.scr.Write(b)
}

func (p *presenter) screen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.scr.String()
}

// present starts the presenter of room on d; it quits when the test ends.
func present(t testing.TB, d db, room string) *presenter {
	t.Helper()
	pr, pw := io.Pipe()
	p := &presenter{t: t, in: pw, scr: sshtest.NewScreen(80, 24), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		p.done <- workshop.Present(ctx, workshop.PresentConfig{
			DSN: d.dsn, Room: room, NoColor: true, NoAsk: true, In: pr, Out: p, Stderr: io.Discard,
		})
	}()
	t.Cleanup(func() {
		_, _ = pw.Write([]byte("q"))
		// Quitting closes the presenter's store and its connections:
		// twice the usual wait.
		limit := 2 * pgtest.WaitTimeout()
		select {
		case <-p.done:
		case <-time.After(limit):
			cancel()
			t.Errorf("the presenter did not quit within %s of q", limit)
			<-p.done
		}
		cancel()
		// Bubble Tea cannot cancel a read from a pipe: its input reader
		// ends only when the pipe does (else goleak counts it).
		_ = pw.Close()
	})
	// The presenter's first screen waits on it opening the room in
	// PostgreSQL: three times the usual wait.
	p.waitScreen(3*pgtest.WaitTimeout(), "presenting")
	return p
}

func (p *presenter) press(keys string) {
	p.t.Helper()
	if _, err := p.in.Write([]byte(keys)); err != nil {
		p.t.Fatalf("presenter: press %q: %v", keys, err)
	}
}

func (p *presenter) waitScreen(d time.Duration, want ...string) string {
	p.t.Helper()
	end := time.Now().Add(d)
	for {
		scr := p.screen()
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(scr, w)
		}
		if ok {
			return scr
		}
		if time.Now().After(end) {
			p.t.Fatalf("the presenter's screen never showed %q within %s; it shows:\n%s", want, d, scr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// attendRun connects user like attend and returns, with the client, the
// schema of the run the attendee was given: the one that appeared.
func attendRun(t testing.TB, d db, r *workshop.Room, user string) (*sshtest.Client, string) {
	t.Helper()
	before := map[string]bool{}
	for _, s := range d.schemas(t) {
		before[s] = true
	}
	c := attend(t, r, user)
	var runs []string
	for _, s := range d.schemas(t) {
		if !before[s] && !strings.HasSuffix(s, "_res") && !strings.HasPrefix(s, "lr_base_") && !strings.HasPrefix(s, "lr_res_") {
			runs = append(runs, s)
		}
	}
	if len(runs) != 1 {
		t.Fatalf("%s's joining made run schemas %v, want exactly one", user, runs)
	}
	return c, runs[0]
}

// lease is the coordinator's row in a run's schema.
type lease struct {
	owner string
	fence int64
}

func (d db) lease(t testing.TB, schema string) lease {
	t.Helper()
	var l lease
	q := "SELECT owner, fence FROM " + pgx.Identifier{schema, "leases"}.Sanitize() + " WHERE name = 'orders'"
	if err := d.admin.QueryRow(testCtx(t), q).Scan(&l.owner, &l.fence); err != nil {
		t.Fatalf("the lease in %s: %v", schema, err)
	}
	return l
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s did not happen within %s", what, d)
		}
	}
}

// event is how the header says where a run is.
func event(n int) string { return fmt.Sprintf("event %d/6", n) }

// fullHelp is on an attendee's screen only while the full help (?) shows.
const fullHelp = "reconnect"

// keepTyping sends c a key the race ignores ("??" arrives as one key) every
// 300 ms until stop is called, so c's session does not idle out while the
// test waits on others. stop may be called more than once.
func keepTyping(c *sshtest.Client) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if c.Send("??") != nil {
					return // the session is gone: nothing to keep alive
				}
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-ended }) }
}
