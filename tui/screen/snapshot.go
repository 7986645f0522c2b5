package screen

import (
	"encoding/json"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
)

// Snapshot is everything a frame shows of the run, copied out of it by the
// command that changed it, so drawing never calls into the engine.
type Snapshot struct {
	Scenario *scenario.Scenario
	View     world.View
	// Log is the run's moves, played or not; Steps are those played.
	Log        []scenario.Move
	Steps      []transcript.Step
	Start, End int64
	// Live is false for a replay.
	Live bool
	// Options are the moves enabled now (play mode), Goals the scenario's
	// goals and whether the steps reached them.
	Options []world.Option
	Goals   []world.GoalStatus
	// Rec is the recording on show when the run is a replay.
	Rec *transcript.Recording

	// id is the snapshot's identity for shared frames (Shared), worked
	// out once; nil for a snapshot not taken by SnapshotOf.
	id *snapID
}

// Run is what a snapshot is copied from: an *engine.Run, named by its
// methods so that the renderer builds without the engine.
type Run interface {
	Scenario() *scenario.Scenario
	View() world.View
	Log() []scenario.Move
	Steps() []transcript.Step
	Start() int64
	End() int64
	Live() bool
	Options() []world.Option
	Recording() (transcript.Recording, bool)
}

// SnapshotOf copies out of r everything a frame shows. It only reads what
// r holds in memory (no statement runs), so the command that changed r
// takes it, and drawing never calls into the engine.
func SnapshotOf(r Run) Snapshot {
	s := Snapshot{Scenario: r.Scenario(), View: r.View(), Log: r.Log(), Steps: r.Steps(), Start: r.Start(), End: r.End(), Live: r.Live(), id: new(snapID)}
	s.Options = r.Options()
	s.Goals = world.GoalsOf(s.Scenario.Goals(), s.Scenario.Initial, s.Steps)
	if rec, ok := r.Recording(); ok {
		s.Rec = &rec
	}
	return s
}

// Last is the step that produced the current state, nil before the first.
func (s Snapshot) Last() *transcript.Step {
	if len(s.Steps) == 0 {
		return nil
	}
	return &s.Steps[len(s.Steps)-1]
}

// prevCoordinator is the leases row before the last step ran.
func (s Snapshot) prevCoordinator() *scenario.Lease {
	if n := len(s.Steps); n >= 2 {
		return s.Steps[n-2].Coordinator
	}
	return s.Scenario.Initial
}

// prevResource is the resource's epoch and value before the last step ran.
// highestAccepted is the resource's highest fence accepted now and
// before the last step: its initial fence and every accepted write's.
func (s Snapshot) highestAccepted() (now, before int64) {
	high := func(effects []scenario.Effect) int64 {
		h := s.Scenario.Resource.Fence
		for _, e := range effects {
			if e.Accepted {
				h = max(h, e.Fence)
			}
		}
		return h
	}
	now, before = high(s.View.Resource.Effects), s.Scenario.Resource.Fence
	if n := len(s.Steps); n >= 2 {
		before = high(s.Steps[n-2].Resource.Effects)
	}
	return now, before
}

func (s Snapshot) prevResource() (int64, json.RawMessage) {
	if n := len(s.Steps); n >= 2 {
		return s.Steps[n-2].Resource.Fence, s.Steps[n-2].Resource.Value
	}
	return s.Scenario.Resource.Fence, s.Scenario.Resource.Value
}
