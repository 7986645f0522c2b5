package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
)

// ordersSetting is one setting of explore --orders's JSON.
type ordersSetting struct {
	Renewal, Fencing              string
	States                        int
	Runs, Conflict, Blocked, Safe json.Number
	Shortest                      map[string]*string
}

// TestExploreOrdersJSONAndRunMoves is issue 13's end-to-end claim on the
// built binary: explore --orders finds no conflicting order under
// compare/monotonic and a shortest one under blind/off, and run --moves
// with that list conflicts under blind/off and not under the repair.
func TestExploreOrdersJSONAndRunMoves(t *testing.T) {
	t.Parallel()
	res := leaserace(t, args(pgArgs(t), "explore", "--orders", "--scenario", "renewal-race", "--format", "json")...)
	if res.code != 0 {
		t.Fatalf("explore --orders --format json: %s", res)
	}
	if got := keysOf(t, json.RawMessage(res.stdout)); !reflect.DeepEqual(got, []string{"scenario", "settings"}) {
		t.Fatalf("top-level keys %v", got)
	}
	var out struct {
		Scenario string            `json:"scenario"`
		Settings []json.RawMessage `json:"settings"`
	}
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Scenario != "renewal-race" || len(out.Settings) != 6 {
		t.Fatalf("scenario %q, %d settings", out.Scenario, len(out.Settings))
	}
	byKnobs := map[string]ordersSetting{}
	for i, raw := range out.Settings {
		if got := keysOf(t, raw); !reflect.DeepEqual(got, []string{"blocked", "conflict", "fencing", "renewal", "runs", "safe", "shortest", "states"}) {
			t.Fatalf("setting keys %v", got)
		}
		var s ordersSetting
		d := json.NewDecoder(strings.NewReader(string(raw)))
		d.UseNumber()
		if err := d.Decode(&s); err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if got := keysOf(t, m["shortest"]); !reflect.DeepEqual(got, []string{"blocked", "conflict"}) {
			t.Fatalf("shortest keys %v", got)
		}
		k := s.Renewal + "/" + s.Fencing
		if want := scenario.AllKnobs()[i].String(); k != want {
			t.Errorf("setting %d is %s, want %s", i, k, want)
		}
		if s.States < 2 || s.Runs == "" || s.Runs == "0" {
			t.Errorf("%s: %d states, %s runs", k, s.States, s.Runs)
		}
		byKnobs[k] = s
	}
	repair, blindOff := byKnobs["compare/monotonic"], byKnobs["blind/off"]
	if repair.Conflict != "0" || repair.Shortest["conflict"] != nil {
		t.Errorf("compare/monotonic: %s conflicts, shortest %v; want 0 and null", repair.Conflict, repair.Shortest["conflict"])
	}
	if blindOff.Conflict == "0" || blindOff.Shortest["conflict"] == nil || *blindOff.Shortest["conflict"] == "" {
		t.Fatalf("blind/off: %s conflicts, shortest %v; want some and a move list", blindOff.Conflict, blindOff.Shortest["conflict"])
	}
	if byKnobs["blind/strict"].Shortest["blocked"] == nil {
		t.Errorf("blind/strict: no shortest blocked list")
	}
	for _, want := range []string{"explore --orders renewal-race: 1000 states", "states of renewal-race under six settings in"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}

	moves := *blindOff.Shortest["conflict"]
	for _, c := range []struct {
		renewal, fencing, verdict string
	}{
		{"blind", "off", scenario.VerdictConflict},
		{"compare", "monotonic", scenario.VerdictSafe},
	} {
		run := leaserace(t, args(pgArgs(t), "run", "--scenario", "renewal-race", "--renewal", c.renewal, "--fencing", c.fencing, "--moves", moves)...)
		if run.code != 0 {
			t.Fatalf("run --moves %q under %s/%s: %s", moves, c.renewal, c.fencing, run)
		}
		tr := readTranscript(t, run.stdout)
		if tr.Outcome.Verdict != c.verdict {
			t.Errorf("run --moves under %s/%s: verdict %s, want %s", c.renewal, c.fencing, tr.Outcome.Verdict, c.verdict)
		}
		var played []scenario.Move
		for _, st := range tr.Steps {
			played = append(played, st.Move())
		}
		if got := scenario.FormatMoves(played); got != moves {
			t.Errorf("the transcript holds %s, want the moves given: %s", got, moves)
		}
	}
}

// TestExploreOrdersText: the table for a person, on a database of its
// own, so what the search's lanes made there can be counted afterwards.
func TestExploreOrdersText(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	db := pgtest.ScratchDatabase(t, dsn, "lr_cli_")
	scratch := pgtest.WithDatabase(t, dsn, db)
	res := leaserace(t, "explore", "--orders", "--scenario", "control", "--pg", "dsn", "--dsn", scratch)
	if res.code != 0 {
		t.Fatalf("explore --orders: %s", res)
	}
	for _, l := range dsnLeftovers(scratch, db)(t) {
		t.Errorf("left behind: %s", l)
	}
	for _, want := range []string{
		"control: every order of its moves",
		"setting            states  runs  conflict  blocked  safe",
		"compare/monotonic",
		"none: no order of the moves accepts a stale write under any setting",
		"none: no order of the moves refuses a valid write under any setting",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, res.stdout)
		}
	}
	if !strings.Contains(res.stderr, "states of control under six settings") {
		t.Errorf("stderr: %s", res.stderr)
	}
}

func TestExploreOrdersBadFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--orders", "--format", "csv"}, "with --orders, want text or json"},
		{[]string{"--orders", "--vary", "arrival=1060..1070"}, "give one or the other"},
		{[]string{"--orders", "--scenario", "no-such-scenario"}, "no-such-scenario"},
	} {
		res := leaserace(t, append([]string{"explore"}, c.args...)...)
		if res.code != 2 || !strings.Contains(res.stderr, c.want) {
			t.Errorf("explore %v: want exit 2 naming %q; %s", c.args, c.want, res)
		}
		if strings.Contains(res.stderr, "starting PostgreSQL") {
			t.Errorf("explore %v started a server before refusing", c.args)
		}
	}
}

// TestRunMovesRefused: a move that cannot be made where it stands is
// refused with its number, its text and why, exit 2; so is a list that
// cannot be read, before any server starts.
func TestRunMovesRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		moves    string
		want     string
		noServer bool
	}{
		{"A:send hb1@1055,clock:advance@1060,B:acquire@1070,A:deliver hb2@1075", `move 4 "A:deliver hb2@1075": hb2 was never sent`, false},
		{"A:send hb1@1055,A:drop hb1@1055,A:deliver hb1@1075", `move 3 "A:deliver hb1@1075": hb1 is not in flight`, false},
		{"A:send hb1@1055,B:acquire@1070,A:effect@1060", `move 3 "A:effect@1060": it is already t=1070, and time does not run backwards`, false},
		{"A:send hb1@1055,A:dlvr hb1@1075", `--moves: move 2 "A:dlvr hb1@1075": verb "dlvr"`, true},
		{"A:send hb1", `--moves: move 1 "A:send hb1": no time`, true},
		{" , ", `--moves: move 1 "": want ACTOR:VERB@T`, true},
	} {
		res := leaserace(t, args(pgArgs(t), "run", "--moves", c.moves)...)
		if res.code != 2 || !strings.Contains(res.stderr, c.want) {
			t.Errorf("run --moves %q: want exit 2 saying %q; %s", c.moves, c.want, res)
		}
		if res.stdout != "" {
			t.Errorf("run --moves %q wrote a transcript: %s", c.moves, res.stdout)
		}
		if c.noServer && strings.Contains(res.stderr, "PostgreSQL via") {
			t.Errorf("run --moves %q started a server before refusing", c.moves)
		}
	}
	if res := leaserace(t, "run", "--moves", "A:send hb1@1055", "--moves-file", "x"); res.code != 2 || !strings.Contains(res.stderr, "use one") {
		t.Errorf("--moves with --moves-file: %s", res)
	}
	blank := filepath.Join(t.TempDir(), "blank.moves")
	if err := os.WriteFile(blank, []byte("\n  \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := leaserace(t, "run", "--moves-file", blank); res.code != 2 || !strings.Contains(res.stderr, "holds no moves") {
		t.Errorf("a blank --moves-file: %s", res)
	}
	if res := leaserace(t, "run", "--moves-file", blank+".missing"); res.code != 2 || !strings.Contains(res.stderr, "--moves-file") {
		t.Errorf("a missing --moves-file: %s", res)
	}
	// An empty --moves (a shell variable never set) is refused, not read
	// as no --moves at all: that would play the scenario's own events.
	for _, empty := range []string{"", " "} {
		if res := leaserace(t, "run", "--moves", empty, "--pg", "dsn", "--dsn", "postgres://nobody@127.0.0.1:1/none"); res.code != 2 || !strings.Contains(res.stderr, "--moves holds no moves") {
			t.Errorf("--moves %q: %s", empty, res)
		}
	}
}

// TestRunMovesFileEveryFormat: a schedule from a file, moves on lines or
// between commas, plays headless into every format, and verify reproduces its transcript.
func TestRunMovesFileEveryFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "race.moves")
	schedule := "A:send hb1@1055\nA:drop hb1@1055,\n\nclock:advance@1060, B:acquire@1060\r\nB:effect@1060\nA:effect@1061\n"
	if err := os.WriteFile(file, []byte(schedule), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out") + "/"
	res := leaserace(t, args(pgArgs(t), "run", "--moves-file", file, "--out", out)...)
	if res.code != 0 {
		t.Fatalf("run --moves-file --out DIR/: %s", res)
	}
	for _, ext := range []string{".json", ".md", ".mmd", ".cast", ".html"} {
		data, err := os.ReadFile(filepath.Join(out, "renewal-race--blind-off"+ext))
		if err != nil || len(data) == 0 {
			t.Fatalf("%s: %v", ext, err)
		}
		if ext == ".md" && !strings.Contains(string(data), "drop") {
			t.Errorf("the Markdown does not show the drop:\n%s", data)
		}
	}
	jsonFile := filepath.Join(out, "renewal-race--blind-off.json")
	data, _ := os.ReadFile(jsonFile)
	tr := readTranscript(t, string(data))
	if len(tr.Steps) != 6 || tr.Steps[1].Action != scenario.ActionDrop || tr.Outcome.Verdict != scenario.VerdictSafe {
		t.Fatalf("steps %d, second %s, verdict %s", len(tr.Steps), tr.Steps[1].Action, tr.Outcome.Verdict)
	}
	v := leaserace(t, args(pgArgs(t), "verify", jsonFile)...)
	if v.code != 0 || !strings.HasPrefix(v.stdout, "identical: renewal-race") {
		t.Errorf("verify of a played transcript: %s", v)
	}
}

// The schedule, headless: the Markdown names no time the moves did
// not use and lists each goal against par; the JSON carries the same.
func TestRunMovesGoalsAgainstPar(t *testing.T) {
	t.Parallel()
	const moves = "clock:advance@1060,A:send hb1@1060,B:acquire@1060,A:deliver hb1@1060,B:effect@1060,A:effect@1060"
	dir := t.TempDir()
	res := leaserace(t, args(pgArgs(t), "run", "--scenario", "renewal-race", "--renewal", "blind", "--fencing", "off",
		"--moves", moves, "--out", dir+"/")...)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	md, err := os.ReadFile(filepath.Join(dir, "renewal-race--blind-off.md"))
	if err != nil {
		t.Fatalf("%v; files: %v", err, listDir(t, dir))
	}
	for _, want := range []string{
		"# leaserace played run: renewal-race, renewal blind, fencing off\n",
		"**stale-write** (The resource accepts a stale write), renewal blind, fencing off: **reached** in 6 moves, par 6: `" + moves + "`",
		"**valid-write-lost** (A valid write is refused), renewal blind, fencing off: not reached; no order of the moves reaches it (0 of 16788 runs); what cuts every path: every write carrying at least the resource's highest fence accepted was accepted: ",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	// Only 1060 (every move's time) and 1120 (B's lease, 1060 + TTL) are
	// the run's; the script's 1055, 1070, 1075 and 1080 are not.
	for _, n := range regexp.MustCompile(`\b10[0-9][0-9]\b|\b11[0-9][0-9]\b`).FindAllString(string(md), -1) {
		if n != "1060" && n != "1120" {
			t.Errorf("the Markdown of the played run names time %s", n)
		}
	}
	tr := readExported(t, filepath.Join(dir, "renewal-race--blind-off.json"))
	if p := tr.Played; p == nil || !p.OffScript || len(p.Goals) != 3 || p.Goals[0].Par == nil || p.Goals[0].Par.Moves != 6 || p.Goals[0].Moves != 6 {
		t.Fatalf("the JSON's played section: %+v", tr.Played)
	}
	if p := tr.Played.Goals[1].Par; p == nil || p.Moves != 0 || !strings.HasPrefix(p.Cut, "every write carrying at least the resource's highest fence accepted was accepted: ") || tr.Played.Goals[0].Par.Cut != "" {
		t.Errorf("the JSON's cuts: %+v, %+v", tr.Played.Goals[0].Par, tr.Played.Goals[1].Par)
	}
	res = leaserace(t, args(pgArgs(t), "verify", filepath.Join(dir, "renewal-race--blind-off.json"))...)
	if res.code != 0 {
		t.Fatalf("verify: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
}

func listDir(t *testing.T, dir string) []string {
	es, _ := os.ReadDir(dir)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
