package batch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
)

// arrival is renewal-race's default sweep (every arrival 1060..1135 under
// all six settings: 456 runs) with what its progress said.
type arrival struct {
	res batch.ExploreResult
	// calls counts progress calls; odd lists those out of order.
	calls int
	odd   []string
}

// arrivalSweep explores the default sweep of renewal-race once for the
// package's tests, which read it and change nothing in it.
func arrivalSweep(t *testing.T) arrival {
	t.Helper()
	dsn := pgtest.DSN(t)
	return pgtest.Shared(t, "renewal-race arrival sweep", func(ctx context.Context) (arrival, func(context.Context) error, error) {
		var a arrival
		sc, err := scenario.Builtin("renewal-race")
		if err != nil {
			return a, nil, err
		}
		vary, err := batch.DefaultVary(sc)
		if err != nil {
			return a, nil, err
		}
		if len(vary) != 1 || vary[0] != (batch.Vary{Name: "arrival", From: 1060, To: 1135}) {
			return a, nil, fmt.Errorf("default vary: %+v", vary)
		}
		last := 0
		a.res, err = batch.Explore(ctx, dsn, sc, vary, func(done, total int) {
			a.calls++
			if done != last+1 || total != 76*6 {
				a.odd = append(a.odd, fmt.Sprintf("progress %d/%d after %d", done, total, last))
			}
			last = done
		})
		return a, func(context.Context) error { return nil }, err
	})
}

func TestExploreMapMatchesTheRaceLogic(t *testing.T) {
	t.Parallel()
	// The default sweep: every arrival in the window, 1060..1135.
	sweep := arrivalSweep(t)
	res, calls := sweep.res, sweep.calls
	for _, o := range sweep.odd {
		t.Error(o)
	}
	if len(res.Cells) != 76*6 || calls != 76*6 {
		t.Fatalf("%d cells, %d progress calls", len(res.Cells), calls)
	}
	cell := map[string]batch.ExploreCell{}
	for i, c := range res.Cells {
		// Fixed order: arrival slowest, then the six settings in order.
		k := scenario.AllKnobs()[i%6]
		if c.Renewal != k.Renewal || c.Fencing != k.Fencing || c.Values["arrival"] != 1060+int64(i/6) {
			t.Fatalf("cell %d is %s/%s at %v", i, c.Renewal, c.Fencing, c.Values)
		}
		cell[fmt.Sprintf("%s/%s@%d", c.Renewal, c.Fencing, c.Values["arrival"])] = c
	}
	// The boundary (B takes over at 1070) and both ends of the window.
	for _, b := range []struct {
		key     string
		verdict string
		effects int
	}{
		{"blind/off@1060", scenario.VerdictSafe, 1},
		{"blind/off@1069", scenario.VerdictSafe, 1},
		{"blind/off@1070", scenario.VerdictConflict, 2},
		{"blind/off@1135", scenario.VerdictConflict, 2},
		{"blind/monotonic@1070", scenario.VerdictSafe, 1},
		{"compare/off@1069", scenario.VerdictSafe, 1},
		{"compare/off@1070", scenario.VerdictSafe, 1},
		{"compare/off@1135", scenario.VerdictSafe, 1},
		{"compare/monotonic@1060", scenario.VerdictSafe, 1},
		{"compare/monotonic@1135", scenario.VerdictSafe, 1},
	} {
		if c := cell[b.key]; c.Verdict != b.verdict || c.Effects != b.effects {
			t.Errorf("%s: %s with %d effects, want %s with %d", b.key, c.Verdict, c.Effects, b.verdict, b.effects)
		}
	}
	for _, c := range res.Cells {
		arr := c.Values["arrival"]
		// Events at the same time keep file order: B's takeover comes first,
		// so an arrival at 1070 is already after it.
		after := arr >= 1070
		wantConflict := c.Renewal == scenario.RenewalBlind && c.Fencing == scenario.FencingOff && after
		if (c.Verdict == scenario.VerdictConflict) != wantConflict {
			t.Errorf("arrival %d %s/%s: %s with %d effects, want conflict=%v", arr, c.Renewal, c.Fencing, c.Verdict, c.Effects, wantConflict)
		}
		if wantConflict && c.Effects != 2 {
			t.Errorf("arrival %d blind/off: %d effects, want 2", arr, c.Effects)
		}
		if !after {
			// Before the takeover exactly one holder writes: A (blind renewal
			// kept its lease, so B's takeover finds it live) or B. Strict
			// fencing refuses A's fence-1 write against the stored epoch 1:
			// the current holder blocked, as in the second seed.
			want := 1
			if c.Renewal == scenario.RenewalBlind && c.Fencing == scenario.FencingStrict {
				want = 0
			}
			if c.Effects != want {
				t.Errorf("arrival %d before takeover %s/%s: %d effects, want %d", arr, c.Renewal, c.Fencing, c.Effects, want)
			}
		}
	}
}

func TestExploreTwoTimesAndLimits(t *testing.T) {
	dsn := pgtest.DSN(t)
	sc, _ := scenario.Builtin("renewal-race")
	vary := []batch.Vary{{Name: "takeover", From: 1080, To: 1081}, {Name: "arrival", From: 1075, To: 1085}}
	res, err := batch.Explore(enginetest.Ctx(t), dsn, sc, vary, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 2*11*6 {
		t.Fatalf("%d cells", len(res.Cells))
	}
	for _, c := range res.Cells {
		wantConflict := c.Renewal == scenario.RenewalBlind && c.Fencing == scenario.FencingOff && c.Values["arrival"] >= c.Values["takeover"]
		if (c.Verdict == scenario.VerdictConflict) != wantConflict {
			t.Errorf("%v %s/%s: %s", c.Values, c.Renewal, c.Fencing, c.Verdict)
		}
	}
	if _, err := batch.Explore(enginetest.Ctx(t), dsn, sc, []batch.Vary{{Name: "nope", From: 1, To: 2}}, nil); err == nil {
		t.Fatal("unknown time accepted")
	}
	for _, bad := range []string{"arrival", "arrival=5..1", "arrival=1..x", "=1..2"} {
		if _, err := batch.ParseVary(bad); err == nil {
			t.Errorf("ParseVary(%q) accepted", bad)
		}
	}
	if v, err := batch.ParseVary("arrival=1060..1135"); err != nil || v.From != 1060 || v.To != 1135 {
		t.Fatalf("ParseVary: %+v %v", v, err)
	}
}

// With B's takeover moved too, blind/off conflicts exactly when A's
// heartbeat arrives at or after a takeover that can happen: one at or
// after A's expiry at 1060. Before 1060 the lease is still A's and B's
// acquire finds no expired row.
func TestExploreTakeoverMovesTheBoundary(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	sc, _ := scenario.Builtin("renewal-race")
	vary := []batch.Vary{{Name: "takeover", From: 1058, To: 1062}, {Name: "arrival", From: 1056, To: 1066}}
	res, err := batch.Explore(enginetest.Ctx(t), dsn, sc, vary, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 5*11*6 {
		t.Fatalf("%d cells", len(res.Cells))
	}
	conflicts := 0
	for i, c := range res.Cells {
		tk, arr := c.Values["takeover"], c.Values["arrival"]
		if want := 1058 + int64(i/(11*6)); tk != want {
			t.Fatalf("cell %d: takeover %d, want %d (first name slowest)", i, tk, want)
		}
		want := c.Renewal == scenario.RenewalBlind && c.Fencing == scenario.FencingOff && tk >= 1060 && arr >= tk
		if got := c.Verdict == scenario.VerdictConflict; got != want {
			t.Errorf("takeover %d arrival %d %s/%s: %s with %d effects, want conflict=%v", tk, arr, c.Renewal, c.Fencing, c.Verdict, c.Effects, want)
		}
		if want {
			conflicts++
		}
	}
	// takeover 1060: arrivals 1060..1066 (7), 1061: 6, 1062: 5.
	if conflicts != 18 {
		t.Errorf("%d conflicting cells expected by the rule, want 18", conflicts)
	}
}

func TestExploreJSONShape(t *testing.T) {
	res := batch.ExploreResult{
		Scenario: "renewal-race",
		Vary:     []batch.Vary{{Name: "arrival", From: 1070, To: 1070}},
		Cells: []batch.ExploreCell{{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff,
			Values: map[string]int64{"arrival": 1070}, Effects: 2, Verdict: scenario.VerdictConflict}},
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"scenario":"renewal-race","vary":[{"name":"arrival","from":1070,"to":1070}],` +
		`"cells":[{"renewal":"blind","fencing":"off","values":{"arrival":1070},"effects":2,"verdict":"conflict"}]}`
	if string(b) != want {
		t.Errorf("json:\n got %s\nwant %s", b, want)
	}
}

func TestCheckVaryWithoutAServer(t *testing.T) {
	sc, _ := scenario.Builtin("renewal-race")
	for name, c := range map[string]struct {
		vary []batch.Vary
		want string
	}{
		"unknown time":      {[]batch.Vary{{Name: "nope", From: 1, To: 2}}, "no time named"},
		"twice":             {[]batch.Vary{{Name: "arrival", From: 1060, To: 1061}, {Name: "arrival", From: 1062, To: 1063}}, "twice"},
		"before it is sent": {[]batch.Vary{{Name: "arrival", From: 1050, To: 1060}}, "arrival=1050"},
		"too large":         {[]batch.Vary{{Name: "arrival", From: 0, To: batch.MaxExploreCells}}, "more than"},
		"nothing":           {nil, "nothing to vary"},
	} {
		err := batch.CheckVary(sc, c.vary)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
	if err := batch.CheckVary(sc, []batch.Vary{{Name: "takeover", From: 1061, To: 1075}, {Name: "arrival", From: 1060, To: 1135}}); err != nil {
		t.Errorf("a valid sweep: %v", err)
	}
	// Explore refuses the same sweeps before it touches the server.
	if _, err := batch.Explore(enginetest.Ctx(t), "postgres://nobody@127.0.0.1:1/none", sc, []batch.Vary{{Name: "arrival", From: 1050, To: 1060}}, nil); err == nil || !strings.Contains(err.Error(), "arrival=1050") {
		t.Errorf("Explore with an invalid variant: %v", err)
	}
}

// TestEveryBuiltinHasAValidDefaultSweep: explore (and the TUI's explore
// map) sweeps a built-in's default time over its window; every value must
// make a valid timeline. A built-in without named times has no sweep.
func TestEveryBuiltinHasAValidDefaultSweep(t *testing.T) {
	all, err := scenario.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range all {
		if len(sc.Times) == 0 {
			continue
		}
		vary, err := batch.DefaultVary(sc)
		if err != nil {
			t.Errorf("%s: %v", sc.Name, err)
			continue
		}
		if err := batch.CheckVary(sc, vary); err != nil {
			t.Errorf("%s: the default sweep of %s over %d..%d: %v", sc.Name, vary[0].Name, vary[0].From, vary[0].To, err)
		}
	}
}

// The map judges by the one rule: strict fencing blocks A while A still
// holds a valid lease, blind/off conflicts once B took over, and
// compare-and-renew with monotonic fencing is safe everywhere.
func TestExploreVerdictsByTheContract(t *testing.T) {
	t.Parallel()
	res := arrivalSweep(t).res
	at := func(k scenario.Knobs, arrival int64) string {
		for _, c := range res.Cells {
			if c.Renewal == k.Renewal && c.Fencing == k.Fencing && c.Values["arrival"] == arrival {
				return c.Verdict
			}
		}
		t.Fatalf("no cell %s at %d", k, arrival)
		return ""
	}
	blindStrict := enginetest.Knobs(scenario.RenewalBlind, scenario.FencingStrict)
	if v := at(blindStrict, 1065); v != scenario.VerdictBlocked {
		t.Errorf("blind/strict at 1065: %s, want blocked", v)
	}
	if v := at(enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff), 1075); v != scenario.VerdictConflict {
		t.Errorf("blind/off at 1075: %s, want conflict", v)
	}
	for _, c := range res.Cells {
		if c.Renewal == scenario.RenewalCompare && c.Fencing == scenario.FencingMonotonic && c.Verdict != scenario.VerdictSafe {
			t.Errorf("compare/monotonic at %d: %s", c.Values["arrival"], c.Verdict)
		}
	}
}
