package batch

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/sweep"
	"github.com/leaserace/leaserace/scenario"
	"golang.org/x/sync/errgroup"
)

// MaxExploreCells bounds a sweep (variants × six settings) so a typo
// cannot start a day-long run.
const MaxExploreCells = 100000

var varyRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=([0-9]+)\.\.([0-9]+)$`)

// ParseVary reads NAME=FROM..TO.
func ParseVary(s string) (Vary, error) {
	m := varyRE.FindStringSubmatch(s)
	if m == nil {
		return Vary{}, fmt.Errorf("--vary %q: want NAME=FROM..TO, e.g. arrival=1060..1135", s)
	}
	from, err1 := strconv.ParseInt(m[2], 10, 64)
	to, err2 := strconv.ParseInt(m[3], 10, 64)
	if err1 != nil || err2 != nil || to < from {
		return Vary{}, fmt.Errorf("--vary %q: want FROM <= TO, both whole numbers", s)
	}
	return Vary{Name: m[1], From: from, To: to}, nil
}

// A sweep's results are sweep's data, so that the explore map can draw
// them without the engine.
type (
	Vary          = sweep.Vary
	ExploreCell   = sweep.Cell
	ExploreResult = sweep.Result
)

// DefaultVary sweeps the scenario's "arrival" time over its window, or its
// first named time when it has no arrival.
func DefaultVary(sc *scenario.Scenario) ([]Vary, error) {
	name := "arrival"
	if _, ok := sc.Times[name]; !ok {
		names := sc.TimeNames()
		if len(names) == 0 {
			return nil, fmt.Errorf("scenario %s has no named times to vary", sc.Name)
		}
		name = names[0]
	}
	return []Vary{{Name: name, From: sc.Window.From, To: sc.Window.To}}, nil
}

// exploreLanes is how many runs an explore plays at once, each with its own
// schema, sessions and resource: a cell mostly waits on round trips, so
// lanes overlap the waits, but each also costs CPU (the resource's HTTP, the
// server's backends), so no more lanes than cores.
func exploreLanes() int { return min(4, runtime.GOMAXPROCS(0)) }

// Explore re-runs the scenario on the server for every combination of the
// varied times under every knob setting. Cells come back in a fixed order:
// the first varied name slowest, then the next, then the six settings. The
// cells are shared out over a few runs that swap variants (Run.Replace).
// progress, if set, is told how many cells are done out of how many; calls
// never overlap.
func Explore(ctx context.Context, dsn string, sc *scenario.Scenario, vary []Vary, progress func(done, total int)) (ExploreResult, error) {
	res := ExploreResult{Scenario: sc.Name, Vary: vary}
	start := time.Now()
	variants, sets, err := planExplore(sc, vary)
	if err != nil {
		return res, err
	}
	combos := len(variants)
	all := scenario.AllKnobs()
	total := combos * len(all)
	cells := make([]ExploreCell, total)
	var (
		mu         sync.Mutex
		next, done int
	)
	g, gctx := errgroup.WithContext(ctx)
	for range min(exploreLanes(), total) {
		g.Go(func() (err error) {
			defer engine.CatchPanic(&err)
			run, err := engine.Open(gctx, engine.Config{DSN: dsn, Scenario: sc, Knobs: all[0]})
			if err != nil {
				return err
			}
			defer func() {
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engine.CloseTimeout)
				defer cancel()
				_ = run.Close(cctx)
			}()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= total {
					return nil
				}
				// Jobs go setting by setting, so a run changes the
				// resource's fencing only when the setting changes; cells
				// still land in their fixed order.
				ki, c := i/combos, i%combos
				k := all[ki]
				if err := run.Replace(gctx, variants[c], k); err != nil {
					return err
				}
				if err := run.PlayAll(gctx); err != nil {
					return fmt.Errorf("%s with %s: %w", describeSet(vary, sets[c]), k, err)
				}
				o := run.View().Outcome
				cells[c*len(all)+ki] = ExploreCell{Renewal: k.Renewal, Fencing: k.Fencing, Values: maps.Clone(sets[c]), Effects: o.Effects, Verdict: o.Verdict}
				mu.Lock()
				done++
				if progress != nil {
					progress(done, total)
				}
				mu.Unlock()
			}
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	res.Cells = cells
	res.Took = time.Since(start)
	return res, nil
}

// CheckVary says whether a sweep can run, without a server: every name is
// one of the scenario's times, named once, the sweep is not too large and
// every variant is a valid scenario (a heartbeat still arrives after it is
// sent, and so on).
func CheckVary(sc *scenario.Scenario, vary []Vary) error {
	_, _, err := planExplore(sc, vary)
	return err
}

// planExplore builds every variant of the sweep, in cell order, with the
// times it sets.
func planExplore(sc *scenario.Scenario, vary []Vary) ([]*scenario.Scenario, []map[string]int64, error) {
	if len(vary) == 0 {
		return nil, nil, fmt.Errorf("nothing to vary: name at least one of %s's times", sc.Name)
	}
	combos := int64(1)
	seen := map[string]bool{}
	for _, v := range vary {
		if _, ok := sc.Times[v.Name]; !ok {
			return nil, nil, fmt.Errorf("scenario %s has no time named %q (it has %v)", sc.Name, v.Name, sc.TimeNames())
		}
		if seen[v.Name] {
			return nil, nil, fmt.Errorf("%s is varied twice; vary each time once", v.Name)
		}
		seen[v.Name] = true
		n := v.To - v.From + 1
		if n <= 0 || combos*n*int64(len(scenario.AllKnobs())) > MaxExploreCells {
			return nil, nil, fmt.Errorf("the sweep would run more than %d cells; narrow the ranges", MaxExploreCells)
		}
		combos *= n
	}
	variants := make([]*scenario.Scenario, combos)
	sets := make([]map[string]int64, combos)
	values := make([]int64, len(vary))
	for i, v := range vary {
		values[i] = v.From
	}
	for c := range variants {
		set := make(map[string]int64, len(vary))
		for i, v := range vary {
			set[v.Name] = values[i]
		}
		variant, err := sc.WithTimes(set)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", describeSet(vary, set), err)
		}
		variants[c], sets[c] = variant, set
		// Odometer over the varied names, last one fastest.
		for i := len(vary) - 1; i >= 0; i-- {
			values[i]++
			if values[i] <= vary[i].To {
				break
			}
			values[i] = vary[i].From
		}
	}
	return variants, sets, nil
}

// describeSet names a variant's times in the order they were varied.
func describeSet(vary []Vary, set map[string]int64) string {
	parts := make([]string, len(vary))
	for i, v := range vary {
		parts[i] = fmt.Sprintf("%s=%d", v.Name, set[v.Name])
	}
	return strings.Join(parts, " ")
}
