package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// world is what a run knows between moves: the coordinator's row and the
// resource as last read back from them, and what no server knows: what
// each actor believes and what the network holds.
type world struct {
	sc    *scenario.Scenario
	knobs scenario.Knobs
	now   int64
	coord *scenario.Lease
	res   transcript.ResourceSnap
	// order lists the actors as they first appear; beliefs holds each one's.
	order   []string
	beliefs map[string]*belief
	flight  []transcript.Message
	// played marks the scripted events the log has played so far.
	played []bool
	// sent names every message sent so far; false marks one whose sender
	// held nothing, so nothing travelled.
	sent map[string]bool
}

// belief is one actor's view of the lease.
type belief struct {
	lease  *scenario.Lease
	paused bool
	// checked is what the actor concluded when it last checked its lease
	// before a pause; after resuming it acts on that without looking again
	// (the check-then-act gap). nil when it has nothing pending.
	checked *bool
}

func newWorld(sc *scenario.Scenario, k scenario.Knobs, res transcript.ResourceSnap) world {
	w := world{
		sc: sc, knobs: k, now: sc.Start(), coord: sc.Initial.Clone(), res: res,
		beliefs: map[string]*belief{}, played: make([]bool, len(sc.Events)), sent: map[string]bool{},
	}
	for _, a := range sc.Actors() {
		if a != scenario.ClockActor {
			w.actor(a)
		}
	}
	if in := sc.Initial; in != nil {
		w.actor(in.Owner).lease = in.Clone()
	}
	return w
}

// actor returns an actor's belief, adding the actor on first sight.
func (w *world) actor(name string) *belief {
	if b := w.beliefs[name]; b != nil {
		return b
	}
	b := &belief{}
	w.beliefs[name] = b
	w.order = append(w.order, name)
	return b
}

// holds reports whether the actor believes it holds the lease at t.
func (w *world) holds(actor string, t int64) (*scenario.Lease, bool) {
	b := w.beliefs[actor]
	if b == nil {
		return nil, false
	}
	c := b.lease
	return c, c != nil && c.Owner == actor && c.ExpiresAt > t
}

// believes reports whether the actor believes it holds the lease at t: by
// its cached lease and its own clock, or, while a check from before a pause
// is pending, by that check. A paused process's clock does not move, and
// once resumed it acts on the check without looking again.
func (w *world) believes(actor string, t int64) bool {
	if b := w.beliefs[actor]; b != nil && b.checked != nil {
		return *b.checked && b.lease != nil
	}
	_, ok := w.holds(actor, t)
	return ok
}

// NotEnabledError is a move that cannot be made where it was asked for: a
// delivery of a message not in flight, a step by a paused actor, a move
// back in time. Why says which, for a person.
type NotEnabledError struct {
	Move scenario.Move
	Why  string
}

func (e *NotEnabledError) Error() string {
	return fmt.Sprintf("move %s is not possible here: %s", e.Move, e.Why)
}

// check says whether mv may be made now, and why not.
func (w *world) check(mv scenario.Move) error {
	no := func(format string, args ...any) error {
		return &NotEnabledError{Move: mv, Why: fmt.Sprintf(format, args...)}
	}
	if mv.T < w.now {
		return no("it is already t=%d, and time does not run backwards", w.now)
	}
	if mv.Actor == scenario.ClockActor {
		if mv.Action != scenario.ActionExpire && mv.Action != scenario.ActionAdvance {
			return no("the clock can only expire or advance")
		}
		return nil
	}
	b := w.beliefs[mv.Actor]
	paused := b != nil && b.paused
	switch {
	case mv.Action == scenario.ActionResume && !paused:
		return no("%s is not paused", mv.Actor)
	case mv.Action == scenario.ActionPause && paused:
		return no("%s is paused already", mv.Actor)
	case paused && mv.Action != scenario.ActionResume:
		return no("%s is paused: it does nothing until %s:resume", mv.Actor, mv.Actor)
	}
	switch mv.Action {
	case scenario.ActionSend, scenario.ActionWriteSend:
		if _, dup := w.sent[mv.Msg]; dup {
			return no("a message named %s was sent already; give each message its own name", mv.Msg)
		}
	case scenario.ActionDeliver, scenario.ActionWriteDeliver, scenario.ActionReply, scenario.ActionDrop:
		m, ok := w.inFlight(mv.Msg)
		if !ok {
			carried, sent := w.sent[mv.Msg]
			switch {
			case !sent:
				return no("%s was never sent", mv.Msg)
			case !carried && mv.Action == scenario.ActionDeliver:
				return nil // its sender held nothing: nothing arrives
			}
			return no("%s is not in flight", mv.Msg)
		}
		if m.From != mv.Actor {
			return no("%s was sent by %s, so the move is %s's", mv.Msg, m.From, m.From)
		}
		want := map[scenario.Action]string{
			scenario.ActionDeliver: transcript.KindHeartbeat, scenario.ActionWriteDeliver: transcript.KindWrite,
			scenario.ActionReply: transcript.KindReply,
		}
		if k, ok := want[mv.Action]; ok && m.Kind != k {
			return no("%s is %s, not %s", mv.Msg, kindWords(m.Kind), kindWords(k))
		}
	case scenario.ActionWrite:
		if mv.Epoch == nil {
			return no("a write needs its epoch")
		}
	}
	return nil
}

func kindWords(kind string) string {
	switch kind {
	case transcript.KindWrite:
		return "a delayed write"
	case transcript.KindReply:
		return "a renewal's reply"
	}
	return "a heartbeat"
}

func (w *world) inFlight(id string) (transcript.Message, bool) {
	i := slices.IndexFunc(w.flight, func(m transcript.Message) bool { return m.ID == id })
	if i < 0 {
		return transcript.Message{}, false
	}
	return w.flight[i], true
}

func (w *world) removeFlight(id string) {
	w.flight = slices.DeleteFunc(w.flight, func(m transcript.Message) bool { return m.ID == id })
}

// event finds the scripted event a move plays: the first one not played
// yet with the same actor, action, message and epoch. -1 when the move is
// the learner's own.
func (w *world) event(mv scenario.Move) int { return scriptedEvent(w.sc, w.played, mv) }

// scriptedEvent is the one rule for which scripted event a move plays:
// the first not played yet with the same actor, action, message and epoch,
// at whatever time. -1 for none.
func scriptedEvent(sc *scenario.Scenario, played []bool, mv scenario.Move) int {
	for i, ev := range sc.Events {
		if i < len(played) && played[i] {
			continue
		}
		em := ev.Move()
		em.T = mv.T
		if em.Same(mv) {
			return i
		}
	}
	return -1
}

// AskFor is the question the scenario asks before mv, when mv follows the
// moves before it: the ask: of the scripted event mv plays, or nil.
func AskFor(sc *scenario.Scenario, before []scenario.Move, mv scenario.Move) *scenario.Ask {
	played := make([]bool, len(sc.Events))
	for _, m := range before {
		if i := scriptedEvent(sc, played, m); i >= 0 {
			played[i] = true
		}
	}
	if i := scriptedEvent(sc, played, mv); i >= 0 {
		return sc.Events[i].Ask
	}
	return nil
}

// value is what an effect or write carries: its scripted event's value, or
// one made up for a move the script does not have.
func (w *world) value(ev int, mv scenario.Move) json.RawMessage {
	if ev >= 0 && len(w.sc.Events[ev].Value) > 0 {
		return w.sc.Events[ev].Value
	}
	b, _ := json.Marshal(fmt.Sprintf("%s's effect at %d", mv.Actor, mv.T))
	return b
}

// due is when a scripted message is delivered: the time of the first
// scripted delivery of it, or -1 when the script leaves it to the network.
func (w *world) due(id string, kinds ...scenario.Action) int64 {
	for _, ev := range w.sc.Events {
		if ev.Heartbeat == id && slices.Contains(kinds, ev.Action) {
			return ev.T
		}
	}
	return -1
}

// replyLate reports whether the script delivers a heartbeat's reply later
// than the heartbeat itself.
func (w *world) replyLate(id string) bool { return w.due(id, scenario.ActionReply) >= 0 }

// newMessageName picks a name for a message the learner sends: the
// actor's next scripted one if there is one, else the first free prefix+N.
func (w *world) newMessageName(actor string, act scenario.Action, prefix string) string {
	for i, ev := range w.sc.Events {
		if !w.played[i] && ev.Actor == actor && ev.Action == act {
			if _, used := w.sent[ev.Heartbeat]; !used {
				return ev.Heartbeat
			}
		}
	}
	for n := 1; ; n++ {
		id := prefix + strconv.Itoa(n)
		if _, used := w.sent[id]; !used && !w.scripted(id) {
			return id
		}
	}
}

func (w *world) scripted(id string) bool {
	return slices.ContainsFunc(w.sc.Events, func(ev scenario.Event) bool { return ev.Heartbeat == id })
}

// flightAt lists the messages in flight at t, each marked stale when the
// epoch it carries is no longer current at the coordinator.
func (w *world) flightAt(t int64) []transcript.Message {
	return markStale(w.flight, w.coord, t)
}

func markStale(flight []transcript.Message, coord *scenario.Lease, t int64) []transcript.Message {
	out := make([]transcript.Message, 0, len(flight))
	for _, m := range flight {
		m.StaleReason = staleReason(m, coord, t)
		m.Stale = m.StaleReason != ""
		out = append(out, m)
	}
	return out
}

func staleReason(m transcript.Message, cur *scenario.Lease, t int64) string {
	if m.Kind == transcript.KindReply {
		return "" // a reply reports what happened; it claims nothing
	}
	s := m.Snapshot
	switch {
	case cur == nil:
		return "the lease row is gone"
	case cur.Owner != s.Owner || cur.Fence != s.Fence:
		return fmt.Sprintf("%s now holds fence %d", cur.Owner, cur.Fence)
	case m.Kind == transcript.KindWrite:
		// A write claims only its epoch: a renewal does not make it stale.
		return ""
	case cur.LeaseVersion != s.LeaseVersion:
		return fmt.Sprintf("lease_version moved on to %d", cur.LeaseVersion)
	case cur.ExpiresAt <= t:
		return fmt.Sprintf("the lease expired at %d", cur.ExpiresAt)
	}
	return ""
}

// beliefsAt is every actor's belief at t, for the step's record.
func (w *world) beliefsAt(t int64) []transcript.Belief {
	out := make([]transcript.Belief, 0, len(w.order))
	for _, a := range w.order {
		b := w.beliefs[a]
		out = append(out, transcript.Belief{Actor: a, Lease: b.lease.Clone(), Paused: b.paused, Holds: w.believes(a, t)})
	}
	return out
}

// judge judges the resource's effects in place and returns the verdict.
func (w *world) judge() string { return scenario.Judge(w.sc.Resource.Epoch, w.res.Effects) }
