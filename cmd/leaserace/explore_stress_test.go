package main

import (
	"encoding/csv"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/pgtest"
)

// keysOf lists a JSON object's keys, sorted.
func keysOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, raw)
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestExploreJSON(t *testing.T) {
	t.Parallel()
	res := leaserace(t, args(pgArgs(t), "explore", "--vary", "arrival=1068..1071", "--format", "json")...)
	if res.code != 0 {
		t.Fatalf("explore --format json: %s", res)
	}
	if got := keysOf(t, json.RawMessage(res.stdout)); !reflect.DeepEqual(got, []string{"cells", "scenario", "vary"}) {
		t.Fatalf("top-level keys %v", got)
	}
	var out struct {
		Scenario string            `json:"scenario"`
		Vary     []json.RawMessage `json:"vary"`
		Cells    []json.RawMessage `json:"cells"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Scenario != "renewal-race" || len(out.Vary) != 1 || len(out.Cells) != 4*6 {
		t.Fatalf("scenario %q, %d vary, %d cells", out.Scenario, len(out.Vary), len(out.Cells))
	}
	if got := keysOf(t, out.Vary[0]); !reflect.DeepEqual(got, []string{"from", "name", "to"}) {
		t.Errorf("vary keys %v", got)
	}
	for _, raw := range out.Cells {
		if got := keysOf(t, raw); !reflect.DeepEqual(got, []string{"effects", "fencing", "renewal", "values", "verdict"}) {
			t.Fatalf("cell keys %v", got)
		}
		var c struct {
			Renewal, Fencing, Verdict string
			Values                    map[string]int64
			Effects                   int
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		arr := c.Values["arrival"]
		want := c.Renewal == "blind" && c.Fencing == "off" && arr >= 1070
		if (c.Verdict == "conflict") != want {
			t.Errorf("arrival %d %s/%s: %s, want conflict=%v", arr, c.Renewal, c.Fencing, c.Verdict, want)
		}
	}
	if !strings.Contains(res.stderr, "24/24 cells") {
		t.Errorf("no progress on stderr:\n%s", res.stderr)
	}
}

func TestExploreCSV(t *testing.T) {
	t.Parallel()
	res := leaserace(t, args(pgArgs(t), "explore", "--vary", "takeover=1069..1070", "--vary", "arrival=1069..1070", "--format", "csv")...)
	if res.code != 0 {
		t.Fatalf("explore --format csv: %s", res)
	}
	rows, err := csv.NewReader(strings.NewReader(res.stdout)).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%s", err, res.stdout)
	}
	if want := []string{"renewal", "fencing", "takeover", "arrival", "effects", "verdict"}; !reflect.DeepEqual(rows[0], want) {
		t.Fatalf("header %v, want %v", rows[0], want)
	}
	if len(rows) != 1+2*2*6 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows[1:] {
		tk, _ := strconv.Atoi(r[2])
		arr, _ := strconv.Atoi(r[3])
		if _, err := strconv.Atoi(r[4]); err != nil {
			t.Errorf("effects %q", r[4])
		}
		want := r[0] == "blind" && r[1] == "off" && arr >= tk
		if (r[5] == "conflict") != want {
			t.Errorf("row %v: want conflict=%v", r, want)
		}
	}
}

func TestExploreTextMap(t *testing.T) {
	t.Parallel()
	// COLUMNS pinned: the map wraps to it when output is not a terminal.
	res := leaseraceEnv(t, []string{"COLUMNS=80"}, args(pgArgs(t), "explore", "--scenario", "renewal-race")...)
	if res.code != 0 {
		t.Fatalf("explore: %s", res)
	}
	out := res.stdout
	// Not a terminal: no colour codes, the meaning in glyphs and words.
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour codes in output that is not a terminal:\n%s", out)
	}
	for _, want := range []string{
		"renewal-race: arrival 1060..1135",
		"blind/off          conflict at arrival 1070..1135 (66 of 76)",
		// Strict fencing blocks A while A still holds a valid lease.
		"blind/strict       blocked at arrival 1060..1069 (10 of 76)",
		"✓n  safe", "✗n  conflict", "⊘n  blocked",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("map lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "safe everywhere"); n != 4 {
		t.Errorf("%d settings safe everywhere, want 4:\n%s", n, out)
	}
	// Wrapped to 80 columns, and each chunk has all six rows.
	for line := range strings.SplitSeq(out, "\n") {
		if w := len([]rune(line)); w > 80 {
			t.Errorf("line %d wide: %q", w, line)
		}
	}
	if n := strings.Count(out, "\ncompare/monotonic  ✓"); n != 4 {
		t.Errorf("%d chunks of the map, want 4 (76 columns, 20 to a line):\n%s", n, out)
	}
	// The first chunk: 1060..1079, conflicts from its eleventh column.
	first := "blind/off          ✓1 ✓1 ✓1 ✓1 ✓1 ✓1 ✓1 ✓1 ✓1 ✓1 ✗2 ✗2 ✗2 ✗2 ✗2 ✗2 ✗2 ✗2 ✗2 ✗2\n"
	if !strings.Contains(out, first) {
		t.Errorf("first chunk's blind/off row is not %q:\n%s", first, out)
	}
}

func TestExploreTwoNamesOneMapEach(t *testing.T) {
	t.Parallel()
	res := leaserace(t, args(pgArgs(t), "explore", "--vary", "takeover=1069..1070", "--vary", "arrival=1068..1071")...)
	if res.code != 0 {
		t.Fatalf("explore: %s", res)
	}
	for _, want := range []string{
		"takeover = 1069", "takeover = 1070",
		"blind/off          conflict at arrival 1069..1071 (3 of 4)",
		"blind/off          conflict at arrival 1070..1071 (2 of 4)",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, res.stdout)
		}
	}
}

func TestExploreBadFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--vary", "arrival"}, "NAME=FROM..TO"},
		{[]string{"--vary", "arrival=1070..1060"}, "FROM <= TO"},
		{[]string{"--vary", "nope=1..2"}, `no time named "nope"`},
		{[]string{"--vary", "arrival=1050..1060"}, "arrival=1050"},
		{[]string{"--vary", "arrival=1060..1061", "--vary", "arrival=1062..1063"}, "twice"},
		{[]string{"--format", "xml"}, "--format"},
		{[]string{"--scenario", "no-such-scenario"}, "no-such-scenario"},
	} {
		// No server flags: a bad sweep is refused before any server starts.
		res := leaserace(t, append([]string{"explore"}, c.args...)...)
		if res.code != 2 || !strings.Contains(res.stderr, c.want) {
			t.Errorf("explore %v: want exit 2 naming %q; %s", c.args, c.want, res)
		}
		if strings.Contains(res.stderr, "starting PostgreSQL") {
			t.Errorf("explore %v started a server before refusing", c.args)
		}
	}
}

func TestStressJSON(t *testing.T) {
	t.Parallel()
	// A database of its own: the count of stress schemas at the end must
	// be this run's, not those of another stress test running beside it.
	base := pgtest.DSN(t)
	dsn := pgtest.ScratchDSN(t, base, "lr_cli_")
	res := leaserace(t, "stress", "--pg", "dsn", "--dsn", dsn, "--runs", "150", "--renewal", "blind", "--fencing", "off", "--seed", "99", "--format", "json")
	if res.code != 0 {
		t.Fatalf("stress --format json: %s", res)
	}
	if got := keysOf(t, json.RawMessage(res.stdout)); !reflect.DeepEqual(got, []string{"runs", "seed", "settings"}) {
		t.Fatalf("top-level keys %v", got)
	}
	var out struct {
		Seed     uint64            `json:"seed"`
		Runs     int               `json:"runs"`
		Settings []json.RawMessage `json:"settings"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Seed != 99 || out.Runs != 150 || len(out.Settings) != 1 {
		t.Fatalf("seed %d runs %d settings %d", out.Seed, out.Runs, len(out.Settings))
	}
	if got := keysOf(t, out.Settings[0]); !reflect.DeepEqual(got, []string{"fencing", "renewal", "runs", "stale_renewals_accepted", "takeovers", "valid_writes_refused", "violations"}) {
		t.Fatalf("setting keys %v", got)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Settings[0], &m); err != nil {
		t.Fatal(err)
	}
	if m["renewal"] != "blind" || m["fencing"] != "off" || m["runs"] != 150.0 || m["violations"] == 0.0 || m["valid_writes_refused"] != 0.0 {
		t.Errorf("blind/off over 150 runs: %v; want violations above 0 and no valid write refused (off refuses nothing)", m)
	}
	if !strings.Contains(res.stderr, "150/150 runs") || !strings.Contains(res.stderr, "seed 99") {
		t.Errorf("stderr lacks progress or the seed:\n%s", res.stderr)
	}
	if n := countSchemas(t, dsn, "lr_stress_%"); n != 0 {
		t.Errorf("%d stress schemas left behind", n)
	}
}

func TestStressTable(t *testing.T) {
	t.Parallel()
	// A 25 ms lease, not the default 3 ms: strict refuses a holder's second
	// write only once a prompt heartbeat renewed its lease, and on a loaded
	// machine (this package's tests run side by side) a 3 ms lease could
	// expire before any renewal landed, in all 100 runs (seen once).
	res := leaserace(t, args(pgArgs(t), "stress", "--runs", "100", "--renewal", "compare", "--fencing", "monotonic,strict", "--workers", "4", "--ttl", "25")...)
	if res.code != 0 {
		t.Fatalf("stress: %s", res)
	}
	for _, want := range []string{
		"100 runs per setting, 4 holders per run, TTL 25 ms",
		"STALE RENEWALS ACCEPTED", "VIOLATIONS", "VALID WRITES REFUSED",
		"\nvalid writes refused: writes it refused at or above that fence, a valid write lost (blocked).\n",
		"seed ", "runs/s",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, res.stdout)
		}
	}
	var rows []string
	for line := range strings.SplitSeq(res.stdout, "\n") {
		if f := strings.Fields(line); len(f) == 10 && f[0] == "compare" {
			rows = append(rows, f[1])
			// runs, takeovers, stale, violations
			if f[2] != "100" || f[4] != "0" || f[5] != "0" {
				t.Errorf("compare/%s: %q, want 100 runs, no stale renewal, no violation", f[1], line)
			}
			// Valid writes refused: strict refuses a holder's second
			// write under the same fence; monotonic never loses one.
			if (f[1] == "strict") == (f[7] == "0") {
				t.Errorf("compare/%s: %q, want valid writes refused above 0 under strict and 0 under monotonic", f[1], line)
			}
		}
	}
	// Strict before monotonic: the usual order, whatever order was typed.
	if !reflect.DeepEqual(rows, []string{"strict", "monotonic"}) {
		t.Errorf("settings %v, want [strict monotonic]:\n%s", rows, res.stdout)
	}
}

func TestStressBadFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--runs", "0"}, "--runs"},
		{[]string{"--workers", "1"}, "--workers"},
		{[]string{"--parallel", "0"}, "--parallel"},
		{[]string{"--renewal", "sometimes"}, "--renewal"},
		{[]string{"--fencing", "loose"}, "--fencing"},
		{[]string{"--format", "csv"}, "--format"},
		{[]string{"--seed", "-1"}, "seed"},
		{[]string{"--ttl", "0"}, "--ttl"},
		{[]string{"--ttl", "1001"}, "--ttl"},
	} {
		res := leaserace(t, append([]string{"stress"}, c.args...)...)
		if res.code != 2 || !strings.Contains(res.stderr, c.want) {
			t.Errorf("stress %v: want exit 2 naming %q; %s", c.args, c.want, res)
		}
	}
}
