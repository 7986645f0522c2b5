package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/pgtest/zonkytest"
	"github.com/leaserace/leaserace/engine/transcript"
)

// tmuxSession drives the built binary in a detached tmux server of its
// own, the way a presenter at a terminal would.
type tmuxSession struct {
	t      *testing.T
	socket string // the server's socket path
}

// newTmuxSession gives a test a tmux server of its own, on a socket in a
// directory of its own: tmux leaves its socket file behind when the server
// is killed, and a name under /tmp/tmux-UID (-L) left one there for every
// test that ever ran. When the test ends the server is killed and the
// directory removed. The directory is made with MkdirTemp, not t.TempDir:
// a test's name can make the path longer than a Unix socket's limit.
func newTmuxSession(t *testing.T) *tmuxSession {
	t.Helper()
	dir, err := os.MkdirTemp("", "lr-tmux-")
	if err != nil {
		t.Fatal(err)
	}
	s := &tmuxSession{t: t, socket: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		_, _ = s.tmux("kill-server")
		_ = os.RemoveAll(dir)
	})
	return s
}

func (s *tmuxSession) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-S", s.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	return string(out), err
}

func (s *tmuxSession) screen() string {
	out, err := s.tmux("capture-pane", "-p", "-t", "lr")
	if err != nil {
		return "(no screen: " + strings.TrimSpace(out) + ")"
	}
	return out
}

// state says what the pane's processes are doing, for a failure's message:
// a screen that stayed blank does not say whether leaserace ran, waited or
// was gone.
func (s *tmuxSession) state() string {
	out, err := s.tmux("display-message", "-p", "-t", "lr", "#{pane_pid} dead=#{pane_dead} status=#{pane_dead_status}")
	if err != nil {
		return "(no pane: " + strings.TrimSpace(out) + ")"
	}
	lines := []string{"pane " + strings.TrimSpace(out)}
	var pid int
	_, _ = fmt.Sscan(out, &pid)
	binary := 0
	for _, p := range append([]proc{{pid: pid, cmd: "(the pane's shell)"}}, descendants(pid)...) {
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
		_, state, _ := strings.Cut(string(status), "\nState:")
		state, _, _ = strings.Cut(state, "\n")
		wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", p.pid))
		lines = append(lines, fmt.Sprintf("pid %d %s: %s, waiting in %q", p.pid, p.cmd, strings.TrimSpace(state), wchan))
		if binary == 0 && strings.HasPrefix(p.cmd, built.path) {
			binary = p.pid
		}
	}
	if binary != 0 {
		lines = append(lines, s.goroutines(binary))
	}
	return strings.Join(lines, "\n")
}

// goroutines ends the pane's leaserace with SIGQUIT, for which Go prints
// every goroutine's stack, and returns that dump: a screen left blank with
// the process asleep says nothing of what it waits for. The pane is made
// tall enough to hold the dump first, since the alternate screen keeps no
// history.
func (s *tmuxSession) goroutines(pid int) string {
	_, _ = s.tmux("resize-window", "-t", "lr", "-y", "3000")
	// The TUI keeps the terminal raw: without output processing each line
	// of the dump would start where the last one ended.
	if tty, err := s.tmux("display-message", "-p", "-t", "lr", "#{pane_tty}"); err == nil {
		_ = exec.Command("stty", "-F", strings.TrimSpace(tty), "opost", "onlcr").Run()
	}
	if err := syscall.Kill(pid, syscall.SIGQUIT); err != nil {
		return fmt.Sprintf("(no goroutine dump: %v)", err)
	}
	for end := time.Now().Add(pgtest.WaitTimeout()); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if out, err := s.tmux("display-message", "-p", "-t", "lr", "#{pane_dead}"); err != nil || strings.TrimSpace(out) == "1" {
			break
		}
	}
	out, err := s.tmux("capture-pane", "-p", "-J", "-t", "lr", "-S", "-", "-E", "-")
	if err != nil {
		return "(no goroutine dump: " + strings.TrimSpace(out) + ")"
	}
	if i := strings.Index(out, "SIGQUIT"); i >= 0 {
		out = out[i:]
	}
	return "leaserace's goroutines at SIGQUIT:\n" + strings.TrimSpace(out)
}

// waitScreen polls the screen until it shows want.
func (s *tmuxSession) waitScreen(want string, d time.Duration) string {
	s.t.Helper()
	return s.waitFor(want, d, func(scr string) bool { return strings.Contains(scr, want) })
}

// waitFor polls the screen until shows holds for it, settled, and returns
// it; it fails the test, naming want, after d.
func (s *tmuxSession) waitFor(want string, d time.Duration, shows func(string) bool) string {
	s.t.Helper()
	end := time.Now().Add(d)
	var scr string
	for time.Now().Before(end) {
		if scr = s.screen(); shows(scr) {
			if scr = s.settled(scr); shows(scr) {
				return scr
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("the screen never showed %q within %s; last screen:\n%s\n%s", want, d, scr, s.state())
	return ""
}

// settled returns the screen once two captures 20 ms apart agree, or the
// last capture after a second of a screen that keeps changing (a progress
// line): the caller's own wait goes on from there. tmux can be caught
// halfway through reading a frame: a test that found one line and then
// looked for another on the same capture read a frame whose last lines
// were not there yet.
func (s *tmuxSession) settled(scr string) string {
	s.t.Helper()
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
		next := s.screen()
		if next == scr {
			return scr
		}
		scr = next
	}
	return scr
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
	t.Parallel()
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
	s, status := tmuxStart(t, 120, 40, built.path, "--scenario", "renewal-race", "--at", "1075", "--renewal", "blind", "--fencing", "off",
		"--pg", "dsn", "--dsn", dsn, "--export-dir", exportDir)

	// The first screen waits on the binary starting and building its run
	// in PostgreSQL, beside the other parallel tests: six times the usual
	// wait.
	s.waitScreen("UPDATE 1", 6*pgtest.WaitTimeout())
	s.keys("r")
	// r rebuilds the run under the other renewal: three times the usual
	// wait.
	s.waitScreen("UPDATE 0", 3*pgtest.WaitTimeout())

	s.keys("e")
	exported := s.waitExported(exportDir, "leaserace-renewal-race-*.json")
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
	small := s.waitScreen("UPDATE 0", pgtest.WaitTimeout())
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
	if code := exitStatus(t, s, status); code != "0" {
		t.Fatalf("exit status after q: %q, want 0; screen:\n%s", code, s.screen())
	}
}

func readExported(t *testing.T, path string) transcript.Transcript {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := transcript.Read(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tr
}

// TestTmuxFaultsShownInPlace drives the TUI through two injected faults on
// its own local cluster: the run's resource killed (the next write fails
// and the screen names the resource), then a panic inside a step (the
// screen names a bug). R brings the run back each time; the race still ends
// in its two effects and a conflict, q exits 0, and the cluster, its
// directory and its processes are gone.
func TestTmuxFaultsShownInPlace(t *testing.T) {
	t.Parallel()
	tmp := zonkytest.OpenDir(t, "lr-tmux-faults-")
	// resource-down fires before the acquire at 1070, so B's effect at
	// 1070 is the write that finds no resource; the panic hits A's effect.
	s, status := tmuxStart(t, 120, 40, "env", "TMPDIR="+tmp, "NO_COLOR=1", "LEASERACE_FAULT=resource-down@1070,panic@1080",
		built.path, "--scenario", "renewal-race", "--renewal", "blind", "--fencing", "off", "--pg", "local", "--no-ask")

	// The first screen waits on a local cluster made and started (initdb
	// and all): twelve times the usual wait.
	s.waitScreen("event 0/6", 12*pgtest.WaitTimeout())
	s.keys("Right")
	s.waitScreen("event 1/6", pgtest.WaitTimeout())
	s.keys("Right")
	s.waitScreen("event 2/6", pgtest.WaitTimeout())
	s.keys("Right")
	s.waitScreen("event 3/6", pgtest.WaitTimeout())
	began := time.Now()
	s.keys("Right")
	scr := s.waitFlat("The resource stopped answering", pgtest.WaitTimeout())
	if d := time.Since(began); d > time.Second {
		t.Errorf("the dead resource took %s to show, want within a second", d)
	}
	if !strings.Contains(scr, "event 3/6") {
		t.Errorf("the screen did not keep the last good step:\n%s", scr)
	}
	s.keys("R")
	// R reconnects and replays the run: three times the usual wait, as
	// for the second R below.
	s.waitFlat("reconnected and replayed to t=1070", 3*pgtest.WaitTimeout())
	s.keys("Right")
	s.waitScreen("event 4/6", pgtest.WaitTimeout())
	s.keys("Right")
	s.waitScreen("UPDATE 1", pgtest.WaitTimeout())

	s.keys("Right")
	scr = s.waitFlat("leaserace hit a bug", pgtest.WaitTimeout())
	if !strings.Contains(flat(scr), "injected fault: panic inside the step at t=1080") || !strings.Contains(scr, "event 5/6") {
		t.Errorf("the panic is not reported in place over the last good step:\n%s", scr)
	}
	s.keys("R")
	s.waitFlat("reconnected and replayed to t=1075", 3*pgtest.WaitTimeout())
	s.keys("Right")
	scr = s.waitScreen("event 6/6", pgtest.WaitTimeout())
	if !strings.Contains(flat(scr), "2 effects / CONFLICT") {
		t.Errorf("after both faults the race does not end in 2 effects and a conflict:\n%s", scr)
	}

	s.keys("q")
	if code := exitStatus(t, s, status); code != "0" {
		t.Fatalf("exit status after q: %q, want 0; screen:\n%s", code, s.screen())
	}
	for _, p := range processesUnder(t, tmp) {
		t.Errorf("left behind: %s", p)
	}
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		t.Errorf("left behind: %s", filepath.Join(tmp, e.Name()))
	}
}

// schemaOnScreen is the run's schema the full help names.
var schemaOnScreen = regexp.MustCompile(`on this run's schema (lr_[0-9a-f]+):`)

// psqlFromScreen reads the psql command the full help shows: the line
// that starts it and the lines it wraps onto, up to its closing quote,
// joined with line breaks as a copy from the terminal gives them.
func psqlFromScreen(t *testing.T, scr string) string {
	t.Helper()
	lines := strings.Split(scr, "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, " ")
		if !strings.HasPrefix(l, `psql "`) {
			continue
		}
		cmd := []string{l}
		for j := i + 1; (len(cmd) == 1 && len(l) == len(`psql "`) || !strings.HasSuffix(l, `"`)) && j < len(lines); j++ {
			l = strings.TrimRight(lines[j], " ")
			cmd = append(cmd, l)
		}
		if !strings.HasSuffix(l, `"`) {
			t.Fatalf("the psql line on screen has no end:\n%s", scr)
		}
		return strings.Join(cmd, "\n")
	}
	t.Fatalf("no psql line on screen:\n%s", scr)
	return ""
}

// psqlBeside runs what the screen showed, as a presenter pasting it into
// a shell beside the TUI would, with the query appended.
func psqlBeside(t *testing.T, line, query string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("sh", "-c", line+" -X -A -t -c "+shellQuote(query))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// TestTmuxPsqlBesideTheRun opens renewal-race at 1075 under blind renewal
// on leaserace's own local cluster, reads the psql line from the full help
// on screen and runs it: psql sees A|1, as the screen does. After a switch
// to control the help names the new run's schema and its line reaches
// it. On the way out the terminal shows both lines, written to standard
// error when each run opened.
func TestTmuxPsqlBesideTheRun(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("psql"); err != nil {
		if os.Getenv("LEASERACE_REQUIRE_POSTGRES") == "1" {
			t.Fatal("psql is not installed (LEASERACE_REQUIRE_POSTGRES=1)")
		}
		t.Skip("psql is not installed")
	}
	tmp := zonkytest.OpenDir(t, "lr-tmux-psql-")
	s, status := tmuxStart(t, 120, 40, "env", "TMPDIR="+tmp, "NO_COLOR=1",
		built.path, "--scenario", "renewal-race", "--renewal", "blind", "--fencing", "off", "--at", "1075", "--pg", "local")

	// The first screen waits on a local cluster made and started (initdb
	// and all): twelve times the usual wait.
	s.waitScreen("UPDATE 1", 12*pgtest.WaitTimeout())
	s.keys("?")
	scr := s.waitScreen("psql beside it", pgtest.WaitTimeout())
	m := schemaOnScreen.FindStringSubmatch(scr)
	if m == nil {
		t.Fatalf("the full help names no schema:\n%s", scr)
	}
	first := m[1]
	line := psqlFromScreen(t, scr)
	if !strings.Contains(line, "search_path="+first) || !strings.Contains(line, "host="+tmp) {
		t.Errorf("the psql line does not reach schema %s on the cluster under %s:\n%s", first, tmp, line)
	}
	if got := psqlBeside(t, line, "SELECT owner, fence FROM leases"); got != "A|1" {
		t.Errorf("psql beside blind renewal at 1075 read %q, want A|1 as on screen:\n%s", got, scr)
	}

	// control is second in the chooser; the full help stays open.
	s.keys("s")
	s.waitScreen("Choose a scenario", pgtest.WaitTimeout())
	s.keys("j", "Enter")
	// The switch opens a new run in PostgreSQL: three times the usual
	// wait.
	scr = s.waitScreen("leaserace · control", 3*pgtest.WaitTimeout())
	if m = schemaOnScreen.FindStringSubmatch(scr); m == nil {
		t.Fatalf("after the switch the full help names no schema:\n%s", scr)
	}
	second := m[1]
	if second == first {
		t.Fatalf("after the switch the help still names %s:\n%s", first, scr)
	}
	line = psqlFromScreen(t, scr)
	if !strings.Contains(line, "search_path="+second) {
		t.Errorf("after the switch the psql line does not set search_path to %s:\n%s", second, line)
	}
	if got := psqlBeside(t, line, "SELECT owner, fence, expires_at FROM leases"); got != "A|1|1060" {
		t.Errorf("psql beside control at its start read %q, want A|1|1060:\n%s", got, scr)
	}

	s.keys("q")
	if code := exitStatus(t, s, status); code != "0" {
		t.Fatalf("exit status after q: %q, want 0; screen:\n%s", code, s.screen())
	}
	// With the history: tmux's "Pane is dead" line may scroll the top away.
	after, err := s.tmux("capture-pane", "-p", "-S", "-", "-t", "lr")
	if err != nil {
		t.Fatalf("capture-pane: %v %s", err, after)
	}
	for _, want := range []string{"leaserace: psql beside renewal-race, on schema " + first + ":", "leaserace: psql beside control, on schema " + second + ":"} {
		if !strings.Contains(after, want) {
			t.Errorf("after leaving, the terminal does not show %q:\n%s", want, after)
		}
	}
	for _, p := range processesUnder(t, tmp) {
		t.Errorf("left behind: %s", p)
	}
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		t.Errorf("left behind: %s", filepath.Join(tmp, e.Name()))
	}
}

// pidAndStderr wraps a leaserace command line for tmuxStart: the shell
// writes its pid to pidFile and execs the binary in place, its stderr into
// errFile, so the test knows the binary's pid and can read what it said
// after its terminal is gone. ignoreHUP starts it with SIGHUP ignored, as
// nohup does.
func pidAndStderr(pidFile, errFile string, ignoreHUP bool, args ...string) []string {
	script := `echo $$ > ` + shellQuote(pidFile) + `; exec "$0" "$@" 2> ` + shellQuote(errFile)
	if ignoreHUP {
		script = `trap '' HUP; ` + script
	}
	return append([]string{"sh", "-c", script, built.path}, args...)
}

// readPID waits for pidAndStderr's pid file.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	pgtest.Eventually(t, "the binary's pid in "+path, func() bool {
		data, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(data), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	})
	return pid
}

// gone says whether pid has exited (or is a zombie nobody reaped yet).
func gone(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, _, alive := parseStat(stat)
	return !alive
}

// TestTmuxClosingTheTerminalCleansUp closes the terminal under the TUI (the
// tmux server goes, and with it the pane's terminal: SIGHUP) while it runs
// on a local cluster of its own. leaserace says it hung up, and the
// cluster, its directory and its processes are gone.
func TestTmuxClosingTheTerminalCleansUp(t *testing.T) {
	t.Parallel()
	tmp := zonkytest.OpenDir(t, "lr-tmux-hup-")
	files := t.TempDir()
	pidFile, errFile := filepath.Join(files, "pid"), filepath.Join(files, "stderr")
	line := append([]string{"env", "TMPDIR=" + tmp, "NO_COLOR=1"}, pidAndStderr(pidFile, errFile, false,
		"--scenario", "renewal-race", "--pg", "local", "--no-ask")...)
	s, _ := tmuxStart(t, 120, 40, line...)
	// The first screen waits on a local cluster made and started.
	s.waitScreen("event 0/6", 12*pgtest.WaitTimeout())
	pid := readPID(t, pidFile)
	if dirs, _ := filepath.Glob(filepath.Join(tmp, "leaserace-pg-*")); len(dirs) != 1 {
		t.Fatalf("want the run's cluster under %s, found %v", tmp, dirs)
	}

	if out, err := s.tmux("kill-server"); err != nil {
		t.Fatalf("tmux kill-server: %v %s", err, out)
	}
	pgtest.Eventually(t, "leaserace to exit after its terminal closed", func() bool { return gone(pid) })
	stderr, _ := os.ReadFile(errFile)
	if !strings.Contains(string(stderr), "leaserace: hung up (the terminal closed); everything leaserace started has been stopped") {
		t.Errorf("stderr does not say it hung up:\n%s", stderr)
	}
	for _, p := range processesUnder(t, tmp) {
		t.Errorf("left behind: %s", p)
	}
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		t.Errorf("left behind: %s", filepath.Join(tmp, e.Name()))
	}
}

// TestTmuxHangupIgnoredUnderNohup starts the TUI with SIGHUP ignored, as
// nohup does, and sends it one: it goes on (the next step draws), and q
// still exits 0.
func TestTmuxHangupIgnoredUnderNohup(t *testing.T) {
	t.Parallel()
	files := t.TempDir()
	pidFile := filepath.Join(files, "pid")
	s, status := tmuxStart(t, 120, 40, pidAndStderr(pidFile, filepath.Join(files, "stderr"), true,
		args(pgArgs(t), "--scenario", "renewal-race", "--no-ask")...)...)
	s.waitScreen("event 0/6", 3*pgtest.WaitTimeout())
	if err := syscall.Kill(readPID(t, pidFile), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// Had the signal stopped it, the run would end with 129 on its own
	// (under a second here); a step drawn after it and q's exit 0 show it
	// went on.
	s.keys("Right")
	s.waitScreen("event 1/6", pgtest.WaitTimeout())
	s.keys("q")
	if code := exitStatus(t, s, status); code != "0" {
		t.Fatalf("exit status after q: %q, want 0; screen:\n%s", code, s.screen())
	}
}

// The tests' tmux servers leave nothing behind: not the server, not the
// socket file tmux keeps after kill-server.
func TestTmuxSessionLeavesNoSocket(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	var socket string
	t.Run("session", func(t *testing.T) {
		s := newTmuxSession(t)
		socket = s.socket
		if out, err := s.tmux("new-session", "-d", "-s", "lr", "sleep 600"); err != nil {
			t.Fatalf("tmux new-session: %v %s", err, out)
		}
		if _, err := os.Stat(socket); err != nil {
			t.Fatalf("the server's socket is not where the session says: %v", err)
		}
	})
	if _, err := os.Stat(socket); !os.IsNotExist(err) {
		t.Errorf("the socket %s is still there after the test (%v)", socket, err)
	}
	if _, err := os.Stat(filepath.Dir(socket)); !os.IsNotExist(err) {
		t.Errorf("the socket's directory is still there after the test (%v)", err)
	}
	if out, err := exec.Command("tmux", "-S", socket, "list-sessions").CombinedOutput(); err == nil {
		t.Errorf("the tmux server still answers after the test:\n%s", out)
	}
}
