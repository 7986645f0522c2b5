package world

import (
	"slices"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// GoalStatus is one goal and whether the steps so far reached it.
type GoalStatus struct {
	Goal    scenario.Goal
	Reached bool
	// Moves is how many moves it took: the step after which it first held.
	Moves int
}

// GoalsOf says, for each goal, whether the steps reach it and after how
// many moves. initial is the coordinator row before the first step. The
// one place the goal predicates are decided.
func GoalsOf(goals []scenario.Goal, initial *scenario.Lease, steps []transcript.Step) []GoalStatus {
	out := make([]GoalStatus, len(goals))
	for i, g := range goals {
		out[i].Goal = g
		if n := firstReaching(g.When, initial, steps); n > 0 {
			out[i].Reached, out[i].Moves = true, n
		}
	}
	return out
}

// firstReaching is the 1-based index of the first step after which p
// holds, 0 when none.
func firstReaching(p scenario.Predicate, initial *scenario.Lease, steps []transcript.Step) int {
	prev := initial
	var flight []transcript.Message
	for i, s := range steps {
		if holdsAfter(p, s, prev, flight) {
			return i + 1
		}
		prev, flight = s.Coordinator, s.InFlight
	}
	return 0
}

// Reached reports whether goal predicate p holds after step st, made from
// this state.
func (s *State) Reached(p scenario.Predicate, st transcript.Step) bool {
	return holdsAfter(p, st, s.coord, s.flight)
}

// holdsAfter decides p for one step, given the row and the messages in
// flight just before it.
func holdsAfter(p scenario.Predicate, s transcript.Step, prev *scenario.Lease, flight []transcript.Message) bool {
	switch p {
	case scenario.GoalConflict:
		return slices.ContainsFunc(s.Resource.Effects, func(e scenario.Effect) bool { return e.Judgement == scenario.JudgedConflict })
	case scenario.GoalBlocked:
		return slices.ContainsFunc(s.Resource.Effects, func(e scenario.Effect) bool { return e.Judgement == scenario.JudgedBlocked })
	case scenario.GoalTwoHolders:
		n := 0
		for _, b := range s.Beliefs {
			if b.Holds {
				n++
			}
		}
		return n >= 2
	case scenario.GoalResurrected:
		return prev != nil && s.Coordinator != nil && s.Coordinator.Fence < prev.Fence
	case scenario.GoalStaleRenewal, scenario.GoalZeroRows:
		if s.Action != scenario.ActionDeliver || s.SQL == "" {
			return false
		}
		if p == scenario.GoalZeroRows {
			return s.Rows == 0
		}
		i := slices.IndexFunc(flight, func(m transcript.Message) bool { return m.ID == s.Heartbeat })
		return s.Rows == 1 && i >= 0 && staleReason(flight[i], prev, s.T) != ""
	}
	return false
}

// Fact is what a step's real result says about a question's subject: the
// server's tag, the step's result, the verdict after it, the row's owner,
// or whether the resource accepted the write. The right answer to a
// predict-then-reveal question is the choice that equals it.
func Fact(about scenario.About, s transcript.Step, initialEpoch int64) string {
	switch about {
	case scenario.AboutTag:
		return s.Tag
	case scenario.AboutResult:
		return s.Result
	case scenario.AboutVerdict:
		return transcript.OutcomeOf(s.Coordinator, s.Resource.Clone(), initialEpoch).Verdict
	case scenario.AboutOwner:
		if s.Coordinator == nil {
			return ""
		}
		return s.Coordinator.Owner
	case scenario.AboutAccepted:
		if s.Call != nil && s.Call.Accepted {
			return scenario.AcceptedYes
		}
		return scenario.AcceptedNo
	}
	return ""
}

// GoalRecords is, for each of sc's goals, how the steps played under k
// went for it: reached or not, after how many moves, and the moves that
// reached it in their text form. Par is the search's to add.
func GoalRecords(sc *scenario.Scenario, k scenario.Knobs, steps []transcript.Step) []transcript.GoalRecord {
	var out []transcript.GoalRecord
	for _, g := range GoalsOf(sc.Goals(), sc.Initial, steps) {
		r := transcript.GoalRecord{ID: g.Goal.ID, Text: g.Goal.Text, When: string(g.Goal.When), Knobs: k, Reached: g.Reached}
		if g.Reached {
			r.Moves = g.Moves
			r.Path = transcript.MovesOf(steps[:g.Moves])
		}
		out = append(out, r)
	}
	return out
}
