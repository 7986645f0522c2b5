package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

const shipped = "../../assets/transcripts"

// seedSummary is the first seed's evidence line, word for word.
const seedSummary = "Unsafe effects: 2. Compare-and-renew effects: 1. Resource-fenced effects after coordinator corruption: 1."

func TestVerifyShippedTranscripts(t *testing.T) {
	t.Parallel()
	files := []string{
		filepath.Join(shipped, "renewal-race--blind-off.json"),
		filepath.Join(shipped, "renewal-race--compare-off.json"),
	}
	res := leaserace(t, args(pgArgs(t), append([]string{"verify"}, files...)...)...)
	if res.code != 0 {
		t.Fatalf("want exit 0, got %v", res)
	}
	for _, f := range files {
		if !strings.Contains(res.stdout, f+": identical: ") {
			t.Errorf("stdout should say %s is identical:\n%s", f, res.stdout)
		}
	}
}

// TestVerifyManyFilesConnectsOnce verifies every shipped transcript of a
// scenario in one command: every file's live run shares one set of
// connections, so the server sees a handful of sessions, not a few per
// file.
func TestVerifyManyFilesConnectsOnce(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(shipped, "renewal-race--*.json"))
	if err != nil || len(files) < 6 {
		t.Fatalf("want the six shipped renewal-race transcripts, found %v (%v)", files, err)
	}
	dsn := pgtest.DSN(t)
	db := pgtest.ScratchDatabase(t, dsn, "lr_verify_")
	res := leaserace(t, args([]string{"verify", "--pg", "dsn", "--dsn", pgtest.WithDatabase(t, dsn, db)}, files...)...)
	if res.code != 0 {
		t.Fatalf("want exit 0, got %v", res)
	}
	if n := strings.Count(res.stdout, ": identical: "); n != len(files) {
		t.Errorf("%d of %d files identical:\n%s", n, len(files), res.stdout)
	}
	// One check of the server's version, and the host's and the
	// resource's pools of at most two each: 5 at most, whatever the
	// number of files.
	if n := sessionsMadeIn(t, dsn, db); n < 2 || n > 5 {
		t.Errorf("verifying %d files made %d sessions in %s, want 2 to 5 (one set for all files)", len(files), n, db)
	}
}

// sessionsMadeIn is how many sessions the server counted in database db,
// read once every one of them has ended (a session's counts reach the
// statistics as it ends).
func sessionsMadeIn(t *testing.T, dsn, db string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pgtest.WaitTimeout())
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var sessions int64
	pgtest.Eventually(t, "every session in "+db+" to end", func() bool {
		var live int
		err := conn.QueryRow(ctx, `SELECT numbackends, sessions FROM pg_stat_database WHERE datname = $1`, db).Scan(&live, &sessions)
		if err != nil {
			t.Fatal(err)
		}
		return live == 0
	})
	return sessions
}

// TestVerifyTamperedTranscript edits one step's rows in a shipped file and
// expects verify to fail naming that step, recorded and live side by side.
func TestVerifyTamperedTranscript(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(shipped, "renewal-race--blind-off.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	doc["steps"].([]any)[4].(map[string]any)["rows"] = 0
	edited, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "tampered.json")
	if err := os.WriteFile(file, edited, 0o644); err != nil {
		t.Fatal(err)
	}

	res := leaserace(t, args(pgArgs(t), "verify", file)...)
	if res.code != 1 {
		t.Fatalf("want exit 1, got %v", res)
	}
	for _, want := range []string{
		"DIFFERS: renewal-race (renewal blind, fencing off)",
		"the file was edited after it was recorded",
		"first difference: step 5 of 6 (live run: 6), t=1075, A heartbeat.deliver",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, res.stdout)
		}
	}
	found := false
	for _, line := range strings.Split(res.stdout, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "≠" && f[1] == "rows" {
			found = f[2] == "0" && f[3] == "1"
		}
	}
	if !found {
		t.Errorf("stdout should show rows 0 (recorded) against 1 (live):\n%s", res.stdout)
	}
	if !strings.Contains(res.stderr, "does not match a live run") {
		t.Errorf("stderr: %s", res.stderr)
	}
}

func TestVerifyBadInput(t *testing.T) {
	t.Parallel()
	notJSON := filepath.Join(t.TempDir(), "x.json")
	if err := os.WriteFile(notJSON, []byte(`{"hello": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"verify"}, "needs a transcript file"},
		{[]string{"verify", filepath.Join(t.TempDir(), "missing.json")}, "cannot open the transcript"},
		{[]string{"verify", notJSON}, "not a leaserace transcript"},
	} {
		res := leaserace(t, c.args...)
		if res.code != 2 || !strings.Contains(res.stderr, c.want) {
			t.Errorf("%v: want exit 2 and %q, got %v", c.args, c.want, res)
		}
		if strings.Contains(res.stderr, "starting PostgreSQL") {
			t.Errorf("%v: a bad file should be refused before any server starts:\n%s", c.args, res.stderr)
		}
	}
}

func TestCheckEvidence(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "evidence")
	// The test build's LEASERACE_TRACE_PLAYS counts the plays, outside the
	// bundle: check --evidence must play each built-in scenario under each
	// knob setting exactly once, the check rows and the bundle reading the
	// same runs.
	trace := filepath.Join(t.TempDir(), "plays.txt")
	res := leaseraceEnv(t, []string{"LEASERACE_TRACE_PLAYS=" + trace}, args(pgArgs(t), "check", "--evidence", dir)...)
	if res.code != 0 {
		t.Fatalf("want exit 0, got %v", res)
	}
	checkPlayedEachOnce(t, trace)
	if !strings.Contains(res.stdout, "PASS") || !strings.HasSuffix(res.stdout, seedSummary+"\n") {
		t.Errorf("stdout should hold the check table and end with the summary:\n%s", res.stdout)
	}
	sum, err := os.ReadFile(filepath.Join(dir, batch.SummaryFile))
	if err != nil || string(sum) != seedSummary+"\n" {
		t.Errorf("%s: %q, %v", batch.SummaryFile, sum, err)
	}

	// The manifest names every other file with its sha256, like sha256sum -c.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := len(scenario.BuiltinNames()) * len(scenario.AllKnobs())
	if len(entries) != 3*n+2 {
		t.Errorf("%d files in the bundle, want %d", len(entries), 3*n+2)
	}
	manifest, err := os.Open(filepath.Join(dir, batch.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	defer manifest.Close()
	listed := 0
	sc := bufio.NewScanner(manifest)
	for sc.Scan() {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		data, err := os.ReadFile(filepath.Join(dir, name))
		if !ok || err != nil {
			t.Fatalf("manifest line %q: %v", sc.Text(), err)
		}
		if h := sha256.Sum256(data); hex.EncodeToString(h[:]) != want {
			t.Errorf("%s does not match its manifest hash", name)
		}
		listed++
	}
	if listed != len(entries)-1 {
		t.Errorf("manifest lists %d files, want %d", listed, len(entries)-1)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
	tr, err := os.Open(filepath.Join(dir, "renewal-race--blind-off.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if got, err := transcript.Read(tr); err != nil || got.Meta == nil || got.Meta.Provider != "dsn" {
		t.Errorf("bundle transcript: %v, meta %+v", err, got.Meta)
	}

	// A bundle is not overwritten by accident, and this is known before
	// any server starts.
	again := leaserace(t, args(pgArgs(t), "check", "--evidence", dir)...)
	if again.code != 2 || !strings.Contains(again.stderr, "is not empty") || strings.Contains(again.stderr, "starting PostgreSQL") {
		t.Errorf("a second bundle into the same directory: want exit 2 up front, got %v", again)
	}
	forced := leaserace(t, args(pgArgs(t), "check", "--json", "--evidence", dir, "--force")...)
	if forced.code != 0 {
		t.Fatalf("--force: want exit 0, got %v", forced)
	}
	var rep struct {
		Passed bool `json:"passed"`
	}
	if err := json.Unmarshal([]byte(forced.stdout), &rep); err != nil || !rep.Passed {
		t.Errorf("with --json the summary must not spoil standard output: %v\n%s", err, clipOut(forced.stdout))
	}
	if !strings.Contains(forced.stderr, seedSummary) {
		t.Errorf("with --json the summary goes to standard error:\n%s", forced.stderr)
	}
}

// checkPlayedEachOnce reads the plays a run traced with the test build's
// LEASERACE_TRACE_PLAYS: each built-in scenario under each knob setting,
// exactly once, and nothing else.
func checkPlayedEachOnce(t *testing.T, trace string) {
	t.Helper()
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatalf("no plays traced: %v", err)
	}
	plays := map[string]int{}
	for line := range strings.Lines(string(data)) {
		plays[strings.TrimSuffix(line, "\n")]++
	}
	for _, name := range scenario.BuiltinNames() {
		for _, k := range scenario.AllKnobs() {
			key := name + " " + k.String()
			if plays[key] != 1 {
				t.Errorf("%s played %d times, want once", key, plays[key])
			}
			delete(plays, key)
		}
	}
	for key, n := range plays {
		t.Errorf("traced %q %d times: not a built-in scenario and setting", key, n)
	}
}

func TestCheckEvidenceBadFlags(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--evidence", file}, "is a file, not a directory"},
		{[]string{"check", "--force"}, "--force goes with --evidence"},
		{[]string{"check", "--case", "revoked-writer", "--evidence", t.TempDir()}, "does not go with --case"},
	} {
		res := leaserace(t, c.args...)
		if res.code != 2 || !strings.Contains(res.stderr, c.want) {
			t.Errorf("%v: want exit 2 and %q, got %v", c.args, c.want, res)
		}
	}
}

func TestRunOutDirAndMermaid(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "out") + string(os.PathSeparator)
	res := leaserace(t, args(pgArgs(t), "run", "--renewal", "compare", "--out", dir)...)
	if res.code != 0 {
		t.Fatalf("want exit 0, got %v", res)
	}
	assertOnly(t, dir, "renewal-race--compare-off.json", "renewal-race--compare-off.md", "renewal-race--compare-off.mmd", "renewal-race--compare-off.cast", "renewal-race--compare-off.html")
	mmd, err := os.ReadFile(filepath.Join(dir, "renewal-race--compare-off.mmd"))
	if err != nil || !strings.Contains(string(mmd), "\nsequenceDiagram\n") || !strings.Contains(string(mmd), "A-xCoordinator: 1075") {
		t.Errorf("renewal-race--compare-off.mmd: %v\n%s", err, mmd)
	}

	one := leaserace(t, args(pgArgs(t), "run", "--format", "md", "--out", dir)...)
	if one.code != 0 {
		t.Fatalf("want exit 0, got %v", one)
	}
	assertOnly(t, dir, "renewal-race--compare-off.json", "renewal-race--compare-off.md", "renewal-race--compare-off.mmd",
		"renewal-race--compare-off.cast", "renewal-race--compare-off.html", "renewal-race--blind-off.md")

	out := leaserace(t, args(pgArgs(t), "run", "--format", "mermaid")...)
	if out.code != 0 || !strings.HasPrefix(out.stdout, "%% leaserace renewal-race, sha256:") || !strings.Contains(out.stdout, "A--)Coordinator: hb1 (sent 1055, delayed)") {
		t.Errorf("run --format mermaid: %v", out)
	}
}
