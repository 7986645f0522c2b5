package world

import (
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// View is the state at the cursor, for rendering.
type View struct {
	Now         int64
	Pos         int
	Coordinator *scenario.Lease
	Resource    transcript.ResourceSnap
	InFlight    []transcript.Message
	Beliefs     []transcript.Belief
	Outcome     transcript.Outcome
	Knobs       scenario.Knobs
}

// Change is what a knob toggle did to the run at the cursor.
type Change struct {
	From, To scenario.Knobs
	Before   transcript.Outcome
	After    transcript.Outcome
	// Lines say what changed in words: "effects 2 → 1", "owner A → B".
	Lines []string
}
