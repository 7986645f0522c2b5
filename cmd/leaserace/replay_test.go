package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine/pgtest"
)

// shippedFile is a shipped transcript as seen from this package.
func shippedFile(name string) string {
	return filepath.Join("..", "..", "assets", "transcripts", name+".json")
}

// noPostgresEnv is an environment in which no PostgreSQL provider can
// start: a PATH with no initdb, postgres or docker, DOCKER_HOST on a socket
// that does not exist, the local provider told to look nowhere
// (LEASERACE_PG_BINDIR set and empty, so /usr/lib/postgresql is not
// searched either), a HOME without a Docker context or testcontainers
// settings, no DATABASE_URL or PG* variables, and the embedded provider's
// mirror on a loopback port that refuses (no download from the internet).
func noPostgresEnv(t *testing.T) []string {
	t.Helper()
	return []string{
		"PATH=" + t.TempDir(),
		"HOME=" + t.TempDir(),
		"TMPDIR=" + t.TempDir(),
		"DOCKER_HOST=unix:///nonexistent/docker.sock",
		"LEASERACE_PG_BINDIR=",
		"LEASERACE_PG_MIRROR=http://127.0.0.1:1/m2",
		"TERM=xterm-256color",
		"LANG=C.UTF-8",
	}
}

// runHidden runs the binary to completion with only env, not this
// process's environment.
func runHidden(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(built.path, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running leaserace %v: %v", args, err)
	}
	return res
}

// tmuxHidden starts the binary with args in a tmux pane of w×h, with only
// env in its environment, and returns the session and the file its exit
// status lands in.
func tmuxHidden(t *testing.T, env []string, w, h int, args ...string) (*tmuxSession, string) {
	t.Helper()
	envBin, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env(1) to start the binary with a bare environment")
	}
	line := append([]string{envBin, "-i"}, env...)
	return tmuxStart(t, w, h, append(append(line, built.path), args...)...)
}

// tmuxStart runs the command line in a detached tmux server of its own, in
// a pane of w×h that stays after the program exits (so its last screen can
// be read), and returns the session and the file its exit status lands in.
func tmuxStart(t *testing.T, w, h int, line ...string) (*tmuxSession, string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("LEASERACE_REQUIRE_POSTGRES") == "" {
			t.Skip("tmux is not installed; this test drives the UI through it")
		}
		t.Fatal("tmux is not installed, and LEASERACE_REQUIRE_POSTGRES asks for every end-to-end test")
	}
	dir := t.TempDir()
	status := filepath.Join(dir, "status")
	quoted := make([]string, len(line))
	for i, c := range line {
		quoted[i] = shellQuote(c)
	}
	script := filepath.Join(dir, "run.sh")
	body := strings.Join(quoted, " ") + "\necho $? > " + shellQuote(status) + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	s := newTmuxSession(t)
	if out, err := s.tmux("new-session", "-d", "-s", "lr", "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), "sh "+shellQuote(script)); err != nil {
		t.Fatalf("tmux new-session: %v %s", err, out)
	}
	_, _ = s.tmux("set-option", "-t", "lr", "remain-on-exit", "on")
	return s, status
}

// flat is a screen with its line breaks and indents folded into single
// spaces, so wrapped sentences can be looked for whole.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// waitFlat polls the screen until its flattened text holds want.
func (s *tmuxSession) waitFlat(want string, d time.Duration) string {
	s.t.Helper()
	return s.waitFor(want, d, func(scr string) bool { return strings.Contains(flat(scr), want) })
}

// exitStatus waits for the script to record the binary's exit status.
func exitStatus(t *testing.T, s *tmuxSession, status string) string {
	t.Helper()
	for end := time.Now().Add(3 * pgtest.WaitTimeout()); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if data, err := os.ReadFile(status); err == nil && strings.HasSuffix(string(data), "\n") {
			return strings.TrimSpace(string(data))
		}
	}
	t.Fatalf("leaserace did not exit; screen:\n%s", s.screen())
	return ""
}

// TestReplayWithoutPostgresInTmux replays a shipped transcript where no
// PostgreSQL provider could start: the recorded UPDATE 1 at 1075 under the
// REPLAY banner, r to the compare recording's UPDATE 0, e exports every
// format, q exits 0.
func TestReplayWithoutPostgresInTmux(t *testing.T) {
	t.Parallel()
	env := noPostgresEnv(t)
	exportDir := t.TempDir()
	file, err := filepath.Abs(shippedFile("renewal-race--blind-off"))
	if err != nil {
		t.Fatal(err)
	}
	s, status := tmuxHidden(t, env, 120, 40, "replay", file, "--at", "1075", "--export-dir", exportDir)
	scr := s.waitFlat("UPDATE 1", 3*pgtest.WaitTimeout())
	for _, want := range []string{"REPLAY renewal-race--blind-off.json", "recorded 2026-", "on local, PostgreSQL", "no database in use", "t=1075"} {
		if !strings.Contains(flat(scr), want) {
			t.Errorf("the replay screen lacks %q:\n%s", want, scr)
		}
	}
	s.keys("r")
	scr = s.waitFlat("UPDATE 0 — zero rows", pgtest.WaitTimeout())
	if !strings.Contains(flat(scr), "shipped recording renewal-race--compare-off.json") {
		t.Errorf("the banner does not name the compare recording:\n%s", scr)
	}
	s.keys("e")
	s.waitFlat("✓ exported", pgtest.WaitTimeout())
	for _, ext := range []string{".json", ".md", ".mmd", ".cast", ".html"} {
		m, _ := filepath.Glob(filepath.Join(exportDir, "leaserace-renewal-race-*"+ext))
		if len(m) != 1 {
			t.Errorf("export %s: %v", ext, m)
			continue
		}
		if ext == ".cast" {
			data, err := os.ReadFile(m[0])
			if err != nil {
				t.Fatal(err)
			}
			validateCast(t, data, 5)
		}
		if ext == ".json" {
			if tr := readExported(t, m[0]); tr.Knobs.Renewal != "compare" || len(tr.Steps) != 5 {
				t.Errorf("exported %s with %d steps, want compare with 5", tr.Knobs, len(tr.Steps))
			}
		}
	}
	s.keys("q")
	if code := exitStatus(t, s, status); code != "0" {
		t.Fatalf("exit status %s after q; screen:\n%s", code, s.screen())
	}
}

// TestBareLeaseraceFallsBackToRecordings runs bare leaserace where no
// PostgreSQL provider can start: it shows the shipped recordings with the
// banner and the reason, r and s work on them, q exits 0 and standard
// error says what happened. With --fallback=false it exits 3 instead.
func TestBareLeaseraceFallsBackToRecordings(t *testing.T) {
	t.Parallel()
	env := noPostgresEnv(t)
	s, status := tmuxHidden(t, env, 100, 30, "--at", "1075")
	scr := s.waitFlat("Showing recorded runs: press r/f to switch between recorded runs.", 6*pgtest.WaitTimeout())
	for _, want := range []string{
		"REPLAY shipped recording renewal-race--blind-off.json",
		"No PostgreSQL here (container: no Docker engine answers at DOCKER_HOST=unix:///nonexistent/docker.sock; local: PostgreSQL server binaries not found; embedded: could not download PostgreSQL",
		"UPDATE 1",
	} {
		if !strings.Contains(flat(scr), want) {
			t.Errorf("the fallback screen lacks %q:\n%s", want, scr)
		}
	}
	s.keys("r")
	s.waitFlat("UPDATE 0", pgtest.WaitTimeout())
	s.keys("s", "Down", "Enter")
	scr = s.waitFlat("opened control", pgtest.WaitTimeout())
	if !strings.Contains(flat(scr), "shipped recording control--compare-off.json") || !strings.Contains(flat(scr), "No PostgreSQL here") {
		t.Errorf("s did not open the other scenario's recording with the same knobs:\n%s", scr)
	}
	s.keys("q")
	if code := exitStatus(t, s, status); code != "0" {
		t.Fatalf("exit status %s after q; screen:\n%s", code, s.screen())
	}
	// -J joins the lines the terminal wrapped; -S - takes in the history.
	after, _ := s.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "lr")
	if !strings.Contains(flat(after), "leaserace: No PostgreSQL here (container:") || !strings.Contains(flat(after), "showed the recorded runs instead") {
		t.Errorf("standard error does not say the runs were recorded:\n%s", after)
	}

	s, status = tmuxHidden(t, env, 100, 30, "--fallback=false")
	if code := exitStatus(t, s, status); code != "3" {
		t.Fatalf("--fallback=false: exit status %s, want 3; screen:\n%s", code, s.screen())
	}
}

// Without a terminal, replay --format writes the file in another format,
// also without any database; an explicit --pg local finds no binaries
// where LEASERACE_PG_BINDIR says and exits 3 rather than falling back.
func TestReplayHeadlessWithoutPostgres(t *testing.T) {
	t.Parallel()
	env := noPostgresEnv(t)
	file := shippedFile("renewal-race--blind-off")
	res := runHidden(t, env, "replay", file, "--format", "cast")
	if res.code != 0 {
		t.Fatalf("replay --format cast: %v", res)
	}
	validateCast(t, []byte(res.stdout), 6)
	res = runHidden(t, env, "replay", file, "--format", "md")
	if res.code != 0 || !strings.HasPrefix(res.stdout, "# leaserace transcript: renewal-race") {
		t.Fatalf("replay --format md: %v", res)
	}
	res = runHidden(t, env, "run", "--pg", "local")
	if res.code != 3 || !strings.Contains(res.stderr, "LEASERACE_PG_BINDIR") {
		t.Errorf("run --pg local with LEASERACE_PG_BINDIR empty: want exit 3 naming it, got %v", res)
	}
}

func TestReplayUsageErrors(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"format":"something else"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	file := shippedFile("renewal-race--blind-off")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"replay"}, "needs exactly one transcript file"},
		{[]string{"replay", file, file}, "needs exactly one transcript file"},
		{[]string{"replay", filepath.Join(t.TempDir(), "missing.json")}, "cannot open the transcript"},
		{[]string{"replay", bad}, `transcript format "something else"`},
		{[]string{"replay", file, "--format", "pdf"}, `--format "pdf"`},
		{[]string{"replay", file, "--at", "99"}, "outside the recording's timeline"},
		{[]string{"replay", file}, "not a terminal"},
	} {
		res := leaserace(t, c.args...)
		if res.code != 2 || !strings.Contains(res.stderr, c.want) {
			t.Errorf("%v: want exit 2 saying %q, got %v", c.args, c.want, res)
		}
	}
}

// run --format cast writes the asciicast of a live run; an --out ending
// in .cast gets one too, and an --out directory gets it beside json, md
// and mmd.
func TestRunWritesAsciicast(t *testing.T) {
	t.Parallel()
	pg := pgArgs(t)
	res := leaserace(t, args(pg, "run", "--format", "cast")...)
	if res.code != 0 {
		t.Fatalf("run --format cast: %v", res)
	}
	frames := validateCast(t, []byte(res.stdout), 6)
	if !strings.Contains(strings.Join(frames, ""), "2 effects / CONFLICT") {
		t.Error("the cast never shows the conflict")
	}
	dir := t.TempDir()
	res = leaserace(t, args(pg, "run", "--renewal", "compare", "--out", filepath.Join(dir, "race.cast"))...)
	if res.code != 0 {
		t.Fatalf("run --out race.cast: %v", res)
	}
	data, err := os.ReadFile(filepath.Join(dir, "race.cast"))
	if err != nil {
		t.Fatal(err)
	}
	if frames := validateCast(t, data, 6); !strings.Contains(strings.Join(frames, ""), "UPDATE 0") {
		t.Error("the compare cast never shows UPDATE 0")
	}
	out := filepath.Join(dir, "all") + string(filepath.Separator)
	res = leaserace(t, args(pg, "run", "--out", out)...)
	if res.code != 0 {
		t.Fatalf("run --out DIR/: %v", res)
	}
	for _, ext := range []string{".json", ".md", ".mmd", ".cast", ".html"} {
		if st, err := os.Stat(filepath.Join(out, "renewal-race--blind-off"+ext)); err != nil || st.Size() == 0 {
			t.Errorf("run --out DIR/ did not write %s: %v", ext, err)
		}
	}
}

// validateCast checks data against asciicast v2 (a header object with
// version 2 and integer width, height and timestamp, then [time, "o"|"m",
// data] events with times that never go back) with one marker per step,
// and returns the frames.
func validateCast(t *testing.T, data []byte, steps int) []string {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() {
		t.Fatal("empty asciicast")
	}
	var head struct {
		Version   *int              `json:"version"`
		Width     *int              `json:"width"`
		Height    *int              `json:"height"`
		Timestamp *int64            `json:"timestamp"`
		Title     string            `json:"title"`
		Env       map[string]string `json:"env"`
	}
	if err := json.Unmarshal(sc.Bytes(), &head); err != nil {
		t.Fatalf("asciicast header: %v\n%s", err, sc.Bytes())
	}
	if head.Version == nil || *head.Version != 2 || head.Width == nil || head.Height == nil || *head.Width < 1 || *head.Height < 1 {
		t.Fatalf("asciicast header: %s", sc.Bytes())
	}
	if head.Env["TERM"] == "" || head.Title == "" {
		t.Errorf("asciicast header without TERM or title: %s", sc.Bytes())
	}
	var frames []string
	markers, last := 0, 0.0
	for sc.Scan() {
		var ev []any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || len(ev) != 3 {
			t.Fatalf("asciicast event: %s", sc.Bytes())
		}
		at, ok1 := ev[0].(float64)
		code, ok2 := ev[1].(string)
		text, ok3 := ev[2].(string)
		if !ok1 || !ok2 || !ok3 || (code != "o" && code != "m") || at < last {
			t.Fatalf("asciicast event %s (after time %f)", sc.Bytes(), last)
		}
		last = at
		if code == "m" {
			markers++
			if !strings.HasPrefix(text, "t=") {
				t.Errorf("marker %q does not name the time", text)
			}
			continue
		}
		frames = append(frames, text)
	}
	if markers != steps {
		t.Errorf("%d markers, want one per step: %d", markers, steps)
	}
	return frames
}
