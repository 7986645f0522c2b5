// Package lanes is the race as a Lamport diagram, in data: a lane per
// actor and one for the clock, each move in its actor's lane with a mark
// that belongs to that move alone, and the messages in flight from send to
// arrival (or loss). It knows nothing of terminals or colour: the screen
// draws it in cells, and an export may draw the same model as a picture.
package lanes

import (
	"slices"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// Mark is how one move went, from its own step alone.
type Mark int

const (
	// Pending is a move not played yet.
	Pending Mark = iota
	// Done ran, and the server or the resource said yes.
	Done
	// Refused got zero rows from the coordinator or a refusal from the
	// resource, as the contract says it should.
	Refused
	// NoCall made no call: the actor knew better, or held nothing.
	NoCall
	// Blocked is a valid write the resource refused: fencing failed a
	// valid holder.
	Blocked
	// Stale is a write the resource accepted although a newer fence had
	// been accepted before it: the danger the race is about.
	Stale
	// Regressed is a move after which the lease row carries an older fence
	// than before it: a stale heartbeat resurrected its sender.
	Regressed
)

// Marks lists every mark, in the order a legend gives them.
func Marks() []Mark {
	return []Mark{Done, Refused, NoCall, Blocked, Stale, Regressed, Pending}
}

// Glyph is the mark's colour-free sign, one cell wide.
func (m Mark) Glyph() string {
	switch m {
	case Done:
		return "✓"
	case Refused:
		return "✗"
	case NoCall:
		return "∅"
	case Blocked:
		return "⊘"
	case Stale:
		return "!"
	case Regressed:
		return "↓"
	}
	return "·"
}

// Words say what the mark means, for a legend.
func (m Mark) Words() string {
	switch m {
	case Done:
		return "done"
	case Refused:
		return "refused"
	case NoCall:
		return "made no call"
	case Blocked:
		return "blocked: a valid write refused"
	case Stale:
		return "stale write accepted"
	case Regressed:
		return "lease row regressed"
	}
	return "still to come"
}

// Danger is true for the marks the race is about: they must stand out.
func (m Mark) Danger() bool { return m == Stale || m == Regressed || m == Blocked }

// Letter is the lower-case letter a move's kind gets in its lane, and what
// it means; the lane, not the letter, says whose move it is.
func Letter(a scenario.Action) (string, string) {
	switch a {
	case scenario.ActionSend:
		return "s", "heartbeat sent"
	case scenario.ActionExpire:
		return "x", "expiry"
	case scenario.ActionAcquire:
		return "a", "acquire"
	case scenario.ActionDeliver:
		return "d", "heartbeat arrives"
	case scenario.ActionReply:
		return "y", "reply arrives"
	case scenario.ActionEffect:
		return "e", "effect"
	case scenario.ActionWrite:
		return "w", "write"
	case scenario.ActionWriteSend:
		return "p", "write sent"
	case scenario.ActionWriteDeliver:
		return "l", "write lands"
	case scenario.ActionPause:
		return "z", "pause"
	case scenario.ActionResume:
		return "u", "resume"
	case scenario.ActionRelease:
		return "r", "release"
	case scenario.ActionReelect:
		return "v", "re-election"
	case scenario.ActionDrop:
		return "o", "message lost"
	case scenario.ActionAdvance:
		return "t", "clock moves on"
	}
	return "?", string(a)
}

// Lane is one row of the diagram: an actor, or the clock.
type Lane struct {
	Name  string
	Clock bool
}

// Move is one move of the log in its lane.
type Move struct {
	// Index is the move's place in the log.
	Index  int
	T      int64
	Lane   int
	Actor  string
	Action scenario.Action
	Msg    string
	Mark   Mark
	// Why is the contract's word on the write the move made, if it made
	// one ("" otherwise).
	Why string
}

// Message is a message on the network: sent by a move in its sender's
// lane, ended by the move that delivers or drops it.
type Message struct {
	ID   string
	Kind string // transcript.KindHeartbeat, KindWrite or KindReply
	From string
	Lane int
	// Send is the index (in Diagram.Moves) of the move that sent it; End
	// the move that delivered or dropped it, -1 while nothing in the log
	// ends it.
	Send, End int
	// Due is when the network delivers it as the run stands now (-1:
	// never), known once it is sent; 0 before.
	Due int64
	// Lost: dropped, or in flight with no delivery ever.
	Lost bool
	// Sent is true once its send move has been played; Arrived once its
	// end has.
	Sent, Arrived bool
}

// Time is one instant of the log with the moves at it, in log order.
type Time struct {
	T     int64
	Moves []int
}

// Diagram is the whole picture at the run's cursor.
type Diagram struct {
	Lanes    []Lane
	Moves    []Move
	Messages []Message
	Times    []Time
	// From and End bound the times shown; Now is the cursor, Pos the
	// number of moves played.
	From, End, Now int64
	Pos            int
}

// Input is what the diagram is built from: the run's log and the steps
// played so far, as a screen's snapshot holds them.
type Input struct {
	// Actors orders the lanes (the scenario's actors); actors of the log
	// it does not name follow, and the clock comes last.
	Actors []string
	Log    []scenario.Move
	Steps  []transcript.Step
	// Initial is the lease row before the first step (nil: none) and
	// InitialEpoch the resource's fence before it.
	Initial      *scenario.Lease
	InitialEpoch int64
	// InFlight is the network at the cursor.
	InFlight  []transcript.Message
	From, End int64
	Now       int64
}

// Build draws the diagram from in.
func Build(in Input) Diagram {
	d := Diagram{From: in.From, End: in.End, Now: in.Now, Pos: min(len(in.Steps), len(in.Log))}
	lane := map[string]int{}
	add := func(name string, clock bool) {
		if _, ok := lane[name]; !ok {
			lane[name] = len(d.Lanes)
			d.Lanes = append(d.Lanes, Lane{Name: name, Clock: clock})
		}
	}
	for _, a := range in.Actors {
		if a != scenario.ClockActor && a != "" {
			add(a, false)
		}
	}
	hasClock := false
	for _, mv := range in.Log {
		if mv.Actor == scenario.ClockActor || mv.Actor == "" {
			hasClock = true
			continue
		}
		add(mv.Actor, false)
	}
	if hasClock {
		add(scenario.ClockActor, true)
	}
	laneOf := func(actor string) int {
		if actor == "" {
			actor = scenario.ClockActor
		}
		return lane[actor]
	}

	marks, whys := judge(in)
	for i, mv := range in.Log {
		m := Move{Index: i, T: mv.T, Lane: laneOf(mv.Actor), Actor: mv.Actor, Action: mv.Action, Msg: mv.Msg}
		if i < d.Pos {
			m.Mark, m.Why = marks[i], whys[i]
		}
		d.Moves = append(d.Moves, m)
		d.From, d.End = min(d.From, mv.T), max(d.End, mv.T)
		if n := len(d.Times); n > 0 && d.Times[n-1].T == mv.T {
			d.Times[n-1].Moves = append(d.Times[n-1].Moves, i)
		} else {
			d.Times = append(d.Times, Time{T: mv.T, Moves: []int{i}})
		}
	}
	d.From, d.End = min(d.From, d.Now), max(d.End, d.Now)
	d.Messages = messages(in, d)
	return d
}

// judge marks each played step from its own result and what it did to the
// lease row and the resource.
func judge(in Input) ([]Mark, []string) {
	n := min(len(in.Steps), len(in.Log))
	marks, whys := make([]Mark, n), make([]string, n)
	prevLease := in.Initial
	prevEffects := 0
	for i := range n {
		st := in.Steps[i]
		// The contract's word on the write this step made: judge the
		// resource's effects as they stood after it.
		var made *scenario.Effect
		if len(st.Resource.Effects) > prevEffects {
			effects := slices.Clone(st.Resource.Effects)
			scenario.Judge(in.InitialEpoch, effects)
			made = &effects[len(effects)-1]
			whys[i] = made.Why
		}
		prevEffects = len(st.Resource.Effects)
		switch {
		case st.Result == transcript.ResultNoCall:
			marks[i] = NoCall
		case made != nil && made.Judgement == scenario.JudgedBlocked:
			marks[i] = Blocked
		case st.Result == transcript.ResultRefused || (made != nil && !made.Accepted):
			marks[i] = Refused
		case made != nil && made.Judgement == scenario.JudgedConflict:
			marks[i] = Stale
		case prevLease != nil && st.Coordinator != nil && st.Coordinator.Fence < prevLease.Fence:
			marks[i] = Regressed
		default:
			marks[i] = Done
		}
		prevLease = st.Coordinator
	}
	return marks, whys
}

// opens and closes say which message kind a move sends or ends.
func opens(a scenario.Action) (string, bool) {
	switch a {
	case scenario.ActionSend:
		return transcript.KindHeartbeat, true
	case scenario.ActionWriteSend:
		return transcript.KindWrite, true
	}
	return "", false
}

func closes(a scenario.Action) (string, bool) {
	switch a {
	case scenario.ActionDeliver:
		return transcript.KindHeartbeat, true
	case scenario.ActionWriteDeliver:
		return transcript.KindWrite, true
	case scenario.ActionReply:
		return transcript.KindReply, true
	}
	return "", false
}

// messages follows every message of the log from the move that sent it to
// the one that ended it; the steps played say when each is due and
// whether a renewal's reply travels back on its own.
func messages(in Input, d Diagram) []Message {
	var out []Message
	open := func(id string) int {
		for j := len(out) - 1; j >= 0; j-- {
			if out[j].ID == id && out[j].End < 0 && !out[j].Lost {
				return j
			}
		}
		return -1
	}
	find := func(id, kind string) int {
		for j := len(out) - 1; j >= 0; j-- {
			if out[j].ID == id && out[j].Kind == kind && out[j].End < 0 && !out[j].Lost {
				return j
			}
		}
		return -1
	}
	for i, mv := range in.Log {
		played := i < d.Pos
		if kind, ok := opens(mv.Action); ok && mv.Msg != "" {
			out = append(out, Message{ID: mv.Msg, Kind: kind, From: mv.Actor, Lane: d.Moves[i].Lane, Send: i, End: -1, Sent: played})
			continue
		}
		if kind, ok := closes(mv.Action); ok {
			if j := find(mv.Msg, kind); j >= 0 {
				out[j].End, out[j].Arrived = i, played
			}
			if mv.Action == scenario.ActionDeliver && replies(in, i, mv.Msg) {
				// The renewal answered later than it ran: its reply
				// travels back from this move.
				out = append(out, Message{ID: mv.Msg, Kind: transcript.KindReply, From: mv.Actor, Lane: d.Moves[i].Lane, Send: i, End: -1, Sent: played})
			}
			continue
		}
		if mv.Action == scenario.ActionDrop {
			if j := open(mv.Msg); j >= 0 {
				out[j].End, out[j].Lost, out[j].Arrived = i, true, played
			}
		}
	}
	// The network at the cursor says when each message still out is due,
	// and which will never arrive.
	for j := range out {
		m := &out[j]
		if !m.Sent {
			continue
		}
		for _, f := range flightAt(in, m) {
			if f.ID == m.ID && f.Kind == m.Kind {
				m.Due = f.Due
				if f.Due < 0 && !m.Arrived {
					m.Lost = true
				}
			}
		}
	}
	return out
}

// flightAt is the network as it stood after the message's last played
// move: the cursor's while it is out, the step before its end otherwise.
func flightAt(in Input, m *Message) []transcript.Message {
	if m.Arrived && m.End > 0 && m.End-1 < len(in.Steps) {
		return in.Steps[m.End-1].InFlight
	}
	return in.InFlight
}

// replies is true when the deliver move at i leaves a reply in flight
// (played) or a later move of the log receives one (not played yet).
func replies(in Input, i int, msg string) bool {
	if i < len(in.Steps) {
		for _, f := range in.Steps[i].InFlight {
			if f.ID == msg && f.Kind == transcript.KindReply {
				return true
			}
		}
		return false
	}
	for _, mv := range in.Log[i+1:] {
		if mv.Action == scenario.ActionReply && mv.Msg == msg {
			return true
		}
	}
	return false
}

// MarksUsed lists the marks of the diagram's moves, in legend order.
func (d Diagram) MarksUsed() []Mark {
	var out []Mark
	for _, m := range Marks() {
		if slices.ContainsFunc(d.Moves, func(mv Move) bool { return mv.Mark == m }) {
			out = append(out, m)
		}
	}
	return out
}

// ActionsUsed lists the diagram's kinds of move, in order of first use.
func (d Diagram) ActionsUsed() []scenario.Action {
	var out []scenario.Action
	for _, mv := range d.Moves {
		if !slices.Contains(out, mv.Action) {
			out = append(out, mv.Action)
		}
	}
	return out
}

// Danger lists the moves whose marks are dangers, in log order.
func (d Diagram) Danger() []Move {
	var out []Move
	for _, mv := range d.Moves {
		if mv.Mark.Danger() {
			out = append(out, mv)
		}
	}
	return out
}
