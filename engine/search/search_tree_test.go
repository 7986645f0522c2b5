package search_test

import (
	"context"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/search"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
)

// treeCounts walks every run of the search's move graph without merging
// equal states: each path played with Run.Play, each step back a reset
// and replay of the path on the server. The search must count the same.
type treeCounts struct {
	runs     int64
	verdicts map[string]int64
	goals    map[scenario.Predicate]int64
}

func walkTree(ctx context.Context, t *testing.T, r *engine.Run, c *treeCounts) {
	t.Helper()
	pos := r.Pos()
	w, ok := r.State()
	if !ok {
		t.Fatal("the run has no state: it is not live")
	}
	opts := w.Options(r.Now(), false)
	if !slices.ContainsFunc(opts, func(o world.Option) bool { return o.Move.Actor != scenario.ClockActor }) {
		c.runs++
		c.verdicts[r.View().Outcome.Verdict]++
		sc := r.Scenario()
		for _, st := range world.GoalsOf(goalsFor(scenario.Predicates()), sc.Initial, r.Steps()) {
			if st.Reached {
				c.goals[st.Goal.When]++
			}
		}
		return
	}
	for _, o := range opts {
		if err := r.Seek(ctx, pos); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Play(ctx, o.Move); err != nil {
			t.Fatalf("after %s, move %s: %v", scenario.FormatMoves(r.Log()[:pos]), o.Move, err)
		}
		walkTree(ctx, t, r, c)
	}
}

func goalsFor(ps []scenario.Predicate) []scenario.Goal {
	var out []scenario.Goal
	for _, p := range ps {
		out = append(out, scenario.Goal{ID: string(p), Text: string(p), When: p})
	}
	return out
}

// TestSearchCountsEveryRun compares the search's counts, made on a graph of
// merged states, with a walk of every run one by one, on two small
// scenarios: control, and three writes of the second seed's case, where
// off conflicts and strict blocks in some orders.
func TestSearchCountsEveryRun(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	control, err := scenario.Builtin("control")
	if err != nil {
		t.Fatal(err)
	}
	writes, err := scenario.Parse("three-writes.yaml", []byte(`name: three-writes
window: {from: 1000, to: 1004}
ttl: 60
initial:
  resource: {epoch: 10, value: "a"}
events:
  - {t: 1001, actor: B, action: write, epoch: 11, value: "new"}
  - {t: 1002, actor: A, action: write, epoch: 10, value: "old"}
  - {t: 1003, actor: B, action: write, epoch: 11, value: "new again"}
expect:
  - {renewal: "*", fencing: "off", effects: 3, verdict: conflict}
  - {renewal: "*", fencing: strict, effects: 1, verdict: blocked}
  - {renewal: "*", fencing: monotonic, effects: 2, verdict: safe}
`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		sc *scenario.Scenario
		k  scenario.Knobs
	}{
		{control, scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff}},
		{control, scenario.Knobs{Renewal: scenario.RenewalCompare, Fencing: scenario.FencingStrict}},
		{writes, scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff}},
		{writes, scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingStrict}},
	}
	o := search.New(search.Config{DSN: dsn})
	defer func() {
		if err := o.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	for _, tc := range cases {
		t.Run(tc.sc.Name+"/"+tc.k.String(), func(t *testing.T) {
			got, err := o.Search(ctx, tc.sc, tc.k, nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := engine.Open(ctx, engine.Config{DSN: dsn, Scenario: tc.sc, Knobs: tc.k, Log: []scenario.Move{}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := r.Close(context.Background()); err != nil {
					t.Error(err)
				}
			}()
			want := &treeCounts{verdicts: map[string]int64{}, goals: map[scenario.Predicate]int64{}}
			walkTree(ctx, t, r, want)
			if got.Runs.Cmp(big.NewInt(want.runs)) != 0 {
				t.Errorf("runs: search %s, every run walked %d", got.Runs, want.runs)
			}
			for v, n := range map[string]*big.Int{scenario.VerdictConflict: got.Conflict, scenario.VerdictBlocked: got.Blocked, scenario.VerdictSafe: got.Safe} {
				if n.Cmp(big.NewInt(want.verdicts[v])) != 0 {
					t.Errorf("%s: search %s, walked %d", v, n, want.verdicts[v])
				}
			}
			f, _ := o.Cached(tc.sc, tc.k)
			for _, g := range f.Goals {
				if g.Runs.Cmp(big.NewInt(want.goals[g.Goal.When])) != 0 {
					t.Errorf("goal %s: search %s runs, walked %d", g.Goal.When, g.Runs, want.goals[g.Goal.When])
				}
			}
			if want.runs < 10 {
				t.Errorf("only %d runs: too few for the comparison to mean much", want.runs)
			}
			t.Logf("%d states, %d runs, verdicts %v, goals %v", got.States, want.runs, want.verdicts, want.goals)
		})
	}
}
