package world

import (
	"fmt"
	"slices"
	"strings"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// The notes are the narration: one line on what happened and why it
// matters, written from the step's real results.

// noteSend and notePost name the message's scripted delivery only while
// the run is on script; a played run's moves decide when it arrives.
func noteSend(m transcript.Message, played bool) string {
	switch {
	case m.Due < 0 || played:
		return fmt.Sprintf("%s sends heartbeat %s carrying its cached lease (%s); the network holds it.", m.From, m.ID, m.Snapshot)
	case m.Due == m.Sent:
		return fmt.Sprintf("%s sends heartbeat %s carrying its cached lease (%s); it arrives at once.", m.From, m.ID, m.Snapshot)
	}
	return fmt.Sprintf("%s sends heartbeat %s carrying its cached lease (%s); the network holds it until %d.", m.From, m.ID, m.Snapshot, m.Due)
}

func notePost(m transcript.Message, played bool) string {
	until := "the network holds it"
	if m.Due >= 0 && !played {
		until = fmt.Sprintf("the network holds it until %d", m.Due)
	}
	return fmt.Sprintf("%s believes it holds the lease and sends its write %s with fence %d; %s. Nothing reaches the resource yet.", m.From, m.ID, m.Fence, until)
}

func noteDrop(m transcript.Message) string {
	return fmt.Sprintf("The network loses %s (%s sent it at %d): it never arrives.", m.ID, m.From, m.Sent)
}

func noteClock(act scenario.Action, cur *scenario.Lease, t int64, flight []transcript.Message) string {
	lead := ""
	if act == scenario.ActionAdvance {
		lead = fmt.Sprintf("The clock moves on to %d. ", t)
	}
	if cur == nil {
		return lead + "There is no lease row, so nothing expires."
	}
	if cur.ExpiresAt > t {
		return lead + fmt.Sprintf("%s's lease is live until %d: nothing has expired yet.", cur.Owner, cur.ExpiresAt)
	}
	var stale []string
	for _, m := range flight {
		if m.Stale {
			stale = append(stale, m.ID)
		}
	}
	s := lead + fmt.Sprintf("%s's lease (fence %d) expired at %d; anyone may take it over now.", cur.Owner, cur.Fence, cur.ExpiresAt)
	if len(stale) > 0 {
		s += fmt.Sprintf(" Heartbeat %s is still in flight with a lease that is no longer current.", strings.Join(stale, ", "))
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

func noteDeliver(actor string, mode scenario.Renewal, rows int64, stale string, prev, cur *scenario.Lease, m transcript.Message) string {
	switch {
	case rows == 0:
		why := "its lease is not current"
		if stale != "" {
			why = stale
		}
		return fmt.Sprintf("Zero rows: compare-and-renew refused %s's heartbeat (%s). That is the safety result: %s knows it lost the lease and will not act.", actor, why, actor)
	case stale != "" && prev != nil && cur != nil && (prev.Owner != cur.Owner || prev.Fence != cur.Fence):
		s := fmt.Sprintf("One row: the stale heartbeat blindly overwrote the lease, owner %s → %s, fence %d → %d (regressed). %s believes it still holds the lease.", prev.Owner, cur.Owner, prev.Fence, cur.Fence, actor)
		return s + coincidence(m.Snapshot, prev, cur)
	case stale != "":
		return fmt.Sprintf("One row: the blind heartbeat renewed a lease that was no longer current (%s); %s believes it holds the lease until %d.", stale, actor, cur.ExpiresAt) + coincidence(m.Snapshot, prev, cur)
	case prev != nil && cur != nil:
		return fmt.Sprintf("One row: %s's current heartbeat renews its lease, expires %d → %d, lease_version %d → %d, fence %d kept (%s).", actor, prev.ExpiresAt, cur.ExpiresAt, prev.LeaseVersion, cur.LeaseVersion, cur.Fence, mode.Describe())
	}
	return fmt.Sprintf("%s's heartbeat updated %d row.", actor, rows)
}

// coincidence says when a blind write left a value that only happens to
// equal the one it replaced: the screen then shows no change where the row
// was in fact rolled back.
func coincidence(snap scenario.Lease, prev, cur *scenario.Lease) string {
	if prev == nil || cur == nil || cur.LeaseVersion != prev.LeaseVersion {
		return ""
	}
	return fmt.Sprintf(" lease_version %d matches %s's only by coincidence: the blind write computed %d + 1 = %d from %s's snapshot. It hides that the row was rolled back.",
		cur.LeaseVersion, prev.Owner, snap.LeaseVersion, cur.LeaseVersion, snap.Owner)
}

func noteDeliverLate(actor string, mode scenario.Renewal, rows int64, stale string, prev, cur *scenario.Lease, m transcript.Message, due int64) string {
	slow := slowWords(actor, due)
	switch {
	case rows == 0:
		why := "its lease is not current"
		if stale != "" {
			why = stale
		}
		return fmt.Sprintf("Zero rows: compare-and-renew refused %s's heartbeat (%s).", actor, why) + slow
	case stale != "" && prev != nil && cur != nil && (prev.Owner != cur.Owner || prev.Fence != cur.Fence):
		return fmt.Sprintf("One row, committed: the stale heartbeat blindly overwrote the lease, owner %s → %s, fence %d → %d (regressed), expires %d → %d.", prev.Owner, cur.Owner, prev.Fence, cur.Fence, prev.ExpiresAt, cur.ExpiresAt) +
			coincidence(m.Snapshot, prev, cur) + slow
	case stale != "" && prev != nil && cur != nil:
		return fmt.Sprintf("One row, committed: the blind heartbeat renewed a lease that was no longer current (%s), expires %d → %d.", stale, prev.ExpiresAt, cur.ExpiresAt) +
			coincidence(m.Snapshot, prev, cur) + slow
	case prev != nil && cur != nil:
		return fmt.Sprintf("One row, committed: %s's heartbeat renews its lease, expires %d → %d, lease_version %d → %d (%s).", actor, prev.ExpiresAt, cur.ExpiresAt, prev.LeaseVersion, cur.LeaseVersion, mode.Describe()) + slow
	}
	return fmt.Sprintf("%s's heartbeat reached the coordinator: %s, committed.", actor, transcript.RowsWords(rows)) + slow
}

// slowWords says that a renewal's reply comes late: at its scripted due
// time, or later (-1) when the moves decide.
func slowWords(actor string, due int64) string {
	when := "later"
	if due >= 0 {
		when = fmt.Sprintf("at %d", due)
	}
	return fmt.Sprintf(" The reply is slow: %s hears of it only %s, and until then acts on its old belief.", actor, when)
}

// Renarrate rewords, in the steps of a run whose whole log left the
// script, what the narration said while the run was still on script about
// a message's scripted delivery, when the moves then delivered it at
// another time or not at all: the narration of a played run names only
// the times its moves used. Live play cannot know the later moves when it
// narrates a send, so a transcript is made of the whole log through this.
func Renarrate(sc *scenario.Scenario, steps []transcript.Step) {
	played := make([]bool, len(sc.Events))
	for i := range steps {
		st := &steps[i]
		ev := scriptedEvent(sc, played, st.Move())
		if ev < 0 || sc.Events[ev].T != st.T {
			return // from here on the narration left the script itself
		}
		played[ev] = true
		j := slices.IndexFunc(st.InFlight, func(m transcript.Message) bool { return m.ID == st.Heartbeat })
		if j < 0 {
			continue
		}
		m := st.InFlight[j]
		if m.Due < 0 || keptDue(steps[i+1:], m) {
			continue
		}
		var was, now string
		switch {
		case st.Action == scenario.ActionSend && m.Kind == transcript.KindHeartbeat:
			was, now = noteSend(m, false), noteSend(m, true)
		case st.Action == scenario.ActionWriteSend && m.Kind == transcript.KindWrite:
			was, now = notePost(m, false), notePost(m, true)
		case st.Action == scenario.ActionDeliver && m.Kind == transcript.KindReply:
			was, now = slowWords(st.Actor, m.Due), slowWords(st.Actor, -1)
		default:
			continue
		}
		st.Note = strings.Replace(st.Note, was, now, 1)
	}
}

// keptDue reports whether a later step delivers m at its scripted due time.
func keptDue(later []transcript.Step, m transcript.Message) bool {
	want := map[string]scenario.Action{transcript.KindHeartbeat: scenario.ActionDeliver, transcript.KindWrite: scenario.ActionWriteDeliver, transcript.KindReply: scenario.ActionReply}[m.Kind]
	for _, s := range later {
		if s.Heartbeat == m.ID && (s.Action == want || s.Action == scenario.ActionDrop) {
			return s.Action == want && s.T == m.Due
		}
	}
	return false
}

func noteReply(actor string, m transcript.Message, before *scenario.Lease, t int64) string {
	if m.Rows == 1 && m.Snapshot.Owner == actor {
		s := fmt.Sprintf("The reply reaches %s at %d: its renewal took one row; it now believes it holds the lease until %d.", actor, t, m.Snapshot.ExpiresAt)
		if before != nil && before.ExpiresAt <= m.Sent {
			s += fmt.Sprintf(" Between %d and %d it believed its lease had expired at %d.", before.ExpiresAt, t, before.ExpiresAt)
		}
		return s
	}
	return fmt.Sprintf("The reply reaches %s at %d: zero rows. It knows it lost the lease.", actor, t)
}

func notePause(actor string, lease *scenario.Lease, holds bool, t int64) string {
	if holds {
		return fmt.Sprintf("%s checks its lease (fence %d, valid until %d), finds it holds it, and pauses (a garbage-collection stop, a swapped-out process): the process stops (time does not) and does nothing until it resumes.", actor, lease.Fence, lease.ExpiresAt)
	}
	return fmt.Sprintf("%s pauses at %d: it does nothing until it resumes.", actor, t)
}

func noteResume(actor string, lease *scenario.Lease, checked bool, t int64) string {
	if checked && lease != nil {
		s := fmt.Sprintf("%s resumes at %d and carries on from where it stopped: its check said it holds the lease with fence %d, and it does not look again.", actor, t, lease.Fence)
		if lease.ExpiresAt <= t {
			s += fmt.Sprintf(" That lease expired at %d.", lease.ExpiresAt)
		}
		return s
	}
	return fmt.Sprintf("%s resumes at %d.", actor, t)
}

func noteRelease(actor string, rows int64, mine scenario.Lease, prev *scenario.Lease, t int64) string {
	if rows == 1 {
		return fmt.Sprintf("%s releases its lease (fence %d): it expires now, at %d, so anyone may take it over.", actor, mine.Fence, t)
	}
	if prev != nil && (prev.Owner != actor || prev.Fence != mine.Fence) {
		return fmt.Sprintf("Zero rows: %s tries to release fence %d, but %s holds fence %d now. Its release changes nothing.", actor, mine.Fence, prev.Owner, prev.Fence)
	}
	return fmt.Sprintf("Zero rows: %s's lease had expired already; there is nothing to release.", actor)
}

// noteReelect narrates River's re-election; ownerBelieves is whether the
// row's owner believes it holds the lease after it.
func noteReelect(actor string, rows int64, mine scenario.Lease, prev, cur *scenario.Lease, t int64, ownerBelieves bool) string {
	switch {
	case rows == 0 || cur == nil:
		return fmt.Sprintf("Zero rows: %s's re-election changed nothing; it knows it no longer leads.", actor)
	case prev == nil:
		return fmt.Sprintf("No lease row was there, so the upsert inserted one: %s leads with fence %d until %d.", actor, cur.Fence, cur.ExpiresAt)
	case prev.Owner != actor:
		s := fmt.Sprintf("One row, but the row is still %s's: ON CONFLICT found %s's lease, and the condition EXCLUDED.owner = '%s' compares the owner of the row %s tried to insert, %s, with %s: always true. It extended %s's lease, expires %d → %d (owner %s and fence %d kept), and told %s one row. %s believes it still leads, with fence %d, until %d",
			cur.Owner, cur.Owner, actor, actor, actor, actor, cur.Owner, prev.ExpiresAt, cur.ExpiresAt, cur.Owner, cur.Fence, actor, actor, mine.Fence, mine.ExpiresAt)
		if ownerBelieves {
			return s + fmt.Sprintf("; %s believes it leads too.", cur.Owner)
		}
		return s + "."
	case prev.ExpiresAt <= t:
		return fmt.Sprintf("One row: %s's re-election extended its own lease, which had expired at %d: expires %d → %d. The statement matches any row, expired or not.", actor, prev.ExpiresAt, prev.ExpiresAt, cur.ExpiresAt)
	}
	return fmt.Sprintf("One row: %s's re-election extends its own lease, expires %d → %d.", actor, prev.ExpiresAt, cur.ExpiresAt)
}

func noteSkip(actor string, cache *scenario.Lease, t int64) string {
	if cache == nil {
		return fmt.Sprintf("%s makes no call: it knows it does not hold the lease.", actor)
	}
	return fmt.Sprintf("%s makes no call: its lease expired at %d by its own clock.", actor, cache.ExpiresAt)
}

// noteWrite narrates a write from the resource's answer and the
// contract's judgement of it; the fencing check reads in the reader's
// direction, the resource's highest fence accepted first.
func noteWrite(actor string, epoch int64, wr Written, before int64, e scenario.Effect, f scenario.Fencing, kind noteKind, effects int) string {
	what := fmt.Sprintf("%s's write with fence %d", actor, epoch)
	switch kind {
	case noteDirect:
		what = fmt.Sprintf("%s's write with fence %d", actor, epoch)
	case noteLanded:
		what = fmt.Sprintf("%s's delayed write with fence %d", actor, epoch)
	}
	switch {
	case e.Judgement == scenario.JudgedBlocked:
		return fmt.Sprintf("The resource refused %s: %s. Blocked: %s's valid write was lost, which is what strict fencing, the unsuccessful fix, does.", what, predicate(f, wr.Effect.StoredFence, epoch, false), actor)
	case !wr.Call.Accepted:
		return fmt.Sprintf("The resource refused %s: %s, below the resource's highest fence accepted. Fencing refused the stale write.", what, predicate(f, wr.Effect.StoredFence, epoch, false))
	case e.Judgement == scenario.JudgedConflict:
		return fmt.Sprintf("The resource accepted %s after a newer fence (%s): %d effects / CONFLICT.", what, predicate(f, before, epoch, true), effects)
	}
	return fmt.Sprintf("The resource accepted %s (%s; stored fence %d → %d).", what, predicate(f, before, epoch, true), before, wr.Fence)
}

// predicate says the fencing check in the reader's direction, stored
// fence first: "monotonic: the resource's highest fence accepted 2 ≤
// fence 2: accepted". Under strict and monotonic fencing the stored fence
// is the highest accepted: it never goes down.
func predicate(f scenario.Fencing, stored, epoch int64, accepted bool) string {
	op := map[scenario.Fencing]string{scenario.FencingStrict: "<", scenario.FencingMonotonic: "≤"}[f]
	switch {
	case op == "":
		if accepted {
			return "fencing off: every write is accepted"
		}
		return "fencing off, yet refused"
	case accepted:
		return fmt.Sprintf("%s: the resource's highest fence accepted %d %s fence %d: accepted", f, stored, op, epoch)
	}
	return fmt.Sprintf("%s wants the resource's highest fence accepted %s the write's fence, and %d %s %d is false: refused", f, op, stored, op, epoch)
}
