package main

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/pgtest"
)

// tmuxSession drives the built binary in a detached tmux server of its
// own, the way a presenter at a terminal would.
type tmuxSession struct {
	t      *testing.T
	socket string
}

func (s *tmuxSession) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", s.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	return string(out), err
}

func (s *tmuxSession) screen() string {
	out, err := s.tmux("capture-pane", "-p", "-t", "lr")
	if err != nil {
		return "(no screen: " + strings.TrimSpace(out) + ")"
	}
	return out
}

// waitScreen polls the screen until it shows want.
func (s *tmuxSession) waitScreen(want string, d time.Duration) string {
	s.t.Helper()
	end := time.Now().Add(d)
	var scr string
	for time.Now().Before(end) {
		scr = s.screen()
		if strings.Contains(scr, want) {
			return scr
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("the screen never showed %q within %s; last screen:\n%s", want, d, scr)
	return ""
}

func (s *tmuxSession) keys(k ...string) {
	s.t.Helper()
	if out, err := s.tmux(append([]string{"send-keys", "-t", "lr"}, k...)...); err != nil {
		s.t.Fatalf("send-keys %v: %v %s", k, err, out)
	}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// TestTmuxEndToEnd opens renewal-race at 1075 with blind renewal, sees the
// late heartbeat's UPDATE 1, flips to compare-and-renew with r and sees
// UPDATE 0, exports with e and reads the transcript back, resizes to
// 80×24, quits with q and checks the exit status.
func TestTmuxEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("LEASERACE_REQUIRE_POSTGRES") == "" {
			t.Skip("tmux is not installed; this test drives the UI through it")
		}
		t.Fatal("tmux is not installed, and LEASERACE_REQUIRE_POSTGRES asks for every end-to-end test")
	}
	dsn := pgtest.DSN(t)
	dir, err := os.MkdirTemp("", "lr-tmux-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	exportDir := filepath.Join(dir, "export")
	if err := os.Mkdir(exportDir, 0o755); err != nil {
		t.Fatal(err)
	}
	status := filepath.Join(dir, "status")

	cmdline := []string{built.path, "--scenario", "renewal-race", "--at", "1075", "--renewal", "blind", "--fencing", "off",
		"--pg", "dsn", "--dsn", dsn, "--export-dir", exportDir}
	quoted := make([]string, len(cmdline))
	for i, c := range cmdline {
		quoted[i] = shellQuote(c)
	}
	script := filepath.Join(dir, "run.sh")
	body := strings.Join(quoted, " ") + "\necho $? > " + shellQuote(status) + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}

	var b [6]byte
	_, _ = rand.Read(b[:])
	s := &tmuxSession{t: t, socket: "leaserace-test-" + hex.EncodeToString(b[:])}
	if out, err := s.tmux("new-session", "-d", "-s", "lr", "-x", "120", "-y", "40", "sh "+shellQuote(script)); err != nil {
		t.Fatalf("tmux new-session: %v %s", err, out)
	}
	t.Cleanup(func() { _, _ = s.tmux("kill-server") })
	// Keep the pane after the program exits, so its last screen can be read.
	_, _ = s.tmux("set-option", "-t", "lr", "remain-on-exit", "on")

	s.waitScreen("UPDATE 1", time.Minute)
	s.keys("r")
	s.waitScreen("UPDATE 0", 30*time.Second)

	s.keys("e")
	var exported string
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end) && exported == ""; time.Sleep(100 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(exportDir, "leaserace-renewal-race-*.json")); len(m) > 0 {
			exported = m[0]
		}
	}
	if exported == "" {
		t.Fatalf("e exported no transcript into %s; screen:\n%s", exportDir, s.screen())
	}
	tr := readExported(t, exported)
	if tr.Knobs.Renewal != "compare" {
		t.Errorf("exported knobs %s, want compare renewal", tr.Knobs)
	}
	if c := tr.Outcome.Coordinator; c == nil || c.Owner != "B" || c.Fence != 2 {
		t.Errorf("exported coordinator %+v, want owner B, fence 2", c)
	}

	if out, err := s.tmux("resize-window", "-t", "lr", "-x", "80", "-y", "24"); err != nil {
		t.Fatalf("resize-window: %v %s", err, out)
	}
	small := s.waitScreen("UPDATE 0", 10*time.Second)
	lines := strings.Split(strings.TrimRight(small, "\n"), "\n")
	if len(lines) > 24 {
		t.Errorf("at 80×24 the screen has %d lines:\n%s", len(lines), small)
	}
	for i, l := range lines {
		if w := len([]rune(l)); w > 80 {
			t.Errorf("line %d is %d columns wide at 80×24: %q", i+1, w, l)
		}
	}

	s.keys("q")
	var code string
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if data, err := os.ReadFile(status); err == nil && strings.HasSuffix(string(data), "\n") {
			code = strings.TrimSpace(string(data))
			break
		}
	}
	if code != "0" {
		t.Fatalf("exit status after q: %q, want 0; screen:\n%s", code, s.screen())
	}
}

func readExported(t *testing.T, path string) engine.Transcript {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := engine.ReadTranscript(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tr
}
