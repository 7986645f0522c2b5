package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/sshroom"
	gossh "golang.org/x/crypto/ssh"
)

// TestServeOverOpenSSHInTmux: leaserace serve on a throwaway local
// cluster, two attendees with the real OpenSSH client in a real terminal
// (tmux). alice steps and sees the race move; bob, on a run of his own, is
// untouched. SIGTERM ends serve with 143 within 10 s: both attendees are
// told and their ssh exits 0, and nothing is left (no cluster directory, no
// process, no listener).
func TestServeOverOpenSSHInTmux(t *testing.T) {
	for _, bin := range []string{"tmux", "ssh"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("LEASERACE_REQUIRE_POSTGRES") == "1" {
				t.Fatalf("%s is not installed, and LEASERACE_REQUIRE_POSTGRES asks for every end-to-end test", bin)
			}
			t.Skipf("%s is not installed: %v", bin, err)
		}
	}
	t.Parallel()
	tmp := localTempDir(t)
	keyDir := filepath.Join(t.TempDir(), "hostkey")
	s := startLeaserace(t, []string{"TMPDIR=" + tmp}, "serve", "--pg", "local", "--listen", "127.0.0.1:0", "--host-key-dir", keyDir)
	// The address alone is the first line of standard output. It follows
	// a local cluster made and started (initdb and all): eighteen times
	// the usual wait.
	startLimit := 18 * pgtest.WaitTimeout()
	if !s.stdout.waitFor("\n", startLimit) {
		select {
		case <-s.done:
			skipWithoutLocal(t, s.cmd.ProcessState.ExitCode(), s.stderr.String())
		default:
		}
		t.Fatalf("serve printed no address within %s; stderr:\n%s", startLimit, s.stderr.String())
	}
	addr := strings.TrimSpace(strings.SplitN(s.stdout.String(), "\n", 2)[0])
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("the first line of standard output is %q, want 127.0.0.1:PORT", addr)
	}
	// serve writes its lines for people before the address, but the two
	// streams are separate pipes, each read on its own: the address can
	// reach this test first. The presenter's line is the last of them.
	if !s.stderr.waitFor("presenter: leaserace present", pgtest.WaitTimeout()) {
		t.Fatalf("serve printed its address but not the presenter's line on standard error:\n%s", s.stderr.String())
	}
	// The fingerprint printed is the key's in the key directory.
	pubText, err := os.ReadFile(filepath.Join(keyDir, sshroom.HostKeyFile+".pub"))
	if err != nil {
		t.Fatal(err)
	}
	pub, _, _, _, err := gossh.ParseAuthorizedKey(pubText)
	if err != nil {
		t.Fatal(err)
	}
	if fp := gossh.FingerprintSHA256(pub); !strings.Contains(s.stderr.String(), "host key fingerprint "+fp) {
		t.Errorf("stderr does not print the host key's fingerprint %s:\n%s", fp, s.stderr.String())
	}
	if !regexp.MustCompile(`attendees connect with ssh -p ` + port + ` NAME@127\.0\.0\.1`).MatchString(s.stderr.String()) {
		t.Errorf("stderr does not say how to connect:\n%s", s.stderr.String())
	}

	tm := newTmuxSession(t)
	for _, who := range []string{"alice", "bob"} {
		line := fmt.Sprintf("ssh -tt -p %s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR %s@127.0.0.1; echo EXIT=$?; sleep 600", port, who)
		if out, err := tm.tmux("new-session", "-d", "-s", who, "-x", "120", "-y", "40", line); err != nil {
			t.Fatalf("tmux new-session %s: %v %s", who, err, out)
		}
	}
	pane := func(who string) string {
		out, err := tm.tmux("capture-pane", "-p", "-t", who)
		if err != nil {
			return "(no screen: " + strings.TrimSpace(out) + ")"
		}
		return out
	}
	wait := func(who string, d time.Duration, want ...string) string {
		t.Helper()
		end := time.Now().Add(d)
		for {
			scr := pane(who)
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(scr, w)
			}
			if ok {
				return scr
			}
			if time.Now().After(end) {
				t.Fatalf("%s's terminal never showed %q within %s; it shows:\n%s\nserve's stderr:\n%s", who, want, d, scr, s.stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	keys := func(who string, k ...string) {
		t.Helper()
		if out, err := tm.tmux(append([]string{"send-keys", "-t", who}, k...)...); err != nil {
			t.Fatalf("send-keys %s %v: %v %s", who, k, err, out)
		}
	}

	// The first screen waits on OpenSSH connecting and the attendee's run
	// being made in PostgreSQL: three times the usual wait.
	wait("alice", 3*pgtest.WaitTimeout(), "renewal-race", "event 0/6", "following the presenter")
	wait("bob", 3*pgtest.WaitTimeout(), "renewal-race", "event 0/6", "following the presenter")
	keys("alice", "Right")
	wait("alice", pgtest.WaitTimeout(), "event 1/6", "A heartbeat.send hb1")
	keys("alice", "l", "l")
	wait("alice", pgtest.WaitTimeout(), "event 3/6", "B acquire", "UPDATE 1", "owner         B (was A)")
	if scr := pane("bob"); !strings.Contains(scr, "event 0/6") || !strings.Contains(scr, "No statement yet") {
		t.Errorf("alice's steps reached bob's terminal:\n%s", scr)
	}
	// Bob's own key, sent after alice's three were handled, is the event
	// that proves his session has moved past them: had any of hers reached
	// him, his step would land on event 4/6, not 1/6.
	keys("bob", "l")
	wait("bob", pgtest.WaitTimeout(), "event 1/6", "A heartbeat.send hb1")
	if scr := pane("alice"); !strings.Contains(scr, "event 3/6") {
		t.Errorf("bob's step reached alice's terminal:\n%s", scr)
	}

	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// serve stops its local cluster before it exits: three times the
	// usual wait (how long it took is checked below).
	code := s.wait(t, 3*pgtest.WaitTimeout())
	took := time.Since(start)
	t.Logf("serve exited %d, %s after SIGTERM; stderr:\n%s", code, took, s.stderr.String())
	if code != cli.ExitTerm {
		t.Errorf("serve's exit status after SIGTERM: %d, want %d", code, cli.ExitTerm)
	}
	if took > 10*time.Second {
		t.Errorf("serve took %s to stop after SIGTERM, want at most 10 s", took)
	}
	for _, who := range []string{"alice", "bob"} {
		wait(who, pgtest.WaitTimeout(), "The presenter closed the room. Thank you for joining!", "EXIT=0")
	}
	if !strings.Contains(s.stderr.String(), "terminated; everything leaserace started has been stopped") {
		t.Errorf("stderr does not say serve was terminated:\n%s", s.stderr.String())
	}
	if strings.Contains(s.stderr.String(), "warning:") {
		t.Errorf("serve warned on its way out:\n%s", s.stderr.String())
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still listens after serve exited", addr)
	}
	assertNoCluster(t, tmp)
}

// TestServeAndPresentRefuseBadFlags: what cannot work is refused with exit
// 2 before any server starts.
func TestServeAndPresentRefuseBadFlags(t *testing.T) {
	t.Parallel()
	keys := filepath.Join(t.TempDir(), "hostkey")
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"serve", "--open", "--host-key-dir", keys}, "--open only matters with --allow-remote"},
		{[]string{"serve", "--listen", "0.0.0.0:2222", "--host-key-dir", keys}, "other machines can reach"},
		{[]string{"serve", "--max-conns", "1", "--host-key-dir", keys}, "--max-conns 1"},
		{[]string{"serve", "--max-attendees", "0", "--host-key-dir", keys}, "--max-attendees 0"},
		{[]string{"serve", "--room", "Bad Room", "--host-key-dir", keys}, `--room "Bad Room": a room name is 1 to 40 lowercase letters`},
		{[]string{"serve", "--idle-timeout", "-5s", "--host-key-dir", keys}, "--idle-timeout -5s: want 0 (never) or more"},
		{[]string{"serve", "--room-idle", "-1s", "--host-key-dir", keys}, "--room-idle: an idle bound of -1s is too short"},
		{[]string{"serve", "--room-idle", "299ms", "--host-key-dir", keys}, "use 300ms or more"},
		{[]string{"present", "--room", "Bad Room"}, `--room "Bad Room": a room name is 1 to 40 lowercase letters`},
		{[]string{"present"}, "not a terminal"},
	} {
		res := leaserace(t, tc.args...)
		if res.code != cli.ExitUsage || !strings.Contains(res.stderr, tc.says) {
			t.Errorf("leaserace %v: want exit 2 saying %q, got %v", tc.args, tc.says, res)
		}
		if strings.Contains(res.stderr, "starting PostgreSQL") {
			t.Errorf("leaserace %v started PostgreSQL before refusing its flags:\n%s", tc.args, res.stderr)
		}
	}
	if _, err := os.Stat(keys); err == nil {
		t.Errorf("a refused serve made the host key directory %s", keys)
	}
}
