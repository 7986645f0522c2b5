package htmlpage

// TO BE REPLACED by the terminal timeline's lane model (issue 20): until
// that model is on main, this one adapter derives the lanes, marks and
// messages from the transcript's own fields, so the SVG has something to
// draw. It is the only place the page decides what a move's mark is.

import (
	"slices"
	"strings"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// markKind is how a move went, as its mark shows it.
type markKind string

const (
	markDone      markKind = "done"
	markRefused   markKind = "refused"
	markNoCall    markKind = "nocall"
	markBlocked   markKind = "blocked"
	markStale     markKind = "stale"
	markRegressed markKind = "regressed"
)

// markKinds lists every mark in the legend's order.
func markKinds() []markKind {
	return []markKind{markDone, markRefused, markNoCall, markBlocked, markStale, markRegressed}
}

// glyph and words: every mark reads without colour.
func (k markKind) glyph() string {
	switch k {
	case markRefused:
		return "✗"
	case markNoCall:
		return "∅"
	case markBlocked:
		return "⊘"
	case markStale:
		return "⚠"
	case markRegressed:
		return "↺"
	}
	return "✓"
}

func (k markKind) words() string {
	switch k {
	case markRefused:
		return "refused (zero rows, or the resource answered 409)"
	case markNoCall:
		return "made no call"
	case markBlocked:
		return "blocked: a valid write refused"
	case markStale:
		return "accepted but stale: the resource took a fence below the highest fence it had accepted"
	case markRegressed:
		return "row regressed: the coordinator's fence went back"
	}
	return "done"
}

// danger is a mark that must stand out.
func (k markKind) danger() bool { return k == markStale || k == markRegressed }

// diagram is the run as lanes: a lane per actor and one for the clock, a
// mark per move in its actor's lane, a column per move (moves at one time
// sit side by side, in order), and every message from send to arrival.
type diagram struct {
	Lanes    []string
	Marks    []mark
	Messages []message
	// Times is each column's logical time.
	Times []int64
}

type mark struct {
	Step  int // index into the transcript's steps, and the mark's column
	Lane  int
	Kind  markKind
	Label string // the move in words: "deliver hb1", "write 11"
}

// message is a heartbeat, delayed write or reply in flight. To is the
// column of its arrival, or of the move that lost it; -1 when the run
// ended with it still travelling.
type message struct {
	ID       string
	Lane     int // the sender's
	From, To int
	ToLane   int
	Lost     bool
	// StaleAt is the first column after which it was stale; -1 never.
	StaleAt int
}

// laneModel builds the diagram from a transcript.
func laneModel(tr transcript.Transcript) diagram {
	var d diagram
	laneOf := map[string]int{}
	add := func(a string) {
		if _, ok := laneOf[a]; !ok && a != "" && a != scenario.ClockActor {
			laneOf[a] = len(d.Lanes)
			d.Lanes = append(d.Lanes, a)
		}
	}
	if c := tr.Initial.Coordinator; c != nil {
		add(c.Owner)
	}
	for _, s := range tr.Steps {
		add(s.Actor)
		for _, m := range s.InFlight {
			add(m.From)
		}
	}
	laneOf[scenario.ClockActor] = len(d.Lanes)
	d.Lanes = append(d.Lanes, scenario.ClockActor)

	prevCoord := tr.Initial.Coordinator
	prevEffects := 0
	var prevFlight []transcript.Message
	open := map[string]int{} // message id → index in d.Messages
	for i, s := range tr.Steps {
		d.Times = append(d.Times, s.T)
		d.Marks = append(d.Marks, mark{Step: i, Lane: laneOf[s.Actor], Kind: kindOf(s, prevCoord, prevEffects), Label: moveLabel(s)})
		for _, m := range s.InFlight {
			if slices.ContainsFunc(prevFlight, func(p transcript.Message) bool { return p.ID == m.ID && p.From == m.From }) {
				if j, ok := open[m.ID]; ok && m.Stale && d.Messages[j].StaleAt < 0 {
					d.Messages[j].StaleAt = i
				}
				continue
			}
			msg := message{ID: m.ID, Lane: laneOf[m.From], From: i, To: -1, StaleAt: -1, Lost: m.Due < 0}
			if m.Stale {
				msg.StaleAt = i
			}
			open[m.ID] = len(d.Messages)
			d.Messages = append(d.Messages, msg)
		}
		for _, p := range prevFlight {
			if slices.ContainsFunc(s.InFlight, func(m transcript.Message) bool { return m.ID == p.ID && m.From == p.From }) {
				continue
			}
			if j, ok := open[p.ID]; ok {
				d.Messages[j].To, d.Messages[j].ToLane = i, laneOf[s.Actor]
				d.Messages[j].Lost = s.Action == scenario.ActionDrop
				delete(open, p.ID)
			}
		}
		prevCoord, prevEffects, prevFlight = s.Coordinator, len(s.Resource.Effects), s.InFlight
	}
	return d
}

// kindOf is a step's mark: danger first, then how the step went.
func kindOf(s transcript.Step, prevCoord *scenario.Lease, prevEffects int) markKind {
	if n := len(s.Resource.Effects); n > prevEffects {
		switch s.Resource.Effects[n-1].Judgement {
		case scenario.JudgedConflict:
			return markStale
		case scenario.JudgedBlocked:
			return markBlocked
		}
	}
	if prevCoord != nil && s.Coordinator != nil && s.Coordinator.Fence < prevCoord.Fence {
		return markRegressed
	}
	switch s.Result {
	case transcript.ResultRefused:
		return markRefused
	case transcript.ResultNoCall:
		return markNoCall
	}
	return markDone
}

// moveLabel is the move in a few words: its text form without actor and
// time ("deliver hb1", "write 11").
func moveLabel(s transcript.Step) string {
	m := s.Move().String()
	m = strings.TrimPrefix(m, s.Actor+":")
	if i := strings.LastIndexByte(m, '@'); i >= 0 {
		m = m[:i]
	}
	return m
}
