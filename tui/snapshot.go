package tui

import (
	"encoding/json"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
)

// snapshot is everything a frame shows, copied out of the run by the
// command that changed it, so View never calls into the engine.
type snapshot struct {
	sc   *scenario.Scenario
	view engine.View
	// log is the run's moves, played or not; steps are those played.
	log        []scenario.Move
	steps      []transcript.Step
	start, end int64
	// live is false for a replay.
	live bool
	// options are the moves enabled now (play mode), goals the scenario's
	// goals and whether the steps reached them.
	options []world.Option
	goals   []world.GoalStatus
	// rec is the recording on show when the run is a replay.
	rec *engine.Recording
}

func takeSnapshot(r *engine.Run) snapshot {
	s := snapshot{sc: r.Scenario(), view: r.View(), log: r.Log(), steps: r.Steps(), start: r.Start(), end: r.End(), live: r.Live()}
	s.options = r.Options()
	s.goals = world.GoalsOf(s.sc.Goals(), s.sc.Initial, s.steps)
	if rec, ok := r.Recording(); ok {
		s.rec = &rec
	}
	return s
}

// last is the step that produced the current state, nil before the first.
func (s snapshot) last() *transcript.Step {
	if len(s.steps) == 0 {
		return nil
	}
	return &s.steps[len(s.steps)-1]
}

// prevCoordinator is the leases row before the last step ran.
func (s snapshot) prevCoordinator() *scenario.Lease {
	if n := len(s.steps); n >= 2 {
		return s.steps[n-2].Coordinator
	}
	return s.sc.Initial
}

// prevResource is the resource's epoch and value before the last step ran.
func (s snapshot) prevResource() (int64, json.RawMessage) {
	if n := len(s.steps); n >= 2 {
		return s.steps[n-2].Resource.Epoch, s.steps[n-2].Resource.Value
	}
	return s.sc.Resource.Epoch, s.sc.Resource.Value
}
