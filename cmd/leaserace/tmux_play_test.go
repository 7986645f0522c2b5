package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
)

// menuNumber is the number the play menu on screen gives the move whose
// words start with words.
func menuNumber(t *testing.T, s *tmuxSession, words string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^[ ▶]+([0-9]) ` + regexp.QuoteMeta(words))
	// The menu follows the move before, run in PostgreSQL: twice the
	// usual wait.
	for end := time.Now().Add(2 * pgtest.WaitTimeout()); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if m := re.FindStringSubmatch(s.screen()); m != nil {
			return m[1]
		}
	}
	t.Fatalf("the menu offers no %q; screen:\n%s", words, s.screen())
	return ""
}

// scrollTo is the number of the menu entry that starts with words, after
// scrolling the menu down until it shows; the key to play it.
func scrollTo(t *testing.T, s *tmuxSession, words string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^[ ▶]+([0-9]) ` + regexp.QuoteMeta(words))
	for range 20 {
		// As in menuNumber: twice the usual wait.
		if m := re.FindStringSubmatch(s.waitScreen("Your move", 2*pgtest.WaitTimeout())); m != nil {
			return m[1]
		}
		if strings.Contains(s.screen(), "more below") {
			before := s.screen()
			s.keys("Down")
			for end := time.Now().Add(pgtest.WaitTimeout()); time.Now().Before(end) && s.screen() == before; time.Sleep(20 * time.Millisecond) {
			}
			continue
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the menu offers no %q; screen:\n%s", words, s.screen())
	return ""
}

// A learner schedules the race in a real terminal: play mode under
// blind/off, moves chosen from the menu until the stale-write goal is
// reached. The export holds the moves and the conflict; the same moves
// under compare/monotonic reach no conflict.
func TestTmuxPlayModeReachesTheGoal(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	dir := t.TempDir()
	s, status := tmuxStart(t, 120, 48, built.path, "--scenario", "renewal-race", "--renewal", "blind", "--fencing", "off",
		"--play", "--no-ask", "--pg", "dsn", "--dsn", dsn, "--export-dir", dir)
	// The first screen waits on the binary starting and building its run
	// in PostgreSQL, beside the other parallel tests: six times the usual
	// wait (so for every first screen below).
	s.waitScreen("Your move", 6*pgtest.WaitTimeout())
	for i, words := range []string{
		"A sends heartbeat hb1",
		"advance the clock to 1060",
		"advance the clock to 1070",
		"B tries to acquire the lease now",
		"B writes its effect",
		"advance the clock to 1075",
		"deliver hb1",
		"A writes its effect",
	} {
		n := menuNumber(t, s, words)
		s.keys(n)
		// The move ran once the header counts it; the menu on that frame
		// is the one for the next move. A move runs in PostgreSQL: twice
		// the usual wait (so for every move below).
		s.waitScreen(fmt.Sprintf("event %d/%d", i+1, i+1), 2*pgtest.WaitTimeout())
	}
	// The goal's line follows the last move, with par from the session's
	// schedule search: three times the usual wait (so for every goal
	// below).
	scr := s.waitFlat("The resource accepts a stale write — reached in 8 moves", 3*pgtest.WaitTimeout())
	if !strings.Contains(flat(scr), "2 effects / CONFLICT") {
		t.Errorf("no conflict on screen:\n%s", scr)
	}
	s.keys("e")
	exported := s.waitExported(dir, "leaserace-renewal-race-*.json")
	s.keys("q")
	if code := exitStatus(t, s, status); code != "0" {
		t.Fatalf("exit status %q", code)
	}
	tr := readExported(t, exported)
	if tr.Outcome.Verdict != scenario.VerdictConflict || len(tr.Steps) != 8 || !strings.HasPrefix(tr.Moves, "A:send hb1@1055,clock:advance@1060") {
		t.Fatalf("exported %d steps, verdict %s, moves %q", len(tr.Steps), tr.Outcome.Verdict, tr.Moves)
	}
	// The same schedule under the repair: no conflict.
	moves := filepath.Join(dir, "moves.txt")
	if err := os.WriteFile(moves, []byte(tr.Moves+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := leaseraceEnv(t, nil, "run", "--scenario", "renewal-race", "--renewal", "compare", "--fencing", "monotonic",
		"--moves-file", moves, "--pg", "dsn", "--dsn", dsn)
	if res.code != 0 || !strings.Contains(res.stdout, `"verdict": "safe"`) {
		t.Fatalf("the same moves under compare/monotonic: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
}

// The same race in the smallest usual terminal, 80×24: the goals, the
// verdict and the key hint stay on screen, the lanes show the stale write,
// and the moves are chosen by their numbers all the way to the goal.
func TestTmuxPlayAt80x24(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	s, status := tmuxStart(t, 80, 24, built.path, "--scenario", "renewal-race", "--renewal", "blind", "--fencing", "off",
		"--play", "--no-ask", "--pg", "dsn", "--dsn", dsn)
	scr := s.waitScreen("Your move", 6*pgtest.WaitTimeout())
	for _, want := range []string{"Goals under blind/off", "0 effects / safe", "↓/j choose"} {
		if !strings.Contains(scr, want) {
			t.Fatalf("80×24 --play opens without %q:\n%s", want, scr)
		}
	}
	for i, words := range []string{
		"A sends heartbeat hb1",
		"advance the clock to 1060",
		"advance the clock to 1070",
		"B tries to acquire the lease now",
		"B writes its effect",
		"advance the clock to 1075",
		"deliver hb1",
		"A writes its effect",
	} {
		s.keys(scrollTo(t, s, words))
		s.waitScreen(fmt.Sprintf("event %d/%d", i+1, i+1), 2*pgtest.WaitTimeout())
	}
	scr = s.waitFlat("The resource accepts a stale write — reached in 8 moves", 3*pgtest.WaitTimeout())
	for _, want := range []string{"2 effects / CONFLICT", "↓/j choose", "stale write accepted"} {
		if !strings.Contains(flat(scr), want) {
			t.Errorf("80×24 at the goal lacks %q:\n%s", want, scr)
		}
	}
	if lines := strings.Split(strings.TrimRight(scr, "\n"), "\n"); len(lines) > 24 {
		t.Errorf("the screen has %d lines", len(lines))
	}
	s.keys("q")
	if code := exitStatus(t, s, status); code != "0" {
		t.Fatalf("exit status %q", code)
	}
}

// Kleppmann's paused client, stepped through in a real terminal:
// compare-and-renew cannot stop its stale write, monotonic fencing can.
func TestTmuxPausedHolderAndFencing(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	s, status := tmuxStart(t, 120, 40, built.path, "--scenario", "paused-holder", "--renewal", "compare", "--fencing", "off",
		"--no-ask", "--pg", "dsn", "--dsn", dsn)
	s.waitScreen("event 0/6", 6*pgtest.WaitTimeout())
	for i := 1; i <= 6; i++ {
		s.keys("Right")
		s.waitScreen("event "+string(rune('0'+i))+"/6", 2*pgtest.WaitTimeout())
	}
	scr := s.waitFlat("2 effects / CONFLICT", 2*pgtest.WaitTimeout())
	if !strings.Contains(flat(scr), "A writes on the check it made at 1050") {
		t.Errorf("the narration does not say A wrote on its old check:\n%s", scr)
	}
	s.keys("f", "f") // off → strict → monotonic, at the same step
	// Each f replays the run under the new fencing: three times the usual
	// wait (so for the f below).
	s.waitFlat("fencing: monotonic", 3*pgtest.WaitTimeout())
	scr = s.waitFlat("1 effect / safe", 3*pgtest.WaitTimeout())
	// The sentence wraps inside the narration's box: each part on its line.
	for _, want := range []string{"monotonic wants the resource's highest fence accepted ≤ the write's", "fence, and 34 ≤ 33 is false: refused"} {
		if !strings.Contains(flat(scr), want) {
			t.Errorf("monotonic fencing did not refuse A's write in words (%q):\n%s", want, scr)
		}
	}
	s.keys("q")
	if code := exitStatus(t, s, status); code != "0" {
		t.Fatalf("exit status %q", code)
	}
}

// A learner plays paused-holder to its stale-write goal under blind/off,
// toggles fencing to strict and presses e: the files hold the run on
// screen (blind/strict, no goal reached), say so in their title, and list
// the stale write reached under blind/off with the moves that reached it.
// verify re-runs the exported run digest for digest; the played schedule
// of the other setting replays the goal.
func TestTmuxPlayedExportNamesItsRun(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	dir := t.TempDir()
	s, status := tmuxStart(t, 120, 48, built.path, "--scenario", "paused-holder", "--renewal", "blind", "--fencing", "off",
		"--play", "--no-ask", "--pg", "dsn", "--dsn", dsn, "--export-dir", dir)
	s.waitScreen("Your move", 6*pgtest.WaitTimeout())
	for i, words := range []string{
		"A pauses",
		"advance the clock to 1060",
		"B tries to acquire the lease now",
		"B writes its effect",
		"A resumes",
		"A writes its effect",
	} {
		s.keys(menuNumber(t, s, words))
		s.waitScreen(fmt.Sprintf("event %d/%d", i+1, i+1), 2*pgtest.WaitTimeout())
	}
	s.waitFlat("after B wrote with 34 — reached in 6 moves (par 6)", 3*pgtest.WaitTimeout())
	s.keys("f") // fencing off → strict, the same moves replayed
	s.waitFlat("fencing: strict", 3*pgtest.WaitTimeout())
	s.keys("e")
	exported := s.waitExported(dir, "leaserace-paused-holder-*.json")
	// e writes the run in every format, par from the schedule search
	// included: twice the usual wait.
	scr := s.waitFlat("exported the run on screen (blind/strict, reached two-holders)", 2*pgtest.WaitTimeout())
	if !strings.Contains(flat(scr), "also listed: stale-write under blind/off") {
		t.Errorf("the status should name the goal reached under the other setting:\n%s", scr)
	}
	s.keys("q")
	if code := exitStatus(t, s, status); code != "0" {
		t.Fatalf("exit status %q", code)
	}

	const path = "A:pause@1050,clock:advance@1060,B:acquire@1060,B:effect@1060,A:resume@1060,A:effect@1060"
	tr := readExported(t, exported)
	if tr.Knobs.Fencing != scenario.FencingStrict || tr.Outcome.Verdict != scenario.VerdictSafe || tr.Moves != path {
		t.Fatalf("the files should hold the run on screen (blind/strict, safe, the played path): %s, %s, %q", tr.Knobs, tr.Outcome.Verdict, tr.Moves)
	}
	p := tr.Played
	if p == nil || len(p.Goals) == 0 || len(p.Elsewhere) != 1 {
		t.Fatalf("played section: %+v", p)
	}
	for _, g := range p.Goals {
		if g.ID == "stale-write" && g.Reached {
			t.Errorf("under strict fencing the stale write is not reached: %+v", g)
		}
	}
	if e := p.Elsewhere[0]; e.ID != "stale-write" || !e.Reached || e.Moves != 6 || e.Path != path || e.Knobs.Fencing != scenario.FencingOff {
		t.Errorf("elsewhere: %+v", e)
	} else if e.Par == nil || e.Par.Moves != 6 {
		t.Errorf("the goal reached under blind/off should carry par 6 from the goal panel's search: %+v", e.Par)
	}
	md, err := os.ReadFile(strings.TrimSuffix(exported, ".json") + ".md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# leaserace played run: paused-holder, renewal blind, fencing strict\n",
		"## Goals\n",
		"Reached in the same session under another setting, by a run this file does not hold:",
		"**stale-write** (The resource accepts A's write with fence 33 after B wrote with 34), renewal blind, fencing off: **reached** in 6 moves, par 6: `" + path + "`",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if !strings.Contains(string(md), "**played** `B:acquire@1060` at t=1060 (blind/off) → `UPDATE 1`") {
		t.Errorf("the session log should name each move played:\n%s", md)
	}
	mmd, err := os.ReadFile(strings.TrimSuffix(exported, ".json") + ".mmd")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mmd), "title paused-holder: renewal blind, fencing strict") {
		t.Errorf("the diagram's title should name the setting on screen:\n%s", mmd)
	}

	// Round trip: verify re-runs the exported run live, digest for digest.
	res := leaseraceEnv(t, nil, "verify", exported, "--pg", "dsn", "--dsn", dsn)
	if res.code != 0 {
		t.Fatalf("verify of the exported played run: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	// replay shows the played path with its goals.
	res = leaseraceEnv(t, nil, "replay", exported, "--format", "md")
	if res.code != 0 || !strings.Contains(res.stdout, "## Goals") || !strings.Contains(res.stdout, path) {
		t.Fatalf("replay --format md: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
}

// waitExported waits for e's transcript to appear in dir as a file
// matching glob and returns its path; it fails the test, with the screen,
// if none does. e writes every format, par from the schedule search
// included: three times the usual wait.
func (s *tmuxSession) waitExported(dir, glob string) string {
	s.t.Helper()
	for end := time.Now().Add(3 * pgtest.WaitTimeout()); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(dir, glob)); len(m) > 0 {
			return m[0]
		}
	}
	s.t.Fatalf("e exported no transcript into %s; screen:\n%s", dir, s.screen())
	return ""
}
