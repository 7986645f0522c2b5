package search_test

import (
	"context"
	"errors"
	"math/big"
	"slices"
	"sync"
	"testing"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/search"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
)

// searchAll explores every setting of a built-in scenario on the
// package's shared search (sharedSearch), so that tests asking about the
// same scenario share one live search instead of each making its own.
func searchAll(t *testing.T, dsn, name string) []search.Result {
	t.Helper()
	sc, err := scenario.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := sharedSearch(t, dsn).SearchAll(enginetest.Ctx(t), sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// sharedSearch is one Searcher for every test of the package on dsn. A
// live search of renewal-race takes a few seconds (ten times that under
// the race detector), and several tests check its answers; the Searcher
// runs a search asked for twice once, and hands each caller its own copy
// of the result. The tests of the cache and of concurrent callers keep
// searches of their own.
func sharedSearch(t *testing.T, dsn string) *search.Searcher {
	t.Helper()
	return pgtest.Shared(t, "searcher on "+dsn, func(context.Context) (*search.Searcher, func(context.Context) error, error) {
		o := search.New(search.Config{DSN: dsn})
		return o, o.Close, nil
	})
}

func resultFor(t *testing.T, rs []search.Result, k scenario.Knobs) search.Result {
	t.Helper()
	for _, r := range rs {
		if r.Knobs == k {
			return r
		}
	}
	t.Fatalf("no result for %s", k)
	return search.Result{}
}

// playMoves plays a move list on a fresh run of a built-in scenario, each
// move chosen with Run.Play, and returns the run.
func playMoves(t *testing.T, dsn, name string, k scenario.Knobs, log []scenario.Move) *engine.Run {
	t.Helper()
	r := enginetest.Open(t, dsn, name, k)
	for i, mv := range log {
		if _, err := r.Play(enginetest.Ctx(t), mv); err != nil {
			t.Fatalf("%s, move %d %s: %v", k, i+1, mv, err)
		}
	}
	return r
}

func goalReach(t *testing.T, r search.Result, p scenario.Predicate) search.GoalReach {
	t.Helper()
	for _, g := range r.Goals {
		if g.Goal.When == p {
			return g
		}
	}
	t.Fatalf("%s: no goal %s among %+v", r.Knobs, p, r.Goals)
	return search.GoalReach{}
}

// TestSearchRenewalRace is issue 13's claim on the server: no order of
// renewal-race's moves conflicts under compare-and-renew with monotonic
// fencing; under blind/off some do, and the shortest one found, played
// again move by move, conflicts there and not under the repair.
func TestSearchRenewalRace(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	rs := searchAll(t, dsn, "renewal-race")
	if len(rs) != 6 {
		t.Fatalf("%d results, want one per setting", len(rs))
	}
	for i, r := range rs {
		if r.Knobs != scenario.AllKnobs()[i] {
			t.Errorf("result %d is %s, want %s", i, r.Knobs, scenario.AllKnobs()[i])
		}
		sum := new(big.Int).Add(r.Conflict, r.Blocked)
		sum.Add(sum, r.Safe)
		if r.States < 2 || r.Runs.Sign() <= 0 || sum.Cmp(r.Runs) != 0 {
			t.Errorf("%s: %d states, %s runs = %s conflict + %s blocked + %s safe?", r.Knobs, r.States, r.Runs, r.Conflict, r.Blocked, r.Safe)
		}
		if (r.ShortestConflict == nil) != (r.Conflict.Sign() == 0) || (r.ShortestBlocked == nil) != (r.Blocked.Sign() == 0) {
			t.Errorf("%s: shortest lists %v / %v do not match counts %s / %s", r.Knobs, r.ShortestConflict, r.ShortestBlocked, r.Conflict, r.Blocked)
		}
	}
	blindOff := resultFor(t, rs, enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	repair := resultFor(t, rs, enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic))
	if repair.Conflict.Sign() != 0 || repair.Blocked.Sign() != 0 || repair.ShortestConflict != nil {
		t.Errorf("compare/monotonic: %s conflicts, %s blocked, shortest %v; want none", repair.Conflict, repair.Blocked, repair.ShortestConflict)
	}
	if blindOff.Conflict.Sign() <= 0 || len(blindOff.ShortestConflict) == 0 {
		t.Fatalf("blind/off: %s conflicts, shortest %v; want some", blindOff.Conflict, blindOff.ShortestConflict)
	}
	for _, k := range []scenario.Knobs{enginetest.Knobs(scenario.RenewalBlind, scenario.FencingStrict), enginetest.Knobs(scenario.RenewalCompare, scenario.FencingStrict)} {
		if r := resultFor(t, rs, k); r.Blocked.Sign() <= 0 || r.ShortestBlocked == nil {
			t.Errorf("%s: strict fencing blocks a valid write in some order, got %s blocked", k, r.Blocked)
		}
	}

	// The shortest conflict, chosen move by move on a run of its own.
	log := blindOff.ShortestConflict
	if v := playMoves(t, dsn, "renewal-race", blindOff.Knobs, log).View().Outcome.Verdict; v != scenario.VerdictConflict {
		t.Errorf("the shortest conflicting list %s under blind/off ends %s", scenario.FormatMoves(log), v)
	}
	if v := playMoves(t, dsn, "renewal-race", repair.Knobs, log).View().Outcome.Verdict; v == scenario.VerdictConflict {
		t.Errorf("the same list under compare/monotonic conflicts")
	}
	// It is the shortest: every shorter prefix of it is not yet a conflict.
	if v := playMoves(t, dsn, "renewal-race", blindOff.Knobs, log[:len(log)-1]).View().Outcome.Verdict; v == scenario.VerdictConflict {
		t.Errorf("a shorter prefix already conflicts")
	}
}

// TestSearchGoals: the goal panel's answers come from the one place goals
// are decided. A goal's par list, played, reaches the goal after exactly
// par moves by world.GoalsOf; an impossible goal has zero runs.
func TestSearchGoals(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	rs := searchAll(t, dsn, "renewal-race")
	sc, _ := scenario.Builtin("renewal-race")
	for _, r := range rs {
		if len(r.Goals) != len(sc.Goals()) {
			t.Fatalf("%s: %d goals, want the scenario's %d", r.Knobs, len(r.Goals), len(sc.Goals()))
		}
		for i, g := range r.Goals {
			if g.Goal.ID != sc.Goals()[i].ID {
				t.Errorf("%s: goal %d is %s, want %s", r.Knobs, i, g.Goal.ID, sc.Goals()[i].ID)
			}
			if g.Runs.Sign() < 0 || g.Runs.Cmp(r.Runs) > 0 || (g.Runs.Sign() == 0) == g.Reachable() || g.Par != len(g.Moves) {
				t.Errorf("%s %s: %s of %s runs, par %d, %d moves", r.Knobs, g.Goal.ID, g.Runs, r.Runs, g.Par, len(g.Moves))
				continue
			}
			if !g.Reachable() {
				continue
			}
			run := playMoves(t, dsn, "renewal-race", r.Knobs, g.Moves)
			st := world.GoalsOf([]scenario.Goal{g.Goal}, sc.Initial, run.Steps())[0]
			if !st.Reached || st.Moves != g.Par {
				t.Errorf("%s %s: par list %s played: reached %v after %d moves, want after %d", r.Knobs, g.Goal.ID, scenario.FormatMoves(g.Moves), st.Reached, st.Moves, g.Par)
			}
		}
		conflict := goalReach(t, r, scenario.GoalConflict)
		if conflict.Runs.Cmp(r.Conflict) != 0 || conflict.Par != len(r.ShortestConflict) {
			t.Errorf("%s: the stale-write goal (%s runs, par %d) and the conflict count (%s, shortest %d) disagree", r.Knobs, conflict.Runs, conflict.Par, r.Conflict, len(r.ShortestConflict))
		}
	}
	repair := resultFor(t, rs, enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic))
	for _, p := range []scenario.Predicate{scenario.GoalConflict, scenario.GoalTwoHolders} {
		if g := goalReach(t, repair, p); g.Reachable() || g.Runs.Sign() != 0 || g.Moves != nil {
			t.Errorf("compare/monotonic: goal %s reachable (%s runs, %v)", p, g.Runs, g.Moves)
		}
	}
	blind := resultFor(t, rs, enginetest.Knobs(scenario.RenewalBlind, scenario.FencingMonotonic))
	if g := goalReach(t, blind, scenario.GoalTwoHolders); !g.Reachable() {
		t.Errorf("blind renewal: two holders should be reachable, got %+v", g)
	}
}

// TestSearchRestoreMatchesReplay: putting a state back with SQL finds the
// same graph as replaying each state's path from the start, the slow way.
func TestSearchRestoreMatchesReplay(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	sc, _ := scenario.Builtin("renewal-race")
	ks := []scenario.Knobs{enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff), enginetest.Knobs(scenario.RenewalCompare, scenario.FencingStrict)}
	for _, k := range ks {
		var got [2]search.Result
		for i, replay := range []bool{false, true} {
			o := search.New(search.Config{DSN: dsn})
			if replay {
				search.ReplayStates(o)
			}
			r, err := o.Search(enginetest.Ctx(t), sc, k, nil)
			if cerr := o.Close(context.Background()); cerr != nil {
				t.Error(cerr)
			}
			if err != nil {
				t.Fatal(err)
			}
			got[i] = r
		}
		a, b := got[0], got[1]
		if a.States != b.States || a.Moves != b.Moves || a.Runs.Cmp(b.Runs) != 0 || a.Conflict.Cmp(b.Conflict) != 0 ||
			a.Blocked.Cmp(b.Blocked) != 0 || scenario.FormatMoves(a.ShortestConflict) != scenario.FormatMoves(b.ShortestConflict) ||
			scenario.FormatMoves(a.ShortestBlocked) != scenario.FormatMoves(b.ShortestBlocked) {
			t.Errorf("%s: restoring found %d states, %s runs (%s conflict, %s blocked); replaying %d states, %s runs (%s, %s)",
				k, a.States, a.Runs, a.Conflict, a.Blocked, b.States, b.Runs, b.Conflict, b.Blocked)
		}
		if a.Restores == 0 {
			t.Errorf("%s: the search never had to put a state back; the comparison proves nothing", k)
		}
	}
}

// TestSearchCacheAndProgress: a second search of the same scenario and
// knobs is answered from memory, also after Close; another scenario
// variant is not; progress counts every state.
func TestSearchCacheAndProgress(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	sc, _ := scenario.Builtin("control")
	k := enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff)
	o := search.New(search.Config{DSN: dsn})
	var seen []int
	first, err := o.Search(enginetest.Ctx(t), sc, k, func(n int) { seen = append(seen, n) })
	if err != nil {
		t.Fatal(err)
	}
	if first.Cached || len(seen) != first.States || !slices.IsSorted(seen) || seen[len(seen)-1] != first.States {
		t.Fatalf("progress %v for %d states (cached %v)", seen, first.States, first.Cached)
	}
	if _, ok := o.Cached(sc, enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff)); ok {
		t.Error("a setting never searched is cached")
	}
	if err := o.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	again, err := o.Search(enginetest.Ctx(t), sc, k, func(int) { t.Error("progress from the cache") })
	if err != nil || !again.Cached || again.States != first.States || again.Runs.Cmp(first.Runs) != 0 {
		t.Fatalf("after Close: %+v, %v; want the cached result", again, err)
	}
	// Results are the caller's: changing one leaves the cache as it was.
	again.Runs.SetInt64(-1)
	if c, _ := o.Cached(sc, k); c.Runs.Cmp(first.Runs) != 0 {
		t.Errorf("the cache changed with a result: %s", c.Runs)
	}
	later, err := sc.WithTimes(map[string]int64{"beat": 1040})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Search(enginetest.Ctx(t), later, k, nil); !errors.Is(err, search.ErrClosed) {
		t.Errorf("another variant after Close: %v, want ErrClosed (not a cache hit)", err)
	}
}

// TestSearchConcurrentCallers: two callers asking for the same scenario
// at once get the same answers; one searches, the other waits for it.
func TestSearchConcurrentCallers(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	sc, _ := scenario.Builtin("control")
	o := search.New(search.Config{DSN: dsn})
	defer func() {
		if err := o.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	var wg sync.WaitGroup
	var res [2][]search.Result
	var errs [2]error
	for i := range 2 {
		wg.Go(func() { res[i], errs[i] = o.SearchAll(enginetest.Ctx(t), sc, nil) })
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
	}
	cached := 0
	for j := range res[0] {
		a, b := res[0][j], res[1][j]
		if a.States != b.States || a.Runs.Cmp(b.Runs) != 0 {
			t.Errorf("%s: %d/%s and %d/%s", a.Knobs, a.States, a.Runs, b.States, b.Runs)
		}
		if a.Cached || b.Cached {
			cached++
		}
	}
	if cached != len(res[0]) {
		t.Errorf("%d of %d settings were searched twice", len(res[0])-cached, len(res[0]))
	}
}
