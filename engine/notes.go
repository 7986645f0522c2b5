package engine

import (
	"fmt"
	"strings"

	"github.com/leaserace/leaserace/scenario"
)

// The notes are the narration: one line on what happened and why it
// matters, written from the step's real results.

func leaseWords(l scenario.Lease) string {
	return fmt.Sprintf("%s, fence %d, v%d, expires %d", l.Owner, l.Fence, l.LeaseVersion, l.ExpiresAt)
}

func noteSend(m Message) string {
	if m.Due < 0 {
		return fmt.Sprintf("%s sends heartbeat %s carrying its cached lease (%s); the network loses it.", m.From, m.ID, leaseWords(m.Snapshot))
	}
	if m.Due == m.Sent {
		return fmt.Sprintf("%s sends heartbeat %s carrying its cached lease (%s); it arrives at once.", m.From, m.ID, leaseWords(m.Snapshot))
	}
	return fmt.Sprintf("%s sends heartbeat %s carrying its cached lease (%s); the network holds it until %d.", m.From, m.ID, leaseWords(m.Snapshot), m.Due)
}

func noteExpire(cur *scenario.Lease, t int64, flight []Message) string {
	if cur == nil {
		return "There is no lease row, so nothing expires."
	}
	if cur.ExpiresAt > t {
		return fmt.Sprintf("%s's lease is live until %d: nothing has expired yet.", cur.Owner, cur.ExpiresAt)
	}
	var stale []string
	for _, m := range flight {
		if m.Stale {
			stale = append(stale, m.ID)
		}
	}
	s := fmt.Sprintf("%s's lease (fence %d) expired at %d; anyone may take it over now.", cur.Owner, cur.Fence, cur.ExpiresAt)
	if len(stale) > 0 {
		s += fmt.Sprintf(" Heartbeat %s is still in flight with an epoch that is no longer current.", strings.Join(stale, ", "))
	}
	return s
}

func noteAcquire(actor string, rows int64, prev, cur *scenario.Lease) string {
	if rows == 1 && cur != nil {
		if prev != nil && prev.Owner != actor {
			return fmt.Sprintf("%s takes over the expired lease: fence %d → %d, expires %d. Anything still carrying fence %d is now stale.", actor, prev.Fence, cur.Fence, cur.ExpiresAt, prev.Fence)
		}
		return fmt.Sprintf("%s acquires the lease: fence %d, expires %d.", actor, cur.Fence, cur.ExpiresAt)
	}
	if cur != nil {
		return fmt.Sprintf("Zero rows: %s cannot take the lease, %s holds it until %d.", actor, cur.Owner, cur.ExpiresAt)
	}
	return fmt.Sprintf("Zero rows: there is no lease row for %s to take.", actor)
}

func noteDeliver(actor string, mode scenario.Renewal, rows int64, stale string, prev, cur *scenario.Lease, m Message) string {
	switch {
	case rows == 0:
		why := "its epoch is not current"
		if stale != "" {
			why = stale
		}
		return fmt.Sprintf("Zero rows: compare-and-renew refused %s's heartbeat (%s). That is the safety result: %s knows it lost the lease and will not act.", actor, why, actor)
	case stale != "" && prev != nil && cur != nil && (prev.Owner != cur.Owner || prev.Fence != cur.Fence):
		return fmt.Sprintf("One row: the stale heartbeat blindly overwrote the lease, owner %s → %s, fence %d → %d (regressed). %s believes it still holds the lease.", prev.Owner, cur.Owner, prev.Fence, cur.Fence, actor)
	case stale != "":
		return fmt.Sprintf("One row: the blind heartbeat renewed an epoch that was no longer current (%s); %s believes it holds the lease until %d.", stale, actor, cur.ExpiresAt)
	case prev != nil && cur != nil:
		return fmt.Sprintf("One row: %s's current heartbeat renews its lease, expires %d → %d, lease_version %d → %d, fence %d kept (%s).", actor, prev.ExpiresAt, cur.ExpiresAt, prev.LeaseVersion, cur.LeaseVersion, cur.Fence, mode.Describe())
	}
	return fmt.Sprintf("%s's heartbeat updated %d row.", actor, rows)
}

func noteSkip(actor string, cache *scenario.Lease, t int64) string {
	if cache == nil {
		return fmt.Sprintf("%s makes no call: it knows it does not hold the lease.", actor)
	}
	return fmt.Sprintf("%s makes no call: its lease expired at %d by its own clock.", actor, cache.ExpiresAt)
}

func noteWrite(actor string, epoch int64, wr WriteResult, before int64, conflict bool, f scenario.Fencing, direct bool, effects int) string {
	what := fmt.Sprintf("%s's write with fence %d", actor, epoch)
	if direct {
		what = fmt.Sprintf("%s's write with epoch %d", actor, epoch)
	}
	switch {
	case !wr.Accepted && f == scenario.FencingStrict && epoch == before:
		return fmt.Sprintf("The resource refused %s: strict fencing wants an epoch above %d, so the current holder is blocked (the unsuccessful fix).", what, before)
	case !wr.Accepted:
		return fmt.Sprintf("The resource refused %s: it is below the highest epoch seen (%d). Fencing held.", what, before)
	case conflict:
		return fmt.Sprintf("The resource accepted %s after a newer epoch: %d effects / CONFLICT.", what, effects)
	}
	return fmt.Sprintf("The resource accepted %s (stored epoch %d → %d).", what, before, wr.Epoch)
}

// diffOutcomes says in words what a knob toggle changed.
func diffOutcomes(a, b Outcome) []string {
	var out []string
	if a.Effects != b.Effects {
		out = append(out, fmt.Sprintf("effects %d → %d", a.Effects, b.Effects))
	}
	if a.Verdict != b.Verdict {
		out = append(out, fmt.Sprintf("verdict %s → %s", a.Verdict, b.Verdict))
	}
	ca, cb := a.Coordinator, b.Coordinator
	switch {
	case ca != nil && cb != nil:
		if ca.Owner != cb.Owner {
			out = append(out, fmt.Sprintf("owner %s → %s", ca.Owner, cb.Owner))
		}
		if ca.Fence != cb.Fence {
			out = append(out, fmt.Sprintf("fence %d → %d", ca.Fence, cb.Fence))
		}
		if ca.ExpiresAt != cb.ExpiresAt {
			out = append(out, fmt.Sprintf("expires %d → %d", ca.ExpiresAt, cb.ExpiresAt))
		}
	case ca == nil && cb != nil:
		out = append(out, "lease row appears")
	case ca != nil && cb == nil:
		out = append(out, "lease row gone")
	}
	if a.Resource.Epoch != b.Resource.Epoch {
		out = append(out, fmt.Sprintf("resource epoch %d → %d", a.Resource.Epoch, b.Resource.Epoch))
	}
	if len(out) == 0 {
		out = append(out, "no change at this step")
	}
	return out
}
