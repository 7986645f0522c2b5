package engine

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/leaserace/leaserace/scenario"
)

// Vary is one named time swept over an inclusive range.
type Vary struct {
	Name string `json:"name"`
	From int64  `json:"from"`
	To   int64  `json:"to"`
}

// MaxExploreCells bounds a sweep so a typo cannot start a day-long run.
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

// ExploreCell is one variant under one knob setting.
type ExploreCell struct {
	Renewal scenario.Renewal `json:"renewal"`
	Fencing scenario.Fencing `json:"fencing"`
	Values  map[string]int64 `json:"values"`
	Effects int              `json:"effects"`
	Verdict string           `json:"verdict"`
}

// ExploreResult is a whole sweep.
type ExploreResult struct {
	Scenario string        `json:"scenario"`
	Vary     []Vary        `json:"vary"`
	Cells    []ExploreCell `json:"cells"`
	Took     time.Duration `json:"-"`
}

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

// Explore re-runs the scenario on the server for every combination of the
// varied times under every knob setting, on one run that swaps variants.
// progress, if set, is told how many cells are done out of how many.
func Explore(ctx context.Context, dsn string, sc *scenario.Scenario, vary []Vary, progress func(done, total int)) (ExploreResult, error) {
	res := ExploreResult{Scenario: sc.Name, Vary: vary}
	start := time.Now()
	combos := 1
	for _, v := range vary {
		if _, ok := sc.Times[v.Name]; !ok {
			return res, fmt.Errorf("scenario %s has no time named %q (it has %v)", sc.Name, v.Name, sc.TimeNames())
		}
		n := int(v.To - v.From + 1)
		if n <= 0 || combos*n > MaxExploreCells {
			return res, fmt.Errorf("the sweep would run more than %d variants; narrow --vary", MaxExploreCells)
		}
		combos *= n
	}
	all := scenario.AllKnobs()
	total := combos * len(all)
	run, err := Open(ctx, Config{DSN: dsn, Scenario: sc, Knobs: all[0]})
	if err != nil {
		return res, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = run.Close(cctx)
	}()
	values := make([]int64, len(vary))
	for i, v := range vary {
		values[i] = v.From
	}
	for c := 0; c < combos; c++ {
		set := map[string]int64{}
		for i, v := range vary {
			set[v.Name] = values[i]
		}
		variant, err := sc.WithTimes(set)
		if err != nil {
			return res, err
		}
		for _, k := range all {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			if err := run.Replace(ctx, variant, k); err != nil {
				return res, err
			}
			if err := run.PlayAll(ctx); err != nil {
				return res, fmt.Errorf("%v with %s: %w", set, k, err)
			}
			o := run.View().Outcome
			vals := make(map[string]int64, len(set))
			for n, x := range set {
				vals[n] = x
			}
			res.Cells = append(res.Cells, ExploreCell{Renewal: k.Renewal, Fencing: k.Fencing, Values: vals, Effects: o.Effects, Verdict: o.Verdict})
			if progress != nil {
				progress(len(res.Cells), total)
			}
		}
		// Odometer over the varied names, last one fastest.
		for i := len(vary) - 1; i >= 0; i-- {
			values[i]++
			if values[i] <= vary[i].To {
				break
			}
			values[i] = vary[i].From
		}
	}
	res.Took = time.Since(start)
	return res, nil
}
