package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/pgtest"
)

// loadRef is any attribute by which a page makes a browser load something.
var loadRef = regexp.MustCompile(`(?i)\b(src|href)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)`)

// checkOfflinePage reads an HTML page leaserace wrote and checks it loads
// nothing from the network and shows what the issue asks of it.
func checkOfflinePage(t *testing.T, file string, want ...string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	for _, m := range loadRef.FindAllStringSubmatch(page, -1) {
		if v := strings.ToLower(m[2]); strings.Contains(v, "http://") || strings.Contains(v, "https://") {
			t.Errorf("%s: %s reaches the network", file, m[0])
		}
	}
	if !strings.HasPrefix(page, "<!DOCTYPE html>") {
		t.Errorf("%s does not start as an HTML page: %.60q", file, page)
	}
	for _, w := range want {
		if !strings.Contains(page, w) {
			t.Errorf("%s lacks %q", file, w)
		}
	}
	return page
}

// The example: paused-holder under compare/off as a page, with no
// network reference, lanes for A, B and the clock, A's write accepted
// stale, UPDATE 1 and CONFLICT; verify re-runs the page live, replay opens
// it in the terminal with no database, and replay --format json gives the
// run back digest for digest.
func TestRunHTMLPageVerifiesAndReplays(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "p.html")
	res := leaserace(t, args(pgArgs(t), "run", "--scenario", "paused-holder", "--renewal", "compare", "--fencing", "off", "--format", "html", "--out", file)...)
	if res.code != 0 {
		t.Fatalf("run --format html: %v", res)
	}
	checkOfflinePage(t, file, `data-lane="A"`, `data-lane="B"`, `data-lane="clock"`, `data-kind="stale"`, ">STALE</text>", "UPDATE 1", "CONFLICT")

	// An --out ending in .html gets the page without --format.
	byExt := filepath.Join(dir, "q.html")
	if res := leaserace(t, args(pgArgs(t), "run", "--scenario", "paused-holder", "--renewal", "compare", "--fencing", "off", "--out", byExt)...); res.code != 0 {
		t.Fatalf("run --out q.html: %v", res)
	}
	checkOfflinePage(t, byExt, `data-kind="stale"`)

	res = leaserace(t, args(pgArgs(t), "verify", file)...)
	if res.code != 0 || !strings.Contains(res.stdout, "identical") {
		t.Fatalf("verify p.html: want exit 0, identical; got %v", res)
	}

	env := noPostgresEnv(t)
	js := runHidden(t, env, "replay", file, "--format", "json")
	if js.code != 0 {
		t.Fatalf("replay p.html --format json: %v", js)
	}
	tr := readTranscript(t, js.stdout)
	if tr.Scenario != "paused-holder" || len(tr.Steps) != 6 || tr.Outcome.Verdict != "conflict" {
		t.Errorf("the page's run reads back as %s, %d steps, %s", tr.Scenario, len(tr.Steps), tr.Outcome.Verdict)
	}
	if d, err := tr.ComputeDigest(); err != nil || d != tr.Digest {
		t.Errorf("the page's digest %s recomputes as %s (%v)", tr.Digest, d, err)
	}

	s, status := tmuxHidden(t, env, 120, 40, "replay", file, "--at", "1080")
	s.waitFlat("REPLAY p.html", 3*pgtest.WaitTimeout())
	// The first frame may be drawn before the pane's size reaches the
	// program, with the header cut short: wait for its whole line.
	scr := s.waitFlat("no database in use", pgtest.WaitTimeout())
	for _, w := range []string{"paused-holder", "no database in use", "t=1080"} {
		if !strings.Contains(flat(scr), w) {
			t.Errorf("the replay of the page lacks %q:\n%s", w, scr)
		}
	}
	s.keys("q")
	if code := exitStatus(t, s, status); code != "0" {
		t.Fatalf("exit status %s after q; screen:\n%s", code, s.screen())
	}
}

// A played run's page names each goal reached, against par, and its moves
// for run --moves; verify re-runs it.
func TestPlayedRunHTMLPage(t *testing.T) {
	t.Parallel()
	moves := "A:pause@1050,clock:expire@1060,B:acquire@1060,B:effect@1060,A:resume@1060,A:effect@1060"
	file := filepath.Join(t.TempDir(), "played.html")
	res := leaserace(t, args(pgArgs(t), "run", "--scenario", "paused-holder", "--renewal", "compare", "--fencing", "off", "--moves", moves, "--out", file)...)
	if res.code != 0 {
		t.Fatalf("run --moves --out played.html: %v", res)
	}
	page := checkOfflinePage(t, file, "Goals of this played run", `data-goal="stale-write"`, "<b>reached</b> in 6 moves; par 6", moves, "CONFLICT")
	if strings.Count(page, `<g class="mark `) != 6 {
		t.Errorf("want 6 moves drawn, got %d", strings.Count(page, `<g class="mark `))
	}
	if res := leaserace(t, args(pgArgs(t), "verify", file)...); res.code != 0 {
		t.Fatalf("verify played.html: %v", res)
	}
}

// verify and replay refuse an HTML file that carries no run, saying so.
func TestHTMLWithoutARunIsRefused(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "other.html")
	if err := os.WriteFile(file, []byte("<!DOCTYPE html><html><body><p>not a run</p></body></html>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := noPostgresEnv(t)
	for _, cmd := range [][]string{{"verify", file}, {"replay", file, "--format", "md"}} {
		res := runHidden(t, env, cmd...)
		if res.code != 2 || !strings.Contains(res.stderr, "carries no run") || !strings.Contains(res.stderr, "other.html") {
			t.Errorf("%s of an HTML page without a run: want exit 2 naming the file and saying it carries no run, got %v", cmd[0], res)
		}
	}
}

// replay --format html makes the page of a recording with no database,
// and the page gives back the recording, digest for digest.
func TestReplayFormatHTMLWithoutPostgres(t *testing.T) {
	t.Parallel()
	env := noPostgresEnv(t)
	src := shippedFile("busy-holder--blind-strict")
	res := runHidden(t, env, "replay", src, "--format", "html")
	if res.code != 0 {
		t.Fatalf("replay --format html: %v", res)
	}
	file := filepath.Join(t.TempDir(), "busy.html")
	if err := os.WriteFile(file, []byte(res.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	checkOfflinePage(t, file, `data-kind="blocked"`, "VALID WRITE", "BLOCKED")
	back := runHidden(t, env, "replay", file, "--format", "json")
	want, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if back.code != 0 || readTranscript(t, back.stdout).Digest != readTranscript(t, string(want)).Digest {
		t.Errorf("the page's run reads back as another: %v", back)
	}
}

// SOURCE_DATE_EPOCH fixes the recorded time, so one run written twice is
// the same bytes (the README's page screenshot depends on it) and verify
// still reproduces it; a value that is no number of seconds is refused
// before any server starts, naming the variable.
func TestSourceDateEpochMakesRunsReproducible(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var pages []string
	for _, name := range []string{"one.html", "two.html"} {
		file := filepath.Join(dir, name)
		res := leaseraceEnv(t, []string{"SOURCE_DATE_EPOCH=1700000000"}, args(pgArgs(t), "run", "--scenario", "busy-holder", "--renewal", "blind", "--fencing", "strict", "--out", file)...)
		if res.code != 0 {
			t.Fatalf("run --out %s: %v", name, res)
		}
		pages = append(pages, checkOfflinePage(t, file, "2023-11-14T22:13:20Z"))
	}
	if pages[0] != pages[1] {
		t.Error("the same run written twice with SOURCE_DATE_EPOCH differs")
	}
	if res := leaserace(t, args(pgArgs(t), "verify", filepath.Join(dir, "one.html"))...); res.code != 0 {
		t.Fatalf("verify of a page with a fixed recorded time: %v", res)
	}
	for _, bad := range []string{"soon", "-5", "1.5"} {
		res := runHidden(t, append(noPostgresEnv(t), "SOURCE_DATE_EPOCH="+bad), "run", "--out", filepath.Join(dir, "bad.html"))
		if res.code != 2 || !strings.Contains(res.stderr, "SOURCE_DATE_EPOCH") || !strings.Contains(res.stderr, bad) {
			t.Errorf("SOURCE_DATE_EPOCH=%s: want exit 2 naming it, got %v", bad, res)
		}
		if _, err := os.Stat(filepath.Join(dir, "bad.html")); !os.IsNotExist(err) {
			t.Errorf("SOURCE_DATE_EPOCH=%s left a file behind (%v)", bad, err)
		}
	}
}
