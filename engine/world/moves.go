package world

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// Statement names one of the coordinator's statements; the Server holds
// their text.
type Statement int

// The coordinator's statements a move may run.
const (
	// StmtRead reads the lease row, and nothing else.
	StmtRead Statement = iota
	// StmtAcquire takes the row if it expired: $1 lease, $2 actor, $3 now, $4 TTL.
	StmtAcquire
	// StmtRenewBlind and StmtRenewCompare renew from a heartbeat's
	// snapshot: $1 lease, $2 owner, $3 fence, $4 lease_version, $5 now, $6 TTL.
	StmtRenewBlind
	StmtRenewCompare
	// StmtRelease expires the actor's own epoch now: $1 lease, $2 owner, $3 fence, $4 now.
	StmtRelease
	// StmtReelect is River's re-election upsert from before
	// riverqueue/river#199: $1 lease, $2 actor, $3 fence, $4 lease_version, $5 now, $6 TTL.
	StmtReelect
)

// Ran is a statement as the server ran it, for the step's record: its
// text, its arguments, the server's command tag and the rows it changed.
type Ran struct {
	SQL  string
	Args []any
	Tag  string
	Rows int64
}

// Written is the resource's answer to a write.
type Written struct {
	// Ran is the resource's fencing statement.
	Ran
	// Call is the request as it went, with the resource's answer.
	Call transcript.Call
	// Fence and Value are what the resource stores after the write, and
	// Effect the write as the resource recorded it.
	Fence  int64
	Value  json.RawMessage
	Effect scenario.Effect
}

// Server is where a move's real work happens: the coordinator's
// statements on PostgreSQL and the writes to the protected resource. The
// rules here decide what to ask and what the answers mean.
type Server interface {
	// Coordinate runs stmt with args for actor, then reads the lease row
	// back (nil: there is none). The first argument of every statement is
	// the lease's name.
	Coordinate(ctx context.Context, actor string, stmt Statement, args []any) (Ran, *scenario.Lease, error)
	// Write sends actor's write of value with epoch to the resource.
	Write(ctx context.Context, actor string, epoch int64, value json.RawMessage) (Written, error)
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
func (s *State) check(mv scenario.Move) error {
	no := func(format string, args ...any) error {
		return &NotEnabledError{Move: mv, Why: fmt.Sprintf(format, args...)}
	}
	if mv.T < s.now {
		return no("it is already t=%d, and time does not run backwards", s.now)
	}
	if mv.Actor == scenario.ClockActor {
		if mv.Action != scenario.ActionExpire && mv.Action != scenario.ActionAdvance {
			return no("the clock can only expire or advance")
		}
		return nil
	}
	b := s.beliefs[mv.Actor]
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
		if _, dup := s.sent[mv.Msg]; dup {
			return no("a message named %s was sent already; give each message its own name", mv.Msg)
		}
	case scenario.ActionDeliver, scenario.ActionWriteDeliver, scenario.ActionReply, scenario.ActionDrop:
		m, ok := s.inFlight(mv.Msg)
		if !ok {
			carried, sent := s.sent[mv.Msg]
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
		if mv.Fence == nil {
			return no("a write needs its fence")
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

// Apply makes move mv from this state and returns its step: it asks srv
// for what only the servers can answer (the coordinator's row after a
// statement, the resource's answer to a write) and changes what the run
// knows by the answers. A move that is not possible here fails with
// *NotEnabledError and changes nothing.
func (s *State) Apply(ctx context.Context, srv Server, mv scenario.Move) (transcript.Step, error) {
	st := transcript.Step{T: mv.T, Actor: mv.Actor, Action: mv.Action, Heartbeat: mv.Msg, Fence: mv.Fence, Args: []any{}, Result: transcript.ResultDone}
	if err := s.check(mv); err != nil {
		return st, err
	}
	ev := s.event(mv)
	if ev < 0 || s.sc.Events[ev].T != mv.T {
		s.offScript = true
	}
	prev := s.coord.Clone()
	var err error
	switch mv.Action {
	case scenario.ActionSend:
		s.send(mv, ev, &st)
	case scenario.ActionExpire, scenario.ActionAdvance:
		err = s.coordinate(ctx, srv, mv.Actor, &st, StmtRead, s.sc.Lease)
		if err == nil {
			st.Note = noteClock(mv.Action, s.coord, mv.T, s.flightAt(mv.T))
		}
	case scenario.ActionAcquire:
		err = s.coordinate(ctx, srv, mv.Actor, &st, StmtAcquire, s.sc.Lease, mv.Actor, mv.T, s.sc.TTL)
		if err == nil {
			if st.Rows == 1 {
				s.actor(mv.Actor).lease = s.coord.Clone()
			} else {
				st.Result = transcript.ResultRefused
			}
			st.Note = noteAcquire(mv.Actor, st.Rows, prev, s.coord)
		}
	case scenario.ActionDeliver:
		err = s.deliver(ctx, srv, mv, &st, prev)
	case scenario.ActionReply:
		s.reply(mv, &st)
	case scenario.ActionDrop:
		m, _ := s.inFlight(mv.Msg)
		s.removeFlight(mv.Msg)
		st.Result = transcript.ResultNoCall
		st.Note = noteDrop(m)
	case scenario.ActionEffect:
		err = s.effect(ctx, srv, mv, ev, &st)
	case scenario.ActionWrite:
		err = s.write(ctx, srv, mv.Actor, *mv.Fence, s.value(ev, mv), &st, noteDirect)
	case scenario.ActionWriteSend:
		s.post(mv, ev, &st)
	case scenario.ActionWriteDeliver:
		m, _ := s.inFlight(mv.Msg)
		s.removeFlight(mv.Msg)
		err = s.write(ctx, srv, mv.Actor, m.Fence, m.Value, &st, noteLanded)
	case scenario.ActionPause:
		b := s.actor(mv.Actor)
		_, holds := s.holds(mv.Actor, mv.T)
		b.paused, b.checked = true, &holds
		st.Result = transcript.ResultNoCall
		st.Note = notePause(mv.Actor, b.lease, holds, mv.T)
	case scenario.ActionResume:
		b := s.actor(mv.Actor)
		b.paused = false
		st.Result = transcript.ResultNoCall
		st.Note = noteResume(mv.Actor, b.lease, b.checked != nil && *b.checked, mv.T)
	case scenario.ActionRelease:
		err = s.release(ctx, srv, mv, &st, prev)
	case scenario.ActionReelect:
		err = s.reelect(ctx, srv, mv, &st, prev)
	default:
		err = fmt.Errorf("leaserace cannot play %s moves yet", mv.Action)
	}
	if err != nil {
		return st, err
	}
	if ev >= 0 {
		s.played[ev] = true
		// An event's own note speaks of the script's times and order.
		if n := s.sc.Events[ev].Note; n != "" && !s.offScript {
			st.Note += " " + n
		}
	}
	s.now = mv.T
	st.Coordinator = s.coord.Clone()
	st.Resource = s.res.Clone()
	st.InFlight = s.flightAt(mv.T)
	st.Beliefs = s.Beliefs(mv.T)
	return st, nil
}

// coordinate runs one coordinator statement through srv and takes the
// row it reads back as the coordinator's.
func (s *State) coordinate(ctx context.Context, srv Server, actor string, st *transcript.Step, stmt Statement, args ...any) error {
	ran, row, err := srv.Coordinate(ctx, actor, stmt, args)
	if err != nil {
		return err
	}
	s.coord = row
	st.SQL, st.Args, st.Tag, st.Rows = ran.SQL, ran.Args, ran.Tag, ran.Rows
	return nil
}

func (s *State) send(mv scenario.Move, ev int, st *transcript.Step) {
	snap := s.actor(mv.Actor).lease
	if ev >= 0 && s.sc.Events[ev].Snapshot != nil {
		snap = s.sc.Events[ev].Snapshot
	}
	if snap == nil {
		s.sent[mv.Msg] = false
		st.Result = transcript.ResultNoCall
		st.Note = fmt.Sprintf("%s holds no lease it knows of, so its heartbeat carries nothing to renew and is dropped.", mv.Actor)
		return
	}
	m := transcript.Message{ID: mv.Msg, From: mv.Actor, Sent: mv.T, Due: s.due(mv.Msg, scenario.ActionDeliver), Snapshot: *snap}
	s.flight = append(s.flight, m)
	s.sent[mv.Msg] = true
	st.Note = noteSend(m, s.offScript)
}

func (s *State) deliver(ctx context.Context, srv Server, mv scenario.Move, st *transcript.Step, prev *scenario.Lease) error {
	m, ok := s.inFlight(mv.Msg)
	if !ok {
		st.Result = transcript.ResultNoCall
		st.Note = fmt.Sprintf("Heartbeat %s was never in flight (its sender held no lease), so nothing arrives.", mv.Msg)
		return nil
	}
	snap := m.Snapshot
	stale := staleReason(m, s.coord, mv.T)
	renew := StmtRenewBlind
	if s.knobs.Renewal == scenario.RenewalCompare {
		renew = StmtRenewCompare
	}
	if err := s.coordinate(ctx, srv, mv.Actor, st, renew, s.sc.Lease, snap.Owner, snap.Fence, snap.LeaseVersion, mv.T, s.sc.TTL); err != nil {
		return err
	}
	s.removeFlight(mv.Msg)
	if st.Rows == 0 {
		st.Result = transcript.ResultRefused
	}
	if s.replyLate(mv.Msg) {
		// The renewal is done at the coordinator, but its sender hears of
		// it only when the reply arrives; until then it acts on its old
		// belief.
		r := transcript.Message{ID: mv.Msg, From: mv.Actor, Sent: mv.T, Due: s.due(mv.Msg, scenario.ActionReply), Kind: transcript.KindReply, Rows: st.Rows}
		if st.Rows == 1 && s.coord != nil {
			r.Snapshot = *s.coord
		}
		s.flight = append(s.flight, r)
		due := r.Due
		if s.offScript {
			due = -1 // when it arrives is the moves' to say
		}
		st.Note = noteDeliverLate(mv.Actor, s.knobs.Renewal, st.Rows, stale, prev, s.coord, m, due)
		return nil
	}
	s.learn(mv.Actor, st.Rows)
	st.Note = noteDeliver(mv.Actor, s.knobs.Renewal, st.Rows, stale, prev, s.coord, m)
	return nil
}

// learn tells an actor what its renewal did: one row and the row is its,
// so it believes the row; zero rows tell it its epoch is gone.
func (s *State) learn(actor string, rows int64) {
	b := s.actor(actor)
	if rows == 1 && s.coord != nil && s.coord.Owner == actor {
		b.lease = s.coord.Clone()
	} else {
		b.lease = nil
	}
}

func (s *State) reply(mv scenario.Move, st *transcript.Step) {
	m, _ := s.inFlight(mv.Msg)
	s.removeFlight(mv.Msg)
	b := s.actor(mv.Actor)
	before := b.lease.Clone()
	if m.Rows == 1 && m.Snapshot.Owner == mv.Actor {
		snap := m.Snapshot
		b.lease = &snap
	} else {
		b.lease = nil
	}
	st.Result = transcript.ResultNoCall
	st.Note = noteReply(mv.Actor, m, before, mv.T)
}

// acts decides whether an actor acts on its lease now: by its own clock,
// or, resumed after a pause, by the check it made before (which is then
// used up). It returns the lease it acts with.
func (s *State) acts(actor string, t int64) (*scenario.Lease, bool) {
	lease, ok := s.holds(actor, t)
	if b := s.actor(actor); b.checked != nil {
		ok = *b.checked && lease != nil
		b.checked = nil
	}
	return lease, ok
}

func (s *State) effect(ctx context.Context, srv Server, mv scenario.Move, ev int, st *transcript.Step) error {
	lease, ok := s.acts(mv.Actor, mv.T)
	if !ok {
		st.Result = transcript.ResultNoCall
		st.Note = noteSkip(mv.Actor, lease, mv.T)
		return nil
	}
	return s.write(ctx, srv, mv.Actor, lease.Fence, s.value(ev, mv), st, noteEffect)
}

// post sends an effect's write into the network, where it is held like a
// heartbeat; it reaches the resource only when delivered.
func (s *State) post(mv scenario.Move, ev int, st *transcript.Step) {
	lease, ok := s.acts(mv.Actor, mv.T)
	if !ok {
		s.sent[mv.Msg] = false
		st.Result = transcript.ResultNoCall
		st.Note = noteSkip(mv.Actor, lease, mv.T)
		return
	}
	m := transcript.Message{
		ID: mv.Msg, From: mv.Actor, Sent: mv.T, Due: s.due(mv.Msg, scenario.ActionWriteDeliver),
		Snapshot: *lease, Kind: transcript.KindWrite, Fence: lease.Fence, Value: s.value(ev, mv),
	}
	s.flight = append(s.flight, m)
	s.sent[mv.Msg] = true
	st.Note = notePost(m, s.offScript)
}

// release gives the lease up: the row expires now, if it is still the
// actor's own epoch.
func (s *State) release(ctx context.Context, srv Server, mv scenario.Move, st *transcript.Step, prev *scenario.Lease) error {
	b := s.actor(mv.Actor)
	if b.lease == nil {
		st.Result = transcript.ResultNoCall
		st.Note = fmt.Sprintf("%s holds no lease it knows of, so it has nothing to release.", mv.Actor)
		return nil
	}
	mine := *b.lease
	if err := s.coordinate(ctx, srv, mv.Actor, st, StmtRelease, s.sc.Lease, mine.Owner, mine.Fence, mv.T); err != nil {
		return err
	}
	if st.Rows == 0 {
		st.Result = transcript.ResultRefused
	}
	b.lease = nil
	st.Note = noteRelease(mv.Actor, st.Rows, mine, prev, mv.T)
	return nil
}

// reelect runs River's re-election upsert from before riverqueue/river#199
// for an actor that believes it leads. Its condition is always true, so it
// extends whatever row is there; the actor trusts the count, as River's
// elector did, and believes it leads for another TTL. It never reads the
// row's owner: that is the bug.
func (s *State) reelect(ctx context.Context, srv Server, mv scenario.Move, st *transcript.Step, prev *scenario.Lease) error {
	b := s.actor(mv.Actor)
	if b.lease == nil || b.lease.Owner != mv.Actor {
		st.Result = transcript.ResultNoCall
		st.Note = fmt.Sprintf("%s does not believe it leads, so it has nothing to re-elect itself to.", mv.Actor)
		return nil
	}
	mine := *b.lease
	if err := s.coordinate(ctx, srv, mv.Actor, st, StmtReelect, s.sc.Lease, mv.Actor, mine.Fence, mine.LeaseVersion, mv.T, s.sc.TTL); err != nil {
		return err
	}
	if st.Rows == 0 {
		st.Result = transcript.ResultRefused
		b.lease = nil
	} else {
		mine.ExpiresAt = mv.T + s.sc.TTL
		b.lease = &mine
	}
	owner := s.coord != nil && s.coord.Owner != mv.Actor && s.believes(s.coord.Owner, mv.T)
	st.Note = noteReelect(mv.Actor, st.Rows, mine, prev, s.coord, mv.T, owner)
	return nil
}

// noteKind says how a write came about, for its narration.
type noteKind int

const (
	noteEffect noteKind = iota // an effect with the actor's fence
	noteDirect                 // a scripted write with an explicit epoch
	noteLanded                 // a delayed write reaching the resource
)

func (s *State) write(ctx context.Context, srv Server, actor string, epoch int64, value json.RawMessage, st *transcript.Step, kind noteKind) error {
	before := s.res
	wr, err := srv.Write(ctx, actor, epoch, value)
	if err != nil {
		return err
	}
	st.SQL, st.Args, st.Tag, st.Rows = wr.SQL, wr.Args, wr.Tag, wr.Rows
	if st.Args == nil {
		st.Args = []any{}
	}
	call := wr.Call
	st.Call = &call
	if !call.Accepted {
		st.Result = transcript.ResultRefused
	}
	effects := append(slices.Clone(before.Effects), wr.Effect)
	s.res = transcript.ResourceSnap{Fence: wr.Fence, Value: wr.Value, Effects: effects}
	s.Verdict()
	last := effects[len(effects)-1]
	o := transcript.OutcomeOf(s.coord, s.res, s.sc.Resource.Fence)
	st.Note = noteWrite(actor, epoch, wr, before.Fence, last, s.knobs.Fencing, kind, o.Effects)
	return nil
}
