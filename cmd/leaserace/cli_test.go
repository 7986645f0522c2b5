package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

func readTranscript(t *testing.T, data string) transcript.Transcript {
	t.Helper()
	tr, err := transcript.Read(strings.NewReader(data))
	if err != nil {
		t.Fatalf("stdout is not a transcript: %v\n%s", err, clipOut(data))
	}
	return tr
}

func stepOf(t *testing.T, tr transcript.Transcript, actor string, action scenario.Action) transcript.Step {
	t.Helper()
	for _, s := range tr.Steps {
		if s.Actor == actor && s.Action == action {
			return s
		}
	}
	t.Fatalf("no %s step by %s in the transcript", action, actor)
	return transcript.Step{}
}

func TestRunJSONBlindOff(t *testing.T) {
	t.Parallel()
	res := leaserace(t, args(pgArgs(t), "run", "--scenario", "renewal-race", "--renewal", "blind", "--fencing", "off", "--format", "json")...)
	if res.code != 0 {
		t.Fatalf("want exit 0, got %v", res)
	}
	if !regexp.MustCompile(`PostgreSQL via dsn in \d`).MatchString(res.stderr) {
		t.Errorf("stderr should say which provider served and how fast:\n%s", res.stderr)
	}
	tr := readTranscript(t, res.stdout)
	hb := stepOf(t, tr, "A", scenario.ActionDeliver)
	if hb.T != 1075 || hb.Tag != "UPDATE 1" || hb.Rows != 1 {
		t.Errorf("A's heartbeat: got t=%d %q rows %d, want t=1075 UPDATE 1 rows 1", hb.T, hb.Tag, hb.Rows)
	}
	o := tr.Outcome
	if o.Effects != 2 || o.Verdict != scenario.VerdictConflict {
		t.Errorf("outcome: got %d effects, %s; want 2 effects, conflict", o.Effects, o.Verdict)
	}
	want := scenario.Lease{Owner: "A", Fence: 1, LeaseVersion: 2, ExpiresAt: 1135}
	if o.Coordinator == nil || *o.Coordinator != want {
		t.Errorf("coordinator: got %+v, want %+v", o.Coordinator, want)
	}
	if tr.Meta == nil || tr.Meta.Provider != "dsn" || tr.Meta.ServerVersion == "" {
		t.Errorf("meta should name the provider and server version: %+v", tr.Meta)
	}
	// --format json is the engine's transcript JSON byte for byte, and its
	// digest is the one the engine computes.
	var again bytes.Buffer
	if err := tr.WriteJSON(&again); err != nil {
		t.Fatal(err)
	}
	if again.String() != res.stdout {
		t.Errorf("stdout is not exactly the engine's transcript JSON")
	}
	if d, err := tr.ComputeDigest(); err != nil || d != tr.Digest {
		t.Errorf("digest: recorded %s, recomputed %s (%v)", tr.Digest, d, err)
	}
}

func TestRunJSONCompareOff(t *testing.T) {
	t.Parallel()
	res := leaserace(t, args(pgArgs(t), "run", "--renewal", "compare", "--fencing", "off")...)
	if res.code != 0 {
		t.Fatalf("want exit 0, got %v", res)
	}
	tr := readTranscript(t, res.stdout)
	if tr.Scenario != "renewal-race" || tr.Knobs != (scenario.Knobs{Renewal: "compare", Fencing: "off"}) {
		t.Errorf("got scenario %s knobs %s", tr.Scenario, tr.Knobs)
	}
	hb := stepOf(t, tr, "A", scenario.ActionDeliver)
	if hb.Tag != "UPDATE 0" || hb.Rows != 0 {
		t.Errorf("A's heartbeat: got %q rows %d, want UPDATE 0", hb.Tag, hb.Rows)
	}
	for _, s := range tr.Steps {
		if s.Actor == "A" && s.Call != nil {
			t.Errorf("A should make no call to the resource after losing the lease, made %+v at %d", s.Call, s.T)
		}
	}
	o := tr.Outcome
	want := scenario.Lease{Owner: "B", Fence: 2, LeaseVersion: 2, ExpiresAt: 1130}
	if o.Effects != 1 || o.Verdict != scenario.VerdictSafe || o.Coordinator == nil || *o.Coordinator != want {
		t.Errorf("outcome: got %d effects, %s, %+v; want 1, safe, %+v", o.Effects, o.Verdict, o.Coordinator, want)
	}
}

func TestRunMarkdown(t *testing.T) {
	t.Parallel()
	base := args(pgArgs(t), "run", "--renewal", "blind", "--fencing", "off")
	md := leaserace(t, args(base, "--format", "md")...)
	if md.code != 0 {
		t.Fatalf("want exit 0, got %v", md)
	}
	js := leaserace(t, base...)
	if js.code != 0 {
		t.Fatalf("want exit 0, got %v", js)
	}
	tr := readTranscript(t, js.stdout)
	for _, want := range []string{
		"# leaserace transcript: renewal-race",
		"| # | t | actor | action | result | command tag | coordinator after | resource after |",
		"```sql\nUPDATE leases",
		"→ `UPDATE 1`",
		"**CONFLICT**",
		"| Provider | dsn |",
		// The same scenario and knobs give the same digest on every run.
		"`" + tr.Digest + "`",
	} {
		if !strings.Contains(md.stdout, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, clipOut(md.stdout))
		}
	}
}

func TestRunOutAtomic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	t.Run("writes the file", func(t *testing.T) {
		out := filepath.Join(dir, "race.md")
		res := leaserace(t, args(pgArgs(t), "run", "--out", out)...)
		if res.code != 0 || res.stdout != "" {
			t.Fatalf("want exit 0 and nothing on stdout, got %v", res)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		// No --format: the .md name chose Markdown.
		if !strings.HasPrefix(string(data), "# leaserace transcript: renewal-race") {
			t.Errorf("%s is not the Markdown transcript:\n%s", out, clipOut(string(data)))
		}
		assertOnly(t, dir, "race.md")
	})

	t.Run("a failing run leaves the old file alone", func(t *testing.T) {
		out := filepath.Join(dir, "failing.json")
		if err := os.WriteFile(out, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// The second write is larger than the resource accepts: the run
		// fails half-way, after real steps ran.
		sc := filepath.Join(t.TempDir(), "too-big.yaml")
		writeScenario(t, sc, `name: too-big
window: {from: 0, to: 10}
ttl: 60
initial:
  resource: {epoch: 1, value: "a"}
events:
  - {t: 1, actor: B, action: write, epoch: 2, value: "fine"}
  - {t: 2, actor: B, action: write, epoch: 3, value: "`+strings.Repeat("x", 70000)+`"}
expect:
  - {renewal: "*", fencing: "*", effects: 2, verdict: safe}
`)
		res := leaserace(t, args(pgArgs(t), "run", "--scenario", sc, "--out", out)...)
		if res.code != 1 || !strings.Contains(res.stderr, "leaserace: too-big") {
			t.Fatalf("want exit 1 naming the scenario, got %v", res)
		}
		if data, _ := os.ReadFile(out); string(data) != "old\n" {
			t.Errorf("%s changed to %q", out, clipOut(string(data)))
		}
		assertOnly(t, dir, "race.md", "failing.json")
	})

	t.Run("a missing directory is refused before anything starts", func(t *testing.T) {
		res := leaserace(t, "run", "--pg", "dsn", "--dsn", "postgres://nobody@127.0.0.1:1/none", "--out", filepath.Join(dir, "no", "such", "x.json"))
		if res.code != 2 || !strings.Contains(res.stderr, "--out") {
			t.Errorf("want exit 2 naming --out, got %v", res)
		}
	})
}

// assertOnly fails unless dir holds exactly names: no temporary files.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(sortedCopy(names), ",") {
		t.Errorf("%s holds %v, want exactly %v", dir, got, names)
	}
}

func sortedCopy(s []string) []string {
	c := append([]string{}, s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}

func writeScenario(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckBuiltins(t *testing.T) {
	t.Parallel()
	res := leaserace(t, args(pgArgs(t), "check")...)
	if res.code != 0 {
		t.Fatalf("want exit 0, got %v", res)
	}
	if n := strings.Count(res.stdout, "PASS"); n != 6*len(scenario.BuiltinNames()) {
		t.Errorf("want %d PASS rows, got %d:\n%s", 6*len(scenario.BuiltinNames()), n, res.stdout)
	}
	if strings.Contains(res.stdout, "FAIL") {
		t.Errorf("a built-in failed:\n%s", res.stdout)
	}

	js := leaserace(t, args(pgArgs(t), "check", "--json")...)
	if js.code != 0 {
		t.Fatalf("want exit 0, got %v", js)
	}
	var rep struct {
		Passed bool `json:"passed"`
		Rows   []struct {
			Scenario string         `json:"scenario"`
			Knobs    scenario.Knobs `json:"knobs"`
			Passed   bool           `json:"passed"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &rep); err != nil {
		t.Fatalf("check --json: %v\n%s", err, clipOut(js.stdout))
	}
	if !rep.Passed || len(rep.Rows) != 6*len(scenario.BuiltinNames()) {
		t.Errorf("check --json: passed %v with %d rows", rep.Passed, len(rep.Rows))
	}
}

// caseReport is the spec's JSON for check --case.
type caseReport struct {
	Case     string `json:"case"`
	Policies map[string]struct {
		Observations []struct {
			Check    string          `json:"check"`
			Actual   json.RawMessage `json:"actual"`
			Expected json.RawMessage `json:"expected"`
			Passed   bool            `json:"passed"`
		} `json:"observations"`
		Passed bool `json:"passed"`
	} `json:"policies"`
}

func TestCheckCaseRevokedWriter(t *testing.T) {
	t.Parallel()
	res := leaserace(t, args(pgArgs(t), "check", "--case", "revoked-writer", "--variant", "2", "--json")...)
	// off and strict failing is the lesson, reported as data: exit 0.
	if res.code != 0 {
		t.Fatalf("want exit 0, got %v", res)
	}
	var rep caseReport
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("not the case's JSON: %v\n%s", err, res.stdout)
	}
	if rep.Case != "revoked-writer" || len(rep.Policies) != 3 {
		t.Fatalf("got case %q with %d policies", rep.Case, len(rep.Policies))
	}
	wantFailed := map[string]string{
		"off":       "late revoked writer,new holder then old arrival",
		"strict":    "same holder writes twice,initial epoch may be zero",
		"monotonic": "",
	}
	for policy, want := range wantFailed {
		p := rep.Policies[policy]
		var failed []string
		for _, o := range p.Observations {
			if !o.Passed {
				failed = append(failed, o.Check)
			}
		}
		if len(p.Observations) != 6 || strings.Join(failed, ",") != want || p.Passed != (want == "") {
			t.Errorf("%s: %d observations, failed %v (passed %v); want 6, failed [%s]", policy, len(p.Observations), failed, p.Passed, want)
		}
	}
	// Variant 2: e = 20, so off keeps the late writer's 19.
	var compact bytes.Buffer
	_ = json.Compact(&compact, rep.Policies["off"].Observations[0].Actual)
	if got := compact.String(); got != `[19,"stale"]` {
		t.Errorf("off, late revoked writer: actual %s, want [19,\"stale\"]", got)
	}
	if !strings.Contains(res.stdout, `"policies": {
    "off"`) {
		t.Errorf("policies should come in the case's order, off first:\n%s", clipOut(res.stdout))
	}
}

// The case's table is the seed's, names and all, and "epoch" is the seed's
// word in them: the text says so once, before the first table, and nothing
// else in it says epoch.
func TestCheckCaseTextNamesTheSeedsWordOnce(t *testing.T) {
	t.Parallel()
	res := leaserace(t, args(pgArgs(t), "check", "--case", "revoked-writer")...)
	if res.code != 0 {
		t.Fatalf("want exit 0, got %v", res)
	}
	const says = "Each pair is [fence, value]. The checks keep the second seed's names, which call the fence an epoch."
	lines := strings.Split(res.stdout, "\n")
	if len(lines) < 2 || lines[1] != says {
		t.Fatalf("the second line should say what the pairs are and whose names the checks keep:\n%s", res.stdout)
	}
	rows := 0
	for _, line := range lines[2:] {
		if !strings.Contains(strings.ToLower(line), "epoch") {
			continue
		}
		if name := strings.TrimSpace(line); !strings.HasPrefix(name, "initial epoch may be zero ") {
			t.Errorf("says epoch outside the seed's check names: %q", line)
		}
		rows++
	}
	if rows != 3 {
		t.Errorf("the seed's \"initial epoch may be zero\" should be one row of each of the 3 tables, found %d", rows)
	}
}

func TestCheckCaseBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fx := filepath.Join(dir, "fixtures.json")
	if err := os.WriteFile(fx, []byte(`[
  {"check": "fine", "initial": [1, "a"], "writes": [[2, "b"]], "expected": [2, "b"]},
  {"check": "time travel", "initial": [1, "a"], "writes": [[-3, "b"]], "expected": [1, "a"]}
]`), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte("[]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Bad input is refused before any server starts: a DSN that cannot
	// work proves nothing was tried.
	noServer := []string{"--pg", "dsn", "--dsn", "postgres://nobody@127.0.0.1:1/none"}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"negative epoch", []string{"--fixtures", fx}, []string{"time travel", "negative", fx}},
		{"variant 0", []string{"--variant", "0"}, []string{"--variant", "0"}},
		{"unknown case", []string{"--variant", "1", "--case", "nope"}, []string{"--case", "revoked-writer"}},
		{"variant and fixtures", []string{"--variant", "2", "--fixtures", fx}, []string{"--variant", "--fixtures"}},
		{"missing file", []string{"--fixtures", filepath.Join(dir, "absent.json")}, []string{"--fixtures", "absent.json"}},
		// Every policy would pass an empty list: no verdict from nothing.
		{"no fixtures", []string{"--fixtures", empty}, []string{empty, "no fixtures"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := args(noServer, "check", "--case", "revoked-writer")
			res := leaserace(t, append(a, c.args...)...)
			if res.code != 2 {
				t.Fatalf("want exit 2, got %v", res)
			}
			for _, w := range c.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr should mention %q: %s", w, res.stderr)
				}
			}
			if strings.Count(strings.TrimSpace(res.stderr), "\n") != 0 || !strings.HasPrefix(res.stderr, "leaserace: ") {
				t.Errorf("want one line prefixed leaserace:, got %q", res.stderr)
			}
		})
	}
}

func TestBadFlags(t *testing.T) {
	t.Parallel()
	noServer := []string{"--pg", "dsn", "--dsn", "postgres://nobody@127.0.0.1:1/none"}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"run --renewal", args(noServer, "run", "--renewal", "sideways"), []string{"--renewal", "blind", "compare"}},
		{"run --fencing", args(noServer, "run", "--fencing", "maybe"), []string{"--fencing", "off", "strict", "monotonic"}},
		{"root --renewal", args(noServer, "--renewal", "sideways"), []string{"--renewal", "blind", "compare"}},
		{"run --format", args(noServer, "run", "--format", "pdf"), []string{"--format", "json", "md"}},
		{"--pg", []string{"run", "--pg", "cloud"}, []string{"--pg", "auto", "container", "local", "dsn"}},
		{"unknown flag", []string{"run", "--nope"}, []string{"--nope"}},
		{"unknown command", []string{"fly"}, []string{"fly"}},
		{"stray argument", []string{"run", "extra"}, []string{"extra"}},
		{"root --at", args(noServer, "--at", "99999"), []string{"--at", "1055–1135"}},
		{"resource --listen", args(noServer, "resource", "--listen", "0.0.0.0:0"), []string{"--allow-remote"}},
		{"resource --listen empty host", args(noServer, "resource", "--listen", ":8080"), []string{"--allow-remote"}},
		{"scenarios --show", []string{"scenarios", "--show", "nope"}, []string{"nope", "renewal-race"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := leaserace(t, c.args...)
			if res.code != 2 {
				t.Fatalf("want exit 2, got %v", res)
			}
			for _, w := range c.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr should mention %q: %s", w, res.stderr)
				}
			}
		})
	}
}

func TestMalformedScenarioFile(t *testing.T) {
	t.Parallel()
	sc := filepath.Join(t.TempDir(), "broken.yaml")
	writeScenario(t, sc, `name: broken
window: {from: 0, to: 10}
ttl: sixty
events:
  - {t: 1, actor: A, action: acquire}
`)
	res := leaserace(t, "run", "--pg", "dsn", "--dsn", "postgres://nobody@127.0.0.1:1/none", "--scenario", sc)
	if res.code != 2 {
		t.Fatalf("want exit 2, got %v", res)
	}
	if !regexp.MustCompile(regexp.QuoteMeta(sc) + `:\d+:\d+: `).MatchString(res.stderr) {
		t.Errorf("want file:line:column, got %s", res.stderr)
	}
}

func TestScenarios(t *testing.T) {
	t.Parallel()
	res := leaserace(t, "scenarios")
	if res.code != 0 {
		t.Fatalf("want exit 0, got %v", res)
	}
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	want := []string{
		"renewal-race", "control", "busy-holder", "revoked-writer",
		"paused-holder", "river-reelect", "slow-renewal", "zombie-producer",
	}
	if len(lines) != len(want)+1 {
		t.Fatalf("want a header and %d scenarios, got:\n%s", len(want), res.stdout)
	}
	for i, name := range want {
		if !strings.HasPrefix(lines[i+1], name+" ") {
			t.Errorf("line %d: want %s first, got %q", i+1, name, lines[i+1])
		}
	}
	if !strings.Contains(lines[1], "1060–1135") {
		t.Errorf("renewal-race's window missing: %q", lines[1])
	}
	show := leaserace(t, "scenarios", "--show", "renewal-race")
	src, _ := scenario.BuiltinSource("renewal-race")
	if show.code != 0 || show.stdout != string(src) {
		t.Errorf("--show should print the YAML exactly, got %v", show)
	}
}

// epochAsAField matches "epoch" where the help names it as what an older
// release or the seed called the fence: the resource's old JSON key, the
// seed's epochs.
var epochAsAField = regexp.MustCompile(`"epoch", its name before|the seed's epochs`)

func TestHelpEverywhere(t *testing.T) {
	t.Parallel()
	// Every command the root lists, so a new command cannot go without help.
	cmds := []string{""}
	root := leaserace(t, "--help")
	_, list, _ := strings.Cut(root.stdout, "Available Commands:")
	list, _, _ = strings.Cut(list, "\n\n")
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] != "help" && f[0] != "completion" {
			cmds = append(cmds, f[0])
		}
	}
	for _, want := range []string{"run", "check", "scenarios", "resource", "version", "explore", "stress", "verify"} {
		if !slices.Contains(cmds, want) {
			t.Errorf("root help does not list %q: %v", want, cmds)
		}
	}
	for _, c := range cmds {
		t.Run("help "+c, func(t *testing.T) {
			a := []string{"--help"}
			if c != "" {
				a = []string{c, "--help"}
			}
			res := leaserace(t, a...)
			if res.code != 0 || !strings.Contains(res.stdout, "Usage:") || !strings.Contains(res.stdout, "Examples:") {
				t.Errorf("want exit 0 with usage and examples, got %v", res)
			}
			// The help calls the resource's number a fence, as the screen
			// and every format do; "epoch" is only the name an older
			// release or the seed gave it.
			for _, line := range strings.Split(res.stdout, "\n") {
				if strings.Contains(strings.ToLower(line), "epoch") && !epochAsAField.MatchString(line) && !strings.Contains(line, "SOURCE_DATE_EPOCH") {
					t.Errorf("help %q says epoch where the screen says fence: %q", c, line)
				}
			}
		})
	}
}

// TestRootHelpNamesEveryProvider reads the names --pg accepts from its own
// flag help, so a provider added there cannot go unexplained in the
// paragraph that says where PostgreSQL comes from.
func TestRootHelpNamesEveryProvider(t *testing.T) {
	t.Parallel()
	res := leaserace(t, "--help")
	_, para, ok := strings.Cut(res.stdout, "PostgreSQL comes from --pg:")
	para, _, _ = strings.Cut(para, "\n\n")
	_, names, found := strings.Cut(res.stdout, "where PostgreSQL comes from: ")
	names, _, _ = strings.Cut(names, " (default")
	if res.code != 0 || !ok || !found {
		t.Fatalf("want the --pg paragraph and the --pg flag in the help, got %v", res)
	}
	list := strings.FieldsFunc(strings.ReplaceAll(names, " or ", ","), func(r rune) bool { return r == ',' || r == ' ' })
	if len(list) < 5 {
		t.Fatalf("--pg lists %q, want at least auto, container, local, embedded and dsn", names)
	}
	para = strings.Join(strings.Fields(para), " ")
	for _, name := range list {
		if !strings.Contains(para, name+" (") && !strings.Contains(para, "or "+name+",") {
			t.Errorf("the --pg paragraph does not explain %q:\n%s", name, para)
		}
	}
}

// TestFlagValuesThatDoNotParse covers each kind of flag value the commands
// take: the message names the flag, the value and what it takes, in the
// words of the commands' own checks, not the parser's.
func TestFlagValuesThatDoNotParse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--at", "abc"}, `--at "abc": want a whole number; see leaserace --help`},
		{[]string{"--at", "1e3"}, `--at "1e3": want a whole number`},
		{[]string{"--at", "99999999999999999999"}, `--at "99999999999999999999": out of range; want a whole number`},
		{[]string{"--at=-99999999999999999999"}, `--at "-99999999999999999999": out of range; want a whole number`},
		{[]string{"stress", "--runs", "x"}, `--runs "x": want a whole number; see leaserace stress --help`},
		{[]string{"stress", "--seed", "-1"}, `--seed "-1": want a whole number, 0 or more`},
		{[]string{"--fallback=maybe"}, `--fallback "maybe": want true or false`},
		{[]string{"serve", "--idle-timeout", "5"}, `--idle-timeout "5": want a duration with its unit, such as 90s, 30m or 2h`},
	} {
		res := leaserace(t, c.args...)
		if res.code != 2 || !strings.Contains(res.stderr, c.want) {
			t.Errorf("%v: want exit 2 and %q, got %v", c.args, c.want, res)
		}
		if strings.Contains(res.stderr, "strconv") || strings.Contains(res.stderr, "invalid argument") {
			t.Errorf("%v: the parser's words reached the person: %s", c.args, res.stderr)
		}
	}
}

// TestEmptyScenarioIsRefused: every --scenario defaults to renewal-race,
// so an empty one was typed (or a shell variable never set) and is
// refused, on every command that takes one, before any server starts.
func TestEmptyScenarioIsRefused(t *testing.T) {
	t.Parallel()
	for _, cmd := range [][]string{{}, {"run"}, {"explore"}, {"explore", "--orders"}, {"serve"}, {"present"}} {
		a := append(append([]string{}, cmd...), "--scenario", "")
		res := leaserace(t, a...)
		if res.code != 2 || !strings.Contains(res.stderr, `--scenario "": want a built-in scenario's name (renewal-race,`) {
			t.Errorf("%v: want exit 2 naming the built-ins, got %v", a, res)
		}
		if strings.Contains(res.stderr, "starting PostgreSQL") {
			t.Errorf("%v started PostgreSQL before refusing its flags:\n%s", a, res.stderr)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	a, b := leaserace(t, "--version"), leaserace(t, "version")
	if a.code != 0 || b.code != 0 || !strings.HasPrefix(a.stdout, "leaserace ") || a.stdout != b.stdout {
		t.Errorf("--version and version should agree:\n%v\n%v", a, b)
	}
}

func TestBareNeedsATerminal(t *testing.T) {
	t.Parallel()
	// Standard output is a pipe here.
	res := leaserace(t, "--pg", "dsn", "--dsn", "postgres://nobody@127.0.0.1:1/none")
	if res.code != 2 || !strings.Contains(res.stderr, "not a terminal") || !strings.Contains(res.stderr, "leaserace run") {
		t.Errorf("want exit 2 suggesting leaserace run, got %v", res)
	}
}

func TestNoServerNoPassword(t *testing.T) {
	t.Parallel()
	const secret = "Sup3r-Secret-pw"
	// Nothing listens on port 1: the provider fails, and says so without
	// the password.
	res := leaserace(t, "run", "--pg", "dsn", "--dsn", "postgres://lr:"+secret+"@127.0.0.1:1/lr?connect_timeout=5")
	if res.code != 3 {
		t.Fatalf("want exit 3, got %v", res)
	}
	if strings.Contains(res.stdout+res.stderr, secret) {
		t.Errorf("the password was printed: %v", res)
	}
	res = leaseraceEnv(t, []string{"DATABASE_URL=postgres://lr:" + secret + "@127.0.0.1:1/lr?connect_timeout=5"}, "check", "--pg", "dsn")
	if res.code != 3 || strings.Contains(res.stdout+res.stderr, secret) {
		t.Errorf("want exit 3 and no password, got %v", res)
	}
}

func TestResourceCommand(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, built.path, "resource", "--pg", "dsn", "--dsn", dsn, "--fencing", "strict")
	cmd.Env = childEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &lockedWriter{w: &stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	first := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		first <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var base string
	select {
	case line := <-first:
		base = strings.TrimSpace(line)
	case <-ctx.Done():
		t.Fatal("no URL on the first line of stdout")
	}
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`).MatchString(base) {
		t.Fatalf("first line should be the resource's URL, got %q", base)
	}

	resp, err := http.Get(base + "/state")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var state struct {
		Fence   *int64          `json:"fence"`
		Effects json.RawMessage `json:"effects"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &state) != nil || state.Fence == nil {
		t.Fatalf("GET /state: %d %s", resp.StatusCode, body)
	}
	// The help's curl line, in the help's words: the fence is "fence".
	resp, err = http.Post(base+"/writes", "application/json", strings.NewReader(`{"fence":3,"value":"x","actor":"A"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"fence":3,"value":"x"`) || strings.Contains(string(body), "epoch") {
		t.Fatalf("POST /writes: %d %s", resp.StatusCode, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("want exit 0 after SIGTERM, got %d (%v)\n%s", code, err, stderr.String())
	}
	// Read only once the process is gone: the schema line follows the URL
	// on another stream and may not have been written when the URL arrived.
	schema := regexp.MustCompile(`schema (\S+);`).FindStringSubmatch(stderr.String())
	host := strings.TrimPrefix(base, "http://")
	if c, err := net.DialTimeout("tcp", host, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after exit", host)
	}
	if schema == nil {
		t.Fatalf("stderr should name the resource's schema:\n%s", stderr.String())
	}
	if n := countSchemas(t, dsn, schema[1]); n != 0 {
		t.Errorf("schema %s was left behind", schema[1])
	}
}

func countSchemas(t *testing.T, dsn, like string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE $1", like).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
