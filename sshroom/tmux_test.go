package sshroom

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leaserace/leaserace/internal/testwait"
)

// TestOpenSSHInTmux: the real OpenSSH client, in a real terminal (tmux),
// shows the attendee's screen, follows a resize, takes keys, and exits 0
// on q with its cleanup run.
func TestOpenSSHInTmux(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{"tmux", "ssh"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed: %v", bin, err)
		}
	}
	if sigwinchBlocked() {
		// Inherited blocked, SIGWINCH stays blocked in tmux's children:
		// OpenSSH 9.2 never unblocks it, so no resize could reach the room.
		t.Fatal("SIGWINCH is blocked in this test process (perf record, for one, blocks it in what it runs): OpenSSH would never hear the pane's resizes")
	}
	rec := newRecorder()
	s := startRoom(t, Config{MinWidth: 40, MinHeight: 12}, rec.app)
	_, port, err := net.SplitHostPort(s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}

	// A socket in the test's directory goes away with it.
	socket := filepath.Join(t.TempDir(), "tmux")
	tmux := func(args ...string) (string, error) {
		out, err := exec.Command("tmux", append([]string{"-S", socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
		return string(out), err
	}
	sshCmd := fmt.Sprintf("ssh -tt -p %s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR alice@127.0.0.1; echo EXIT=$?; sleep 60", port)
	if out, err := tmux("new-session", "-d", "-s", "room", "-x", "100", "-y", "30", sshCmd); err != nil {
		t.Fatalf("tmux new-session: %v %s", err, out)
	}
	t.Cleanup(func() { _, _ = tmux("kill-server") })

	screen := func() string {
		out, err := tmux("capture-pane", "-p", "-t", "room")
		if err != nil {
			return "(no screen: " + out + ")"
		}
		return out
	}
	waitScreen := func(d time.Duration, want ...string) {
		t.Helper()
		end := time.Now().Add(d)
		for {
			scr := screen()
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(scr, w)
			}
			if ok {
				return
			}
			if time.Now().After(end) {
				// Where a size went missing: the pane's own size is what
				// OpenSSH was told, Attendees what the room heard.
				pane, _ := tmux("display-message", "-p", "-t", "room", "#{pane_width}x#{pane_height}")
				t.Fatalf("the tmux pane never showed %q within %s (the pane is %s, the room has %+v); it shows:\n%s",
					want, d, strings.TrimSpace(pane), s.Attendees(), scr)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	keys := func(k ...string) {
		t.Helper()
		if out, err := tmux(append([]string{"send-keys", "-t", "room"}, k...)...); err != nil {
			t.Fatalf("send-keys %v: %v %s", k, err, out)
		}
	}

	// The first screen waits on tmux starting and OpenSSH connecting,
	// key exchange and all, on top of the room: twice the usual wait.
	waitScreen(2*testwait.Timeout(), "probe user=alice", "size=100x30", "count=0")
	keys("+", "+")
	waitScreen(testwait.Timeout(), "count=2")
	if out, err := tmux("resize-window", "-t", "room", "-x", "90", "-y", "25"); err != nil {
		t.Fatalf("resize-window: %v %s", err, out)
	}
	waitScreen(testwait.Timeout(), "size=90x25", "count=2")
	if out, err := tmux("resize-window", "-t", "room", "-x", "30", "-y", "10"); err != nil {
		t.Fatalf("resize-window: %v %s", err, out)
	}
	waitScreen(testwait.Timeout(), "at least 40x12")
	if out, err := tmux("resize-window", "-t", "room", "-x", "100", "-y", "30"); err != nil {
		t.Fatalf("resize-window: %v %s", err, out)
	}
	waitScreen(testwait.Timeout(), "size=100x30", "count=2")
	if got := s.Attendees(); len(got) != 1 || got[0].User != "alice" || got[0].Width != 100 {
		t.Errorf("Attendees() = %+v, want alice at 100 columns", got)
	}
	keys("q")
	waitScreen(testwait.Timeout(), "EXIT=0")
	rec.waitCleaned(t, "alice", 1, testwait.Timeout())
}

// sigwinchBlocked says whether this process started with SIGWINCH (28)
// blocked, from the SigBlk mask in /proc (false where there is none).
func sigwinchBlocked() bool {
	status, _ := os.ReadFile("/proc/self/status")
	_, mask, _ := strings.Cut(string(status), "\nSigBlk:")
	mask, _, _ = strings.Cut(mask, "\n")
	m, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
	return err == nil && m&(1<<(28-1)) != 0
}
