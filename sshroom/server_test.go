package sshroom

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leaserace/leaserace/internal/testwait"
	"github.com/leaserace/leaserace/sshroom/sshtest"
	"go.uber.org/goleak"
	gossh "golang.org/x/crypto/ssh"
)

// TestTwoAttendeesIndependent: two attendees with their own models, sizes
// and renderers. alice's xterm-256color gets 256-colour escapes, bob's dumb
// terminal gets none; keys and resizes reach one session only.
func TestTwoAttendeesIndependent(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	s := startRoom(t, Config{}, rec.app)
	alice := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "alice", Width: 80, Height: 24})
	bob := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "bob", Term: "dumb", Width: 100, Height: 30})

	alice.WaitScreen(testwait.Timeout(), "probe user=alice", "size=80x24", "count=0")
	bob.WaitScreen(testwait.Timeout(), "probe user=bob", "size=100x30", "count=0")

	alice.Press("+++")
	bob.Press("+")
	alice.WaitScreen(testwait.Timeout(), "count=3")
	bob.WaitScreen(testwait.Timeout(), "count=1")

	alice.Resize(120, 40)
	alice.WaitScreen(testwait.Timeout(), "size=120x40", "count=3")
	// Not a pause: bob's own key, sent after the server handled alice's
	// resize, proves bob's program has moved past it; only then is his
	// unchanged size evidence that the resize did not reach him.
	bob.Press("+")
	bob.WaitScreen(testwait.Timeout(), "count=2")
	if scr := bob.Screen(); !strings.Contains(scr, "size=100x30") || !strings.Contains(scr, "count=2") {
		t.Errorf("alice's keys or resize reached bob; bob sees:\n%s", scr)
	}

	if out := alice.Output(); !strings.Contains(out, "\x1b[38;5;205m") {
		t.Errorf("alice's xterm-256color got no 256-colour foreground; output %q", out)
	}
	if out := bob.Output(); strings.Contains(out, "\x1b[38;") {
		t.Errorf("bob's dumb terminal got colour escapes; output %q", out)
	}
	if !strings.Contains(alice.Output(), "\x1b]11;?") || strings.Contains(bob.Output(), "\x1b]11;?") {
		t.Errorf("only alice's terminal should have been asked for its background colour")
	}

	// By name: alice and bob dial at the same moment, so either may be
	// seated first.
	got := s.Attendees()
	a, okA := attendeeNamed(got, "alice")
	b, okB := attendeeNamed(got, "bob")
	if len(got) != 2 || !okA || !okB {
		t.Fatalf("Attendees() = %+v, want alice and bob", got)
	}
	if a.Width != 120 || a.Height != 40 || b.Width != 100 || b.Height != 30 {
		t.Errorf("Attendees() sizes = %+v, want alice 120x40, bob 100x30", got)
	}

	alice.Press("q")
	if code := alice.WaitExit(testwait.Timeout()); code != 0 {
		t.Errorf("alice quit with status %d, want 0", code)
	}
	rec.waitCleaned(t, "alice", 1, testwait.Timeout())
	bob.Press("+")
	bob.WaitScreen(testwait.Timeout(), "count=3")
	// The server lets a session go just after its cleanup has run.
	testwait.Eventually(t, "after alice left, one attendee", func() bool { return len(s.Attendees()) == 1 })
}

// TestSilentClientDoesNotBlockOthers: a terminal that never answers the
// background-colour query holds back nobody else, and gets its own frame
// once the query gives up.
func TestSilentClientDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	s := startRoom(t, Config{}, rec.app)
	mute := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "mute", Silent: true})
	mute.WaitOutput(testwait.Timeout(), "\x1b]11;?")

	alice := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "alice"})
	alice.WaitScreen(testwait.Timeout(), "probe user=alice")
	alice.Press("++")
	alice.WaitScreen(testwait.Timeout(), "count=2")

	mute.WaitScreen(testwait.Timeout(), "probe user=mute", "size=80x24")
	mute.Press("+")
	mute.WaitScreen(testwait.Timeout(), "count=1")
}

// TestNoPTYGetsOneLineAndExit1: `ssh host command` without -t gets one
// clear line on stderr and exit status 1, and nobody else notices.
func TestNoPTYGetsOneLineAndExit1(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	s := startRoom(t, Config{}, rec.app)
	alice := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "alice"})
	alice.WaitScreen(testwait.Timeout(), "probe user=alice")

	script := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "script", NoPTY: true, Command: "ls -l"})
	if code := script.WaitExit(testwait.Timeout()); code != 1 {
		t.Errorf("no-PTY exit status %d, want 1", code)
	}
	if errOut := script.Stderr(); strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "needs a terminal") {
		t.Errorf("no-PTY stderr %q, want one line saying a terminal is needed", errOut)
	}
	if out := script.Output(); out != "" {
		t.Errorf("no-PTY stdout %q, want nothing", out)
	}
	if n := rec.count(rec.started, "script"); n != 0 {
		t.Errorf("the app was started %d times for a session without a PTY", n)
	}
	alice.Press("+")
	alice.WaitScreen(testwait.Timeout(), "count=1")
}

// TestSizeGate: a 10x5 window sees the gate, not the app, and its keys do
// nothing; the others are undisturbed; grown, it gets the app.
func TestSizeGate(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	s := startRoom(t, Config{MinWidth: 40, MinHeight: 12}, rec.app)
	alice := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "alice"})
	tiny := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "tiny", Width: 10, Height: 5})

	alice.WaitScreen(testwait.Timeout(), "probe user=alice")
	var scr string
	for end := time.Now().Add(testwait.Timeout()); ; time.Sleep(20 * time.Millisecond) {
		scr = tiny.Screen()
		if strings.Contains(sshtest.Flat(scr), "Make the window at least 40x12") {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the 10x5 window never showed the gate; it shows:\n%s", scr)
		}
	}
	if strings.Contains(scr, "probe") {
		t.Errorf("the gate let the app through at 10x5:\n%s", scr)
	}
	for i, line := range strings.Split(scr, "\n") {
		if len([]rune(line)) > 10 || i >= 5 {
			t.Errorf("the gate does not fit 10x5: line %d %q", i+1, line)
		}
	}
	tiny.Press("+")
	alice.Press("+")
	alice.WaitScreen(testwait.Timeout(), "count=1", "size=80x24")

	tiny.Resize(60, 20)
	tiny.WaitScreen(testwait.Timeout(), "probe user=tiny", "size=60x20", "count=0")
	tiny.Press("+")
	tiny.WaitScreen(testwait.Timeout(), "count=1")
	tiny.Resize(30, 20)
	tiny.WaitScreen(testwait.Timeout(), "least")
	tiny.Resize(40, 12)
	tiny.WaitScreen(testwait.Timeout(), "size=40x12", "count=1")
}

// TestSizeGateTakesTheAppsRule: with TooSmall set, the gate follows that
// rule, not MinWidth and MinHeight: under a rule by area, a narrow but
// tall window gets the app and a wide but low one the gate.
func TestSizeGateTakesTheAppsRule(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	byArea := func(w, h int) bool { return w*h < 40*12 }
	s := startRoom(t, Config{MinWidth: 40, MinHeight: 12, TooSmall: byArea}, rec.app)
	narrow := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "narrow", Width: 30, Height: 20})
	low := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "low", Width: 45, Height: 10})
	narrow.WaitScreen(testwait.Timeout(), "probe user=narrow", "size=30x20")
	low.WaitScreen(testwait.Timeout(), "Make the window at least 40x12")
	if scr := low.Screen(); strings.Contains(scr, "probe") {
		t.Errorf("the gate let the app through at 45x10:\n%s", scr)
	}
	low.Resize(24, 20)
	low.WaitScreen(testwait.Timeout(), "probe user=low", "size=24x20")
}

// TestRoomFull: one more attendee than MaxAttendees is told the room is
// full and exits 1; a seat freed is a seat taken.
func TestRoomFull(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	s := startRoom(t, Config{MaxAttendees: 1}, rec.app)
	alice := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "alice"})
	alice.WaitScreen(testwait.Timeout(), "probe user=alice")

	bob := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "bob"})
	if code := bob.WaitExit(testwait.Timeout()); code != 1 {
		t.Errorf("bob in a full room: exit status %d, want 1", code)
	}
	if scr := bob.Screen(); !strings.Contains(scr, "The room is full (1 attendees)") {
		t.Errorf("bob was not told the room is full; he sees:\n%s", scr)
	}
	if n := rec.count(rec.started, "bob"); n != 0 {
		t.Errorf("the app was started for bob in a full room")
	}
	alice.Press("+")
	alice.WaitScreen(testwait.Timeout(), "count=1")

	alice.Press("q")
	alice.WaitExit(testwait.Timeout())
	rec.waitCleaned(t, "alice", 1, testwait.Timeout())
	carol := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "carol"})
	carol.WaitScreen(testwait.Timeout(), "probe user=carol")
}

// TestIdleTimeout: a session without input ends with a line saying why;
// one that types stays.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	idle := 1500 * time.Millisecond
	s := startRoom(t, Config{IdleTimeout: idle}, rec.app)
	alice := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "alice"})
	bob := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "bob"})
	alice.WaitScreen(testwait.Timeout(), "probe user=alice")
	bob.WaitScreen(testwait.Timeout(), "probe user=bob")

	start := time.Now()
	for i := 0; i < 10; i++ {
		bob.Press("+")
		time.Sleep(300 * time.Millisecond)
	}
	if code := alice.WaitExit(testwait.Timeout()); code != 0 {
		t.Errorf("idle exit status %d, want 0", code)
	}
	if scr := alice.Screen(); !strings.Contains(scr, "after 1.5s without input") {
		t.Errorf("alice was not told why her session ended; she sees:\n%s", scr)
	}
	rec.waitCleaned(t, "alice", 1, testwait.Timeout())
	bob.WaitScreen(testwait.Timeout(), "count=10")
	if time.Since(start) < idle {
		t.Fatalf("the test ran faster than the idle timeout; it proves nothing")
	}
	// The server lets a session go just after its cleanup has run.
	testwait.Eventually(t, "after alice went idle, Attendees() holding bob only", func() bool {
		got := s.Attendees()
		return len(got) == 1 && got[0].User == "bob"
	})
}

// TestPanicIsolation: a panic in one session's model, wherever it
// happens, ends that session with a line about a bug and runs its cleanup;
// the bystander carries on.
func TestPanicIsolation(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	s := startRoom(t, Config{}, rec.app)
	bystander := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "bystander"})
	bystander.WaitScreen(testwait.Timeout(), "probe user=bystander")

	count := 0
	for _, tc := range []struct{ name, key string }{
		{"update", "p"}, {"view", "v"}, {"command", "c"}, {"batch", "b"}, {"sequence", "s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user := "victim-" + tc.name
			v := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: user})
			v.WaitScreen(testwait.Timeout(), "probe user="+user)
			v.Press(tc.key)
			if code := v.WaitExit(testwait.Timeout()); code != 1 {
				t.Errorf("exit status %d after a panic, want 1", code)
			}
			if scr := v.Screen(); !strings.Contains(sshtest.Flat(scr), "leaserace hit a bug") {
				t.Errorf("the attendee was not told about the bug; screen:\n%s", scr)
			}
			rec.waitCleaned(t, user, 1, testwait.Timeout())
			count++
			bystander.Press("+")
			bystander.WaitScreen(testwait.Timeout(), fmt.Sprintf("count=%d", count))
		})
	}
	t.Run("app factory", func(t *testing.T) {
		v := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "boom"})
		if code := v.WaitExit(testwait.Timeout()); code != 1 {
			t.Errorf("exit status %d after the App panicked, want 1", code)
		}
		if scr := v.Screen(); !strings.Contains(sshtest.Flat(scr), "leaserace hit a bug") {
			t.Errorf("the attendee was not told about the bug; screen:\n%s", scr)
		}
	})
	t.Run("app error", func(t *testing.T) {
		v := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "reject"})
		if code := v.WaitExit(testwait.Timeout()); code != 1 {
			t.Errorf("exit status %d after the App failed, want 1", code)
		}
		if scr := v.Screen(); !strings.Contains(sshtest.Flat(scr), "could not start your session: no seat for reject") {
			t.Errorf("the attendee was not shown the App's error; screen:\n%s", scr)
		}
	})
	bystander.Press("+")
	bystander.WaitScreen(testwait.Timeout(), fmt.Sprintf("count=%d", count+1))
	// A client sees its exit status before the server has let the
	// session go: wait for the server's list to settle, then judge it.
	testwait.Eventually(t, "after the panics, Attendees() holding the bystander only", func() bool {
		got := s.Attendees()
		return len(got) == 1 && got[0].User == "bystander"
	})
}

// TestRoomCode: with AllowRemote, the room code is asked at login: a wrong
// one is refused before the app starts, the right one admitted; Open asks
// for none; an address beyond loopback needs AllowRemote.
func TestRoomCode(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	s := startRoom(t, Config{AllowRemote: true, RoomCode: "Tulip-42"}, rec.app)
	if s.RoomCode() != "Tulip-42" {
		t.Fatalf("RoomCode() = %q", s.RoomCode())
	}
	if _, err := sshtest.Dial(t, s.Addr().String(), sshtest.Options{User: "mallory", Code: "tulip-43"}); err == nil {
		t.Fatalf("a wrong room code was let in")
	}
	if _, err := sshtest.Dial(t, s.Addr().String(), sshtest.Options{User: "mallory", Code: ""}); err == nil {
		t.Fatalf("an empty room code was let in")
	}
	if n := rec.count(rec.started, "mallory"); n != 0 {
		t.Errorf("the app started for a wrong code")
	}
	alice := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "alice", Code: " tulip-42 "})
	alice.WaitScreen(testwait.Timeout(), "probe user=alice")

	gen := startRoom(t, Config{AllowRemote: true}, rec.app)
	if ok, _ := regexp.MatchString(`^[a-z2-9]{4}-[a-z2-9]{4}$`, gen.RoomCode()); !ok {
		t.Fatalf("generated room code %q", gen.RoomCode())
	}
	if _, err := sshtest.Dial(t, gen.Addr().String(), sshtest.Options{User: "mallory", Code: "aaaa-aaaa"}); err == nil {
		t.Fatalf("a guessed room code was let in")
	}
	bob := sshtest.MustDial(t, gen.Addr().String(), sshtest.Options{User: "bob", Code: gen.RoomCode()})
	bob.WaitScreen(testwait.Timeout(), "probe user=bob")

	open := startRoom(t, Config{AllowRemote: true, Open: true}, rec.app)
	if open.RoomCode() != "" {
		t.Fatalf("an open room has code %q", open.RoomCode())
	}
	carol := sshtest.MustDial(t, open.Addr().String(), sshtest.Options{User: "carol"})
	carol.WaitScreen(testwait.Timeout(), "probe user=carol")

	loop := startRoom(t, Config{}, rec.app)
	if loop.RoomCode() != "" {
		t.Fatalf("a loopback room has code %q", loop.RoomCode())
	}

	for _, listen := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:2222"} {
		_, err := New(Config{Listen: listen, HostKeyDir: t.TempDir() + "/k"}, rec.app)
		if !errors.Is(err, ErrRemoteNotAllowed) {
			t.Errorf("New with Listen %q and no AllowRemote: %v, want ErrRemoteNotAllowed", listen, err)
		}
	}
}

// TestShutdown: every attendee, whether in the app, at the size gate or
// still answering the colour query, is told the room closed and their
// session ends; every cleanup runs; nothing is left listening or running.
func TestShutdown(t *testing.T) {
	before := goleak.IgnoreCurrent()
	rec := newRecorder()
	s, err := New(Config{Listen: "127.0.0.1:0", HostKeyDir: t.TempDir() + "/k", MinWidth: 40, MinHeight: 12}, rec.app)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background()) }()
	addr := s.Addr().String()

	alice := sshtest.MustDial(t, addr, sshtest.Options{User: "alice"})
	tiny := sshtest.MustDial(t, addr, sshtest.Options{User: "tiny", Width: 10, Height: 5})
	alice.WaitScreen(testwait.Timeout(), "probe user=alice")
	tiny.WaitScreen(testwait.Timeout(), "least")
	mute := sshtest.MustDial(t, addr, sshtest.Options{User: "mute", Silent: true})
	mute.WaitOutput(testwait.Timeout(), "\x1b]11;?")

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	took := time.Since(start)
	if took > 10*time.Second {
		t.Errorf("Shutdown took %s, want at most 10 s", took)
	}
	t.Logf("Shutdown took %s", took)
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after Shutdown: %v", err)
		}
	case <-time.After(testwait.Timeout()):
		t.Fatalf("Serve did not return after Shutdown")
	}

	for _, c := range []*sshtest.Client{alice, tiny, mute} {
		if code := c.WaitExit(testwait.Timeout()); code != 0 {
			t.Errorf("exit status %d after the room closed, want 0", code)
		}
		if out := c.Output(); !strings.Contains(out, "The presenter closed the room") {
			t.Errorf("an attendee was not told the room closed; output %q", out)
		}
	}
	// After the program, on the normal screen: at 80x24 the line is whole.
	if scr := alice.Screen(); !strings.Contains(scr, "The presenter closed the room. Thank you for joining!") {
		t.Errorf("alice's screen after the room closed:\n%s", scr)
	}
	for _, user := range []string{"alice", "tiny"} {
		rec.waitCleaned(t, user, 1, time.Second)
	}
	if n := rec.count(rec.started, "mute"); n != 0 {
		t.Errorf("the app started for mute, whose room closed during the colour query")
	}
	if got := s.Attendees(); len(got) != 0 {
		t.Errorf("after Shutdown, Attendees() = %+v", got)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("something still listens on %s after Shutdown", addr)
	}
	if err := s.Serve(context.Background()); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve after Shutdown: %v, want ErrServerClosed", err)
	}
	if _, err := sshtest.Dial(t, addr, sshtest.Options{User: "late"}); err == nil {
		t.Errorf("an attendee joined a closed room")
	}

	for _, c := range []*sshtest.Client{alice, tiny, mute} {
		c.Close()
	}
	goleak.VerifyNone(t, before)
}

// TestShutdownStuckModel: a model stuck in Update for good cannot stop the
// room from closing within ShutdownTimeout: its cleanup runs, its
// connection is cut, the others end normally, and Shutdown names it.
// A client may keep its connection after its session ended (one
// connection shared among sessions): Shutdown gives it a moment, then cuts
// it, well before its own time runs out.
func TestShutdownCutsAConnectionKeptOpen(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	s, err := New(Config{Listen: "127.0.0.1:0", HostKeyDir: t.TempDir() + "/k", ShutdownTimeout: 10 * testwait.Timeout()}, rec.app)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(context.Background()) }()
	keeper := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "keeper", KeepOpen: true})
	keeper.WaitScreen(testwait.Timeout(), "probe user=keeper")
	closed := keeper.ConnClosed()

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	if code := keeper.WaitExit(testwait.Timeout()); code != 0 {
		t.Errorf("exit status %d after the room closed, want 0", code)
	}
	select {
	case <-closed:
	case <-time.After(testwait.Timeout()):
		t.Fatalf("the server left open a connection whose session had ended")
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(testwait.Timeout()):
		t.Fatalf("Shutdown did not return once the connection was cut")
	}
}

func TestShutdownStuckModel(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	t.Cleanup(func() { close(rec.release) })
	s, err := New(Config{Listen: "127.0.0.1:0", HostKeyDir: t.TempDir() + "/k", ShutdownTimeout: 3 * time.Second}, rec.app)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(context.Background()) }()
	alice := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "alice"})
	bob := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "bob"})
	alice.WaitScreen(testwait.Timeout(), "probe user=alice")
	bob.WaitScreen(testwait.Timeout(), "probe user=bob")
	alice.Press("x")
	rec.waitStuck(t, "alice", testwait.Timeout())

	start := time.Now()
	err = s.Shutdown(context.Background())
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "(alice)") {
		t.Errorf("Shutdown with a stuck model: %v, want an error naming alice", err)
	}
	if took > 4*time.Second {
		t.Errorf("Shutdown took %s with a 3 s timeout", took)
	}
	if code := bob.WaitExit(testwait.Timeout()); code != 0 {
		t.Errorf("bob's exit status %d, want 0", code)
	}
	rec.waitCleaned(t, "bob", 1, time.Second)
	rec.waitCleaned(t, "alice", 1, time.Second)
	alice.WaitGone(testwait.Timeout())
}

// TestKilledClientRunsCleanup: a client whose TCP connection vanishes
// without an SSH goodbye (ssh killed with -9) has its session ended and
// its cleanup run.
func TestKilledClientRunsCleanup(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	s := startRoom(t, Config{}, rec.app)
	alice := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "alice"})
	bob := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "bob"})
	alice.WaitScreen(testwait.Timeout(), "probe user=alice")
	bob.WaitScreen(testwait.Timeout(), "probe user=bob")

	alice.Kill()
	rec.waitCleaned(t, "alice", 1, testwait.Timeout())
	for end := time.Now().Add(testwait.Timeout()); len(s.Attendees()) != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("alice is still an attendee: %+v", s.Attendees())
		}
	}
	bob.Press("+")
	bob.WaitScreen(testwait.Timeout(), "count=1")
}

// TestBroadcast: Broadcast never waits for a stuck session, reaches the
// others at once, and the stuck one catches up with the newest messages
// when it recovers; sending to an ended session is harmless.
func TestBroadcast(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	s := startRoom(t, Config{}, rec.app)
	alice := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "alice"})
	bob := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "bob"})
	alice.WaitScreen(testwait.Timeout(), "probe user=alice")
	bob.WaitScreen(testwait.Timeout(), "probe user=bob")
	bob.Press("x") // bob's model is stuck in Update
	rec.waitStuck(t, "bob", testwait.Timeout())

	start := time.Now()
	for i := range 1000 {
		s.Broadcast(noteMsg(fmt.Sprintf("n%d", i)))
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("1000 broadcasts took %s with a stuck session", took)
	}
	alice.WaitScreen(testwait.Timeout(), "note=n999")
	var dropped int
	for _, a := range s.Attendees() {
		if a.User == "bob" {
			dropped = a.Dropped
		}
	}
	if dropped == 0 {
		t.Errorf("the stuck session dropped nothing from 1000 messages")
	}

	close(rec.release)
	bob.WaitScreen(testwait.Timeout(), "note=n999")
	rec.release = make(chan struct{})

	bob.Press("q")
	bob.WaitExit(testwait.Timeout())
	rec.waitCleaned(t, "bob", 1, testwait.Timeout())
	rec.mu.Lock()
	ended := rec.sessions["bob"]
	rec.mu.Unlock()
	ended.Inbox.Push(noteMsg("late"))
	s.Broadcast(noteMsg("later"))
	alice.WaitScreen(testwait.Timeout(), "note=later")
}

// TestHostKeyReused: the host key is made once, kept private, and the same
// key (and fingerprint) is served after a restart.
func TestHostKeyReused(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	dir := t.TempDir() + "/hostkey"
	s1, err := New(Config{Listen: "127.0.0.1:0", HostKeyDir: dir}, rec.app)
	if err != nil {
		t.Fatal(err)
	}
	fp := s1.Fingerprint()
	if err := s1.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown of a room never served: %v", err)
	}
	if !strings.HasPrefix(fp, "SHA256:") {
		t.Fatalf("Fingerprint() = %q", fp)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("host key directory: %v, mode %v, want 0700", err, st.Mode().Perm())
	}
	key := filepath.Join(dir, HostKeyFile)
	if st, err := os.Stat(key); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("host key: %v, want mode 0600", err)
	}

	s2 := startRoom(t, Config{HostKeyDir: dir}, rec.app)
	if s2.Fingerprint() != fp {
		t.Fatalf("after a restart the fingerprint is %s, was %s", s2.Fingerprint(), fp)
	}
	pubText, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	pub, _, _, _, err := gossh.ParseAuthorizedKey(pubText)
	if err != nil {
		t.Fatal(err)
	}
	if gossh.FingerprintSHA256(pub) != fp {
		t.Fatalf("the key file's fingerprint %s is not the served %s", gossh.FingerprintSHA256(pub), fp)
	}
	conn, err := gossh.Dial("tcp", s2.Addr().String(), &gossh.ClientConfig{User: "alice", HostKeyCallback: gossh.FixedHostKey(pub)})
	if err != nil {
		t.Fatalf("the restarted room does not present the stored key: %v", err)
	}
	conn.Close()
}

// TestHostileUserName: the user name is the client's to choose, escape
// sequences included; the App gets it printable and short.
func TestHostileUserName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"alice":                      "alice",
		"\x1b[2J\x1b]0;pwned\x07eve": "[2J]0;pwnedeve",
		"  \t\r\n":                   "attendee",
		strings.Repeat("é", 40):      strings.Repeat("é", 32),
	} {
		if got := cleanName(in); got != want {
			t.Errorf("cleanName(%q) = %q, want %q", in, got, want)
		}
	}

	rec := newRecorder()
	s := startRoom(t, Config{}, rec.app)
	eve := sshtest.MustDial(t, s.Addr().String(), sshtest.Options{User: "\x1b[2J\x1b]0;pwned\x07eve"})
	eve.WaitScreen(testwait.Timeout(), "user=[2J]0;pwnedeve")
	if got := s.Attendees(); len(got) != 1 || got[0].User != "[2J]0;pwnedeve" {
		t.Errorf("Attendees() = %+v", got)
	}
}
