// Package world is what a run knows between moves, and the rules over it:
// what each actor believes, what the network holds, which scripted events
// the log has played, what every move does to all that given the servers'
// answers, which moves are enabled, the goal predicates and the narration.
// It talks to no server: a move's SQL and HTTP write go through a Server,
// which the engine's live backend implements on PostgreSQL and the
// resource. What the engine reports of a run is world's data too (View,
// Change, SearchResult), so the renderer draws it without the engine.
package world

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// State is what a run knows between moves: the coordinator's row and the
// resource as last read back from them, and what no server knows: what
// each actor believes and what the network holds. Copy it with Clone: a
// plain copy shares the beliefs and the network.
type State struct {
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
	// offScript is set once a move was not one of the scenario's events at
	// its scripted time: from then on the narration names no scripted time
	// (a message's scripted delivery, an event's own note), as the moves
	// played decide the times. Only the narration reads it.
	offScript bool
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

// New is the state as sc starts under knobs k, with the resource as res
// (read back from the resource after its reset).
func New(sc *scenario.Scenario, k scenario.Knobs, res transcript.ResourceSnap) State {
	s := State{
		sc: sc, knobs: k, now: sc.Start(), coord: sc.Initial.Clone(), res: res,
		beliefs: map[string]*belief{}, played: make([]bool, len(sc.Events)), sent: map[string]bool{},
	}
	for _, a := range sc.Actors() {
		if a != scenario.ClockActor {
			s.actor(a)
		}
	}
	if in := sc.Initial; in != nil {
		s.actor(in.Owner).lease = in.Clone()
	}
	return s
}

// Clone is a deep copy of the state, for one kept while others move on.
func (s *State) Clone() State {
	c := *s
	c.coord = s.coord.Clone()
	c.res = s.res.Clone()
	c.order = slices.Clone(s.order)
	c.beliefs = make(map[string]*belief, len(s.beliefs))
	for a, b := range s.beliefs {
		nb := *b
		nb.lease = b.lease.Clone()
		if b.checked != nil {
			v := *b.checked
			nb.checked = &v
		}
		c.beliefs[a] = &nb
	}
	c.flight = slices.Clone(s.flight)
	c.played = slices.Clone(s.played)
	c.sent = make(map[string]bool, len(s.sent))
	for id, v := range s.sent {
		c.sent[id] = v
	}
	return c
}

// Scenario is what the state is a state of.
func (s *State) Scenario() *scenario.Scenario { return s.sc }

// Knobs are the settings the state plays under.
func (s *State) Knobs() scenario.Knobs { return s.knobs }

// Now is the time of the last move, or the scenario's start.
func (s *State) Now() int64 { return s.now }

// Coordinator is a copy of the coordinator's row as last read back; nil
// when there is none.
func (s *State) Coordinator() *scenario.Lease { return s.coord.Clone() }

// Resource is a copy of the resource as last written or reset.
func (s *State) Resource() transcript.ResourceSnap { return s.res.Clone() }

// Verdict judges the resource's effects (in place) with the one verdict
// rule and returns the run's verdict so far.
func (s *State) Verdict() string { return scenario.Judge(s.sc.Resource.Fence, s.res.Effects) }

// actor returns an actor's belief, adding the actor on first sight.
func (s *State) actor(name string) *belief {
	if b := s.beliefs[name]; b != nil {
		return b
	}
	b := &belief{}
	s.beliefs[name] = b
	s.order = append(s.order, name)
	return b
}

// holds reports whether the actor believes it holds the lease at t.
func (s *State) holds(actor string, t int64) (*scenario.Lease, bool) {
	b := s.beliefs[actor]
	if b == nil {
		return nil, false
	}
	c := b.lease
	return c, c != nil && c.Owner == actor && c.ExpiresAt > t
}

// believes reports whether the actor believes it holds the lease at t: by
// its cached lease and its own clock, or, while a check from before a pause
// is pending, by that check. A paused process stops (time does not), and
// once resumed it acts on the check without looking again.
func (s *State) believes(actor string, t int64) bool {
	if b := s.beliefs[actor]; b != nil && b.checked != nil {
		return *b.checked && b.lease != nil
	}
	_, ok := s.holds(actor, t)
	return ok
}

// Beliefs is every actor's belief at t, for a step's record.
func (s *State) Beliefs(t int64) []transcript.Belief {
	out := make([]transcript.Belief, 0, len(s.order))
	for _, a := range s.order {
		b := s.beliefs[a]
		out = append(out, transcript.Belief{Actor: a, Lease: b.lease.Clone(), Paused: b.paused, Holds: s.believes(a, t)})
	}
	return out
}

func (s *State) inFlight(id string) (transcript.Message, bool) {
	i := slices.IndexFunc(s.flight, func(m transcript.Message) bool { return m.ID == id })
	if i < 0 {
		return transcript.Message{}, false
	}
	return s.flight[i], true
}

func (s *State) removeFlight(id string) {
	s.flight = slices.DeleteFunc(s.flight, func(m transcript.Message) bool { return m.ID == id })
}

// event finds the scripted event a move plays: the first one not played
// yet with the same actor, action, message and epoch. -1 when the move is
// the learner's own.
func (s *State) event(mv scenario.Move) int { return scriptedEvent(s.sc, s.played, mv) }

// OnScript reports whether every move of log plays one of sc's events at
// its scripted time: a run the script could have made. The one rule for
// whether a run is played or scripted.
func OnScript(sc *scenario.Scenario, log []scenario.Move) bool {
	played := make([]bool, len(sc.Events))
	for _, mv := range log {
		i := scriptedEvent(sc, played, mv)
		if i < 0 || sc.Events[i].T != mv.T {
			return false
		}
		played[i] = true
	}
	return true
}

// TimesPlayed are sc's named times at which log played one of sc's own
// events at its scripted time; nil when none.
func TimesPlayed(sc *scenario.Scenario, log []scenario.Move) map[string]int64 {
	played := make([]bool, len(sc.Events))
	at := map[int64]bool{}
	for _, mv := range log {
		if i := scriptedEvent(sc, played, mv); i >= 0 {
			played[i] = true
			if sc.Events[i].T == mv.T {
				at[mv.T] = true
			}
		}
	}
	var out map[string]int64
	for name, t := range sc.Times {
		if at[t] {
			if out == nil {
				out = map[string]int64{}
			}
			out[name] = t
		}
	}
	return out
}

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
func (s *State) value(ev int, mv scenario.Move) json.RawMessage {
	if ev >= 0 && len(s.sc.Events[ev].Value) > 0 {
		return s.sc.Events[ev].Value
	}
	b, _ := json.Marshal(fmt.Sprintf("%s's effect at %d", mv.Actor, mv.T))
	return b
}

// due is when a scripted message is delivered: the time of the first
// scripted delivery of it, or -1 when the script leaves it to the network.
func (s *State) due(id string, kinds ...scenario.Action) int64 {
	for _, ev := range s.sc.Events {
		if ev.Heartbeat == id && slices.Contains(kinds, ev.Action) {
			return ev.T
		}
	}
	return -1
}

// replyLate reports whether the script delivers a heartbeat's reply later
// than the heartbeat itself.
func (s *State) replyLate(id string) bool { return s.due(id, scenario.ActionReply) >= 0 }

// newMessageName picks a name for a message the learner sends: the
// actor's next scripted one if there is one, else the first free prefix+N;
// never one already taken.
func (s *State) newMessageName(actor string, act scenario.Action, prefix string, taken map[string]bool) string {
	for i, ev := range s.sc.Events {
		if !s.played[i] && ev.Actor == actor && ev.Action == act && !taken[ev.Heartbeat] {
			if _, used := s.sent[ev.Heartbeat]; !used {
				return ev.Heartbeat
			}
		}
	}
	for n := 1; ; n++ {
		id := prefix + strconv.Itoa(n)
		if _, used := s.sent[id]; !used && !s.scripted(id) && !taken[id] {
			return id
		}
	}
}

func (s *State) scripted(id string) bool {
	return slices.ContainsFunc(s.sc.Events, func(ev scenario.Event) bool { return ev.Heartbeat == id })
}

// flightAt lists the messages in flight at t, each marked stale when the
// epoch it carries is no longer current at the coordinator.
func (s *State) flightAt(t int64) []transcript.Message {
	return MarkStale(s.flight, s.coord, t)
}

// MarkStale is flight with each message marked stale when, at t, the
// epoch it carries is no longer current in the coordinator's row coord.
func MarkStale(flight []transcript.Message, coord *scenario.Lease, t int64) []transcript.Message {
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

// AppendKey appends the state's identity to dst: everything that decides
// what later moves do and how the run is judged, so two states with the
// same key are one. Left out: when a message was sent and the effects one
// by one, which only the narration and the effects' list show; the verdict
// needs only the highest epoch accepted and whether a write conflicted or
// was blocked.
func (s *State) AppendKey(dst []byte) []byte {
	num := func(n int64) { dst = strconv.AppendInt(dst, n, 10); dst = append(dst, ' ') }
	lease := func(l *scenario.Lease) {
		if l == nil {
			dst = append(dst, "- "...)
			return
		}
		dst = strconv.AppendQuote(dst, l.Owner)
		num(l.Fence)
		num(l.LeaseVersion)
		num(l.ExpiresAt)
	}
	num(s.now)
	for _, p := range s.played {
		if p {
			dst = append(dst, '1')
		} else {
			dst = append(dst, '0')
		}
	}
	dst = append(dst, "|sent "...)
	ids := make([]string, 0, len(s.sent))
	for id := range s.sent {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		dst = fmt.Appendf(dst, "%q=%t ", id, s.sent[id])
	}
	dst = append(dst, "|flight "...)
	flight := slices.Clone(s.flight)
	slices.SortFunc(flight, func(a, b transcript.Message) int { return strings.Compare(a.ID, b.ID) })
	for _, m := range flight {
		dst = fmt.Appendf(dst, "%q %q %q %d %d %d %s ", m.ID, m.From, m.Kind, m.Due, m.Fence, m.Rows, m.Value)
		lease(&m.Snapshot)
	}
	dst = append(dst, "|coord "...)
	lease(s.coord)
	dst = append(dst, "|res "...)
	num(s.res.Fence)
	dst = append(dst, s.res.Value...)
	// What scenario.Judge carries from one write to the next: the highest
	// epoch accepted so far, the initial one counting as accepted.
	high := s.sc.Resource.Fence
	for _, e := range s.res.Effects {
		if e.Accepted {
			high = max(high, e.Fence)
		}
	}
	t := scenario.TallyOf(s.res.Effects)
	dst = fmt.Appendf(dst, " high %d conflict %t blocked %t|beliefs ", high, t.Conflicts > 0, t.Blocked > 0)
	for _, a := range s.order {
		bl := s.beliefs[a]
		dst = strconv.AppendQuote(dst, a)
		lease(bl.lease)
		dst = fmt.Appendf(dst, "%t ", bl.paused)
		if bl.checked == nil {
			dst = append(dst, "- "...)
		} else {
			dst = fmt.Appendf(dst, "%t ", *bl.checked)
		}
	}
	return dst
}
