package search_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// stepOf is the first step of tr with the actor and action.
func stepOf(t *testing.T, tr transcript.Transcript, actor string, a scenario.Action) transcript.Step {
	t.Helper()
	for _, s := range tr.Steps {
		if s.Actor == actor && s.Action == a {
			return s
		}
	}
	t.Fatalf("%s: no %s by %s", tr.Knobs, a, actor)
	return transcript.Step{}
}

// TestCutNamesTheMove is issue 20's "an impossible goal names the move that
// cuts every path, from the search": the stale-write goal on renewal-race
// under compare/monotonic names hb1's delivery and the tag PostgreSQL gave
// it, and that A then made no call; under blind/monotonic it names A's
// refused write, with the status, fences and reason the resource gave. The
// words are checked against a real run of the scenario's own events.
func TestCutNamesTheMove(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	rs := searchAll(t, dsn, "renewal-race")

	cm := enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic)
	g := goalReach(t, resultFor(t, rs, cm), scenario.GoalConflict)
	if g.Reachable() || g.Cut == "" {
		t.Fatalf("compare/monotonic stale write: reachable %v, cut %q; want impossible with a cut", g.Reachable(), g.Cut)
	}
	run := enginetest.Played(t, dsn, "renewal-race", cm)
	hb := stepOf(t, run, "A", scenario.ActionDeliver)
	owner := run.Steps[len(run.Steps)-1].Coordinator
	for _, want := range []string{
		"every delivery of " + hb.Heartbeat,
		"got " + hb.Tag,
		fmt.Sprintf("%s now holds fence %d", owner.Owner, owner.Fence),
		"so A never wrote",
	} {
		if !strings.Contains(g.Cut, want) {
			t.Errorf("compare/monotonic cut %q does not say %q", g.Cut, want)
		}
	}
	if w := stepOf(t, run, "A", scenario.ActionEffect); w.Result != transcript.ResultNoCall {
		t.Errorf("A's write under compare/monotonic: %s, but the cut says it made no call", w.Result)
	}

	bm := enginetest.Knobs(scenario.RenewalBlind, scenario.FencingMonotonic)
	g = goalReach(t, resultFor(t, rs, bm), scenario.GoalConflict)
	if g.Reachable() || g.Cut == "" {
		t.Fatalf("blind/monotonic stale write: reachable %v, cut %q; want impossible with a cut", g.Reachable(), g.Cut)
	}
	run = enginetest.Played(t, dsn, "renewal-race", bm)
	w := stepOf(t, run, "A", scenario.ActionEffect)
	if w.Call == nil || w.Call.Accepted {
		t.Fatalf("A's write under blind/monotonic: %+v; want refused", w.Call)
	}
	e := w.Resource.Effects[len(w.Resource.Effects)-1]
	for _, want := range []string{
		fmt.Sprintf("A's fence %d when the highest was %d got %d", e.Fence, e.StoredFence, w.Call.Status),
		e.Reason,
	} {
		if !strings.Contains(g.Cut, want) {
			t.Errorf("blind/monotonic cut %q does not say %q", g.Cut, want)
		}
	}

	// Every goal: a cut exactly when no run reaches it.
	for _, r := range rs {
		for _, g := range r.Goals {
			if g.Reachable() == (g.Cut != "") {
				t.Errorf("%s %s: reachable %v, cut %q", r.Knobs, g.Goal.ID, g.Reachable(), g.Cut)
			}
		}
	}
}

// TestCutTwoHolders: the two-holders goal gets its reason where no run
// reaches it: in control only A ever holds the lease, and revoked-writer
// has no lease at all (its writes carry their own fences).
func TestCutTwoHolders(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	for name, want := range map[string]string{
		"control":        "only A ever believed it held the lease",
		"revoked-writer": "no actor ever believed it held the lease",
	} {
		rs := searchAll(t, dsn, name)
		for _, r := range rs {
			g := goalReach(t, r, scenario.GoalTwoHolders)
			if g.Reachable() || !strings.Contains(g.Cut, want) {
				t.Errorf("%s %s two-holders: reachable %v, cut %q; want %q", name, r.Knobs, g.Reachable(), g.Cut, want)
			}
			for _, g := range r.Goals {
				if !g.Reachable() && g.Cut == "" {
					t.Errorf("%s %s %s: impossible without a cut", name, r.Knobs, g.Goal.ID)
				}
			}
		}
	}
}
