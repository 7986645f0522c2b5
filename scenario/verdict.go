package scenario

import (
	"encoding/json"
	"fmt"
)

// Effect is one write the protected resource saw, accepted or refused, and
// how the second seed's contract judges it.
type Effect struct {
	Seq      int64           `json:"seq"`
	Actor    string          `json:"actor"`
	Fence    int64           `json:"fence"`
	Value    json.RawMessage `json:"value"`
	Accepted bool            `json:"accepted"`
	Reason   string          `json:"reason,omitempty"`
	// StoredFence is the resource's highest fence accepted, which the
	// write was compared against.
	StoredFence int64 `json:"stored_fence"`
	// Judgement and Why are set by Judge: the contract's word on the write
	// and the reason for it, in the reader's direction.
	Judgement Judgement `json:"judgement,omitempty"`
	Why       string    `json:"why,omitempty"`
}

// Judgement is the contract's word on one write.
type Judgement string

const (
	// JudgedOK is a write the resource handled as the contract says.
	JudgedOK Judgement = "ok"
	// JudgedConflict is a stale write that reached the resource: accepted
	// with an epoch below the highest one accepted before it.
	JudgedConflict Judgement = "conflict"
	// JudgedBlocked is a valid write that was lost: refused although its
	// epoch is at or above the highest one accepted before it. Strict
	// fencing, the unsuccessful fix, does this to the current holder.
	JudgedBlocked Judgement = "blocked"
)

// Verdicts sum up a run: conflict if any write conflicts, else blocked if
// any is blocked, else safe.
const (
	VerdictSafe     = "safe"
	VerdictConflict = "conflict"
	VerdictBlocked  = "blocked"
)

// Verdicts lists every verdict, worst first.
func Verdicts() []string { return []string{VerdictConflict, VerdictBlocked, VerdictSafe} }

// Judge applies the second seed's contract to the writes in arrival order:
// accept an epoch at or above the highest accepted so far (the resource's
// initial epoch counts as accepted). It sets each effect's Judgement and Why
// in place and returns the run's verdict. This is the one place the rule is
// written; every screen, count and file takes its verdict from here.
func Judge(initialEpoch int64, effects []Effect) string {
	high := initialEpoch
	verdict := VerdictSafe
	for i := range effects {
		e := &effects[i]
		switch {
		case e.Accepted && e.Fence < high:
			e.Judgement = JudgedConflict
			e.Why = fmt.Sprintf("fence %d < the resource's highest fence accepted %d, yet accepted: a stale write reached the resource", e.Fence, high)
			verdict = VerdictConflict
		case !e.Accepted && e.Fence >= high:
			e.Judgement = JudgedBlocked
			e.Why = fmt.Sprintf("the resource's highest fence accepted %d ≤ fence %d, yet refused: a valid write was lost", high, e.Fence)
			if verdict == VerdictSafe {
				verdict = VerdictBlocked
			}
		case e.Accepted:
			e.Judgement = JudgedOK
			e.Why = fmt.Sprintf("the resource's highest fence accepted %d ≤ fence %d: accepted, as it should be", high, e.Fence)
		default:
			e.Judgement = JudgedOK
			e.Why = fmt.Sprintf("fence %d < the resource's highest fence accepted %d: refused, as it should be", e.Fence, high)
		}
		if e.Accepted {
			high = max(high, e.Fence)
		}
	}
	return verdict
}

// Tally counts the judgements of judged effects.
type Tally struct {
	Accepted, Refused, Conflicts, Blocked int
}

// TallyOf counts effects already judged by Judge.
func TallyOf(effects []Effect) Tally {
	var t Tally
	for _, e := range effects {
		if e.Accepted {
			t.Accepted++
		} else {
			t.Refused++
		}
		switch e.Judgement {
		case JudgedConflict:
			t.Conflicts++
		case JudgedBlocked:
			t.Blocked++
		}
	}
	return t
}

// String is the lease in a person's words: "A, fence 1, lease_version 1, expires 1060".
func (l Lease) String() string {
	return fmt.Sprintf("%s, fence %d, lease_version %d, expires %d", l.Owner, l.Fence, l.LeaseVersion, l.ExpiresAt)
}
