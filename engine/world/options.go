package world

import (
	"fmt"
	"slices"
	"strings"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// Option is a move a learner may make now, with what it will do in words.
type Option struct {
	Move scenario.Move
	// Words say what the move does: "deliver hb1 — A's heartbeat sent at
	// 1055 — now, at 1071".
	Words string
	// Scripted is set when the move plays one of the scenario's events.
	Scripted bool
}

// Options lists the moves enabled at time at (a run's cursor may stand
// past its last move): deliver or drop each message in flight, move the
// clock one tick or to the next time that matters, and the scenario's own
// events not played yet. Without free, that is all (each event once): the
// move graph an exhaustive search walks. With free, play mode's extra
// moves too: each actor may acquire, send a heartbeat, write its effect
// while it believes it holds the lease, re-elect itself, pause or resume
// (the last three only in scenarios that have such moves).
func (s *State) Options(at int64, free bool) []Option {
	c := *s // listed, not made: a shallow copy at the later time will do
	c.now = at
	return c.options(free)
}

func (s *State) options(free bool) []Option {
	var out []Option
	add := func(mv scenario.Move, words string) {
		if s.check(mv) != nil || slices.ContainsFunc(out, func(o Option) bool { return o.Move.Same(mv) }) {
			return
		}
		out = append(out, Option{Move: mv, Words: words, Scripted: s.event(mv) >= 0})
	}
	now := s.now
	// Names handed out in this listing: two actors offered a heartbeat at
	// once get two names, so the menu never shows one name for two.
	taken := map[string]bool{}
	for _, m := range s.flight {
		act := scenario.ActionDeliver
		switch m.Kind {
		case transcript.KindWrite:
			act = scenario.ActionWriteDeliver
		case transcript.KindReply:
			act = scenario.ActionReply
		}
		add(scenario.Move{T: now, Actor: m.From, Action: act, Msg: m.ID},
			fmt.Sprintf("deliver %s — %s sent at %d — now, at %d", m.ID, messageWords(m), m.Sent, now))
		add(scenario.Move{T: now, Actor: m.From, Action: scenario.ActionDrop, Msg: m.ID},
			fmt.Sprintf("drop %s — the network loses %s sent at %d", m.ID, messageWords(m), m.Sent))
	}
	// The clock next: always there, so the menu keeps it near the top.
	for _, t := range s.clockStops(free) {
		add(scenario.Move{T: t, Actor: scenario.ClockActor, Action: scenario.ActionAdvance}, s.clockWords(t))
	}
	// The scenario's own events not played yet, at the current time.
	for i, ev := range s.sc.Events {
		if s.played[i] || ev.Action == scenario.ActionExpire {
			continue
		}
		mv := ev.Move()
		mv.T = now
		add(mv, s.moveWords(mv, ev.T))
	}
	if free {
		for _, a := range s.order {
			b := s.beliefs[a]
			if b.paused {
				continue
			}
			add(scenario.Move{T: now, Actor: a, Action: scenario.ActionAcquire}, s.moveWords(scenario.Move{T: now, Actor: a, Action: scenario.ActionAcquire}, -1))
			if b.lease != nil {
				mv := scenario.Move{T: now, Actor: a, Action: scenario.ActionSend, Msg: s.newMessageName(a, scenario.ActionSend, "hb", taken)}
				taken[mv.Msg] = true
				add(mv, s.moveWords(mv, -1))
			}
			if s.believes(a, now) {
				mv := scenario.Move{T: now, Actor: a, Action: scenario.ActionEffect}
				add(mv, s.moveWords(mv, -1))
			}
			if b.lease != nil && s.uses(scenario.ActionReelect) {
				mv := scenario.Move{T: now, Actor: a, Action: scenario.ActionReelect}
				add(mv, s.moveWords(mv, -1))
			}
			if s.uses(scenario.ActionPause) {
				mv := scenario.Move{T: now, Actor: a, Action: scenario.ActionPause}
				add(mv, s.moveWords(mv, -1))
			}
		}
		for _, a := range s.order {
			if s.beliefs[a].paused {
				mv := scenario.Move{T: now, Actor: a, Action: scenario.ActionResume}
				add(mv, s.moveWords(mv, -1))
			}
		}
	}
	return out
}

// uses reports whether the scenario has an event with action a.
func (s *State) uses(a scenario.Action) bool {
	return slices.ContainsFunc(s.sc.Events, func(ev scenario.Event) bool { return ev.Action == a })
}

// clockStops are the times the clock may move on to: the next time that
// matters (a scripted time, an expiry, a message's due time) and, for a
// learner, the next tick.
func (s *State) clockStops(free bool) []int64 {
	next := int64(-1)
	consider := func(t int64) {
		if t > s.now && (next < 0 || t < next) {
			next = t
		}
	}
	for i, ev := range s.sc.Events {
		if !s.played[i] {
			consider(ev.T)
		}
	}
	if s.coord != nil {
		consider(s.coord.ExpiresAt)
	}
	for _, b := range s.beliefs {
		if b.lease != nil {
			consider(b.lease.ExpiresAt)
		}
	}
	for _, m := range s.flight {
		consider(m.Due)
	}
	var out []int64
	if free && s.now+1 <= s.sc.Window.To && s.now+1 != next {
		out = append(out, s.now+1)
	}
	if next >= 0 {
		out = append(out, next)
	}
	return out
}

func (s *State) clockWords(t int64) string {
	var why []string
	for i, ev := range s.sc.Events {
		if !s.played[i] && ev.T == t {
			// "the script has A send hb2", "the script has the clock expire".
			what := ev.Actor
			if ev.Actor == scenario.ClockActor || ev.Actor == "" {
				what = "the clock"
			}
			what += " " + ev.Action.Verb()
			if ev.Heartbeat != "" {
				what += " " + ev.Heartbeat
			}
			why = append(why, "the script has "+what)
			break
		}
	}
	if s.coord != nil && s.coord.ExpiresAt == t {
		why = append(why, fmt.Sprintf("%s's lease expires", s.coord.Owner))
	}
	for _, a := range s.order {
		if b := s.beliefs[a]; b.lease != nil && b.lease.ExpiresAt == t && (s.coord == nil || *s.coord != *b.lease) {
			why = append(why, fmt.Sprintf("%s's lease runs out by its own clock", a))
		}
	}
	for _, m := range s.flight {
		if m.Due == t {
			why = append(why, fmt.Sprintf("%s is due", m.ID))
		}
	}
	held := ""
	if len(s.flight) > 0 {
		ids := make([]string, len(s.flight))
		for i, m := range s.flight {
			ids[i] = m.ID
		}
		verb := " stays in flight"
		if len(ids) > 1 {
			verb = " stay in flight"
		}
		held = "; " + strings.Join(ids, ", ") + verb
	}
	if len(why) == 0 {
		return fmt.Sprintf("advance the clock one tick, to %d%s", t, held)
	}
	return fmt.Sprintf("advance the clock to %d, when %s%s", t, strings.Join(why, " and "), held)
}

func messageWords(m transcript.Message) string {
	switch m.Kind {
	case transcript.KindWrite:
		return fmt.Sprintf("%s's write with fence %d", m.From, m.Fence)
	case transcript.KindReply:
		return fmt.Sprintf("the reply to %s's heartbeat", m.From)
	}
	return fmt.Sprintf("%s's heartbeat", m.From)
}

// moveWords says what an actor's move will do; scripted is the time the
// script has it at, -1 when it is the learner's own.
func (s *State) moveWords(mv scenario.Move, scripted int64) string {
	at := ""
	if scripted >= 0 && scripted != mv.T {
		at = fmt.Sprintf(" (scripted at %d)", scripted)
	}
	b := s.beliefs[mv.Actor]
	switch mv.Action {
	case scenario.ActionAcquire:
		return fmt.Sprintf("%s tries to acquire the lease now, at %d: it gets it if it expired%s", mv.Actor, mv.T, at)
	case scenario.ActionSend:
		if b != nil && b.lease != nil {
			return fmt.Sprintf("%s sends heartbeat %s with its cached lease (fence %d, lease_version %d)%s", mv.Actor, mv.Msg, b.lease.Fence, b.lease.LeaseVersion, at)
		}
		return fmt.Sprintf("%s sends heartbeat %s, though it holds no lease%s", mv.Actor, mv.Msg, at)
	case scenario.ActionEffect, scenario.ActionWriteSend:
		verb := "writes its effect"
		if mv.Action == scenario.ActionWriteSend {
			verb = "sends its write " + mv.Msg + " into the network"
		}
		if l, holds := s.holds(mv.Actor, mv.T); holds {
			return fmt.Sprintf("%s %s with fence %d (it believes it holds the lease until %d)%s", mv.Actor, verb, l.Fence, l.ExpiresAt, at)
		}
		return fmt.Sprintf("%s %s if it believes it holds the lease%s", mv.Actor, verb, at)
	case scenario.ActionWrite:
		return fmt.Sprintf("%s writes with fence %d%s", mv.Actor, *mv.Fence, at)
	case scenario.ActionPause:
		return fmt.Sprintf("%s pauses: it does nothing until it resumes%s", mv.Actor, at)
	case scenario.ActionResume:
		return fmt.Sprintf("%s resumes and acts on what it believed before%s", mv.Actor, at)
	case scenario.ActionRelease:
		return fmt.Sprintf("%s releases its lease%s", mv.Actor, at)
	case scenario.ActionReelect:
		return fmt.Sprintf("%s re-elects itself with River's upsert, which extends whatever row is there%s", mv.Actor, at)
	}
	return mv.String() + at
}
