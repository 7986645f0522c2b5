// Package searchtest holds what explore --orders finds for every built-in
// scenario under all six settings, recorded, so that tests which need the
// shortest schedules (the Mermaid and browser checks of played runs) read
// them instead of searching again: the built-ins have about 69,000 states,
// half a minute of real SQL per search.
//
// engine/search's TestRecordedSearchesMatchLiveOnes searches again and
// compares: in go test ./... the small scenarios, in CI's soak phase every
// one. After a change to a scenario or to the search, it rewrites the
// recording with
//
//	go test ./engine/search -run TestRecordedSearchesMatchLiveOnes -update
package searchtest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"testing"

	"github.com/leaserace/leaserace/engine/search"
	"github.com/leaserace/leaserace/scenario"
)

// File is the recording's path from engine/search, where -update writes it.
const File = "searchtest/recorded.json"

//go:embed recorded.json
var recorded []byte

// Setting is one search's result as recorded: what the search found, not
// how (its time, restores and cache are left out). Move lists are in
// their text form, as run --moves reads them.
type Setting struct {
	Renewal          scenario.Renewal `json:"renewal"`
	Fencing          scenario.Fencing `json:"fencing"`
	States           int              `json:"states"`
	Moves            int              `json:"moves"`
	Runs             *big.Int         `json:"runs"`
	Conflict         *big.Int         `json:"conflict"`
	Blocked          *big.Int         `json:"blocked"`
	Safe             *big.Int         `json:"safe"`
	ShortestConflict *string          `json:"shortest_conflict"`
	ShortestBlocked  *string          `json:"shortest_blocked"`
	Goals            []Goal           `json:"goals"`
}

// Goal is one goal's reach under a setting.
type Goal struct {
	ID    string   `json:"id"`
	Runs  *big.Int `json:"runs"`
	Par   int      `json:"par"`
	Moves *string  `json:"moves"`
	Cut   string   `json:"cut,omitempty"`
}

// Record turns a search's results into their recorded form.
func Record(rs []search.Result) []Setting {
	out := make([]Setting, 0, len(rs))
	for _, r := range rs {
		s := Setting{
			Renewal: r.Knobs.Renewal, Fencing: r.Knobs.Fencing, States: r.States, Moves: r.Moves,
			Runs: r.Runs, Conflict: r.Conflict, Blocked: r.Blocked, Safe: r.Safe,
			ShortestConflict: text(r.ShortestConflict), ShortestBlocked: text(r.ShortestBlocked),
			Goals: []Goal{},
		}
		for _, g := range r.Goals {
			s.Goals = append(s.Goals, Goal{ID: g.Goal.ID, Runs: g.Runs, Par: g.Par, Moves: text(g.Moves), Cut: g.Cut})
		}
		out = append(out, s)
	}
	return out
}

func text(moves []scenario.Move) *string {
	if moves == nil {
		return nil
	}
	s := scenario.FormatMoves(moves)
	return &s
}

// Encode is the recording's file: each scenario's settings, by name.
func Encode(byScenario map[string][]Setting) ([]byte, error) {
	b, err := json.MarshalIndent(byScenario, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func decode() (map[string][]Setting, error) {
	var all map[string][]Setting
	d := json.NewDecoder(bytes.NewReader(recorded))
	d.DisallowUnknownFields()
	if err := d.Decode(&all); err != nil {
		return nil, fmt.Errorf("reading %s: %w", File, err)
	}
	return all, nil
}

// Names lists the scenarios the recording holds, sorted.
func Names() []string {
	all, _ := decode()
	return slices.Sorted(maps.Keys(all))
}

// Settings is the recording of one scenario, or an error saying it has
// none.
func Settings(name string) ([]Setting, error) {
	all, err := decode()
	if err != nil {
		return nil, err
	}
	s, ok := all[name]
	if !ok {
		return nil, fmt.Errorf("%s has no search of %s: record it with go test ./engine/search -run TestRecordedSearchesMatchLiveOnes -update", File, name)
	}
	return s, nil
}

// Results is the recorded search of sc under all six settings, in
// SearchAll's order, as the search returns it (without its time). A
// scenario the recording lacks, or one whose goals or moves it does not
// match, fails the test: the recording is older than the scenario.
func Results(t testing.TB, sc *scenario.Scenario) []search.Result {
	t.Helper()
	settings, err := Settings(sc.Name)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := results(sc, settings)
	if err != nil {
		t.Fatalf("%s: %v: record it again with go test ./engine/search -run TestRecordedSearchesMatchLiveOnes -update", File, err)
	}
	return rs
}

func results(sc *scenario.Scenario, settings []Setting) ([]search.Result, error) {
	goals := map[string]scenario.Goal{}
	for _, g := range sc.Goals() {
		goals[g.ID] = g
	}
	var out []search.Result
	for _, s := range settings {
		k := scenario.Knobs{Renewal: s.Renewal, Fencing: s.Fencing}
		r := search.Result{
			Scenario: sc.Name, Knobs: k, States: s.States, Moves: s.Moves,
			Runs: s.Runs, Conflict: s.Conflict, Blocked: s.Blocked, Safe: s.Safe,
		}
		var err error
		if r.ShortestConflict, err = moves(s.ShortestConflict); err != nil {
			return nil, fmt.Errorf("%s under %s, shortest conflict: %w", sc.Name, k, err)
		}
		if r.ShortestBlocked, err = moves(s.ShortestBlocked); err != nil {
			return nil, fmt.Errorf("%s under %s, shortest blocked: %w", sc.Name, k, err)
		}
		if len(s.Goals) != len(goals) {
			return nil, fmt.Errorf("%s under %s has %d goals recorded, and the scenario %d", sc.Name, k, len(s.Goals), len(goals))
		}
		for _, g := range s.Goals {
			goal, ok := goals[g.ID]
			if !ok {
				return nil, fmt.Errorf("%s has no goal %q", sc.Name, g.ID)
			}
			reach := search.GoalReach{Goal: goal, Runs: g.Runs, Par: g.Par, Cut: g.Cut}
			if reach.Moves, err = moves(g.Moves); err != nil {
				return nil, fmt.Errorf("%s under %s, goal %s: %w", sc.Name, k, g.ID, err)
			}
			r.Goals = append(r.Goals, reach)
		}
		out = append(out, r)
	}
	if len(out) != len(scenario.AllKnobs()) {
		return nil, fmt.Errorf("%s has %d settings recorded, want %d", sc.Name, len(out), len(scenario.AllKnobs()))
	}
	return out, nil
}

func moves(s *string) ([]scenario.Move, error) {
	if s == nil {
		return nil, nil
	}
	m, err := scenario.ParseMoves(*s)
	if err == nil && m == nil {
		m = []scenario.Move{} // recorded as "", not null: an empty list
	}
	return m, err
}
