package engine_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
)

// kinds has a message of every kind (a heartbeat, its late reply, a delayed
// write) and a pause, so the menu meets each of them.
const kinds = `name: kinds
window: {from: 0, to: 100}
ttl: 50
initial:
  coordinator: {owner: A, fence: 1, lease_version: 1, expires_at: 50}
  resource: {epoch: 1, value: v1}
events:
  - {t: 1, actor: A, action: heartbeat.send, heartbeat: hb1}
  - {t: 2, actor: A, action: heartbeat.deliver, heartbeat: hb1}
  - {t: 3, actor: A, action: heartbeat.reply, heartbeat: hb1}
  - {t: 4, actor: A, action: write.send, message: w1, value: w}
  - {t: 5, actor: A, action: pause}
  - {t: 6, actor: B, action: acquire}
  - {t: 7, actor: A, action: resume}
  - {t: 8, actor: A, action: write.deliver, message: w1}
expect:
  - {renewal: "*", fencing: "*", effects: 1, verdict: safe}
`

func listed(opts []world.Option, mv scenario.Move) bool {
	return slices.ContainsFunc(opts, func(o world.Option) bool { return o.Move.Same(mv) })
}

// tryMove plays mv at the cursor, reports whether it was enabled, and steps
// back. A refusal must be a *NotEnabledError that leaves the log alone.
func tryMove(t *testing.T, r *engine.Run, mv scenario.Move) bool {
	t.Helper()
	ctx := enginetest.Ctx(t)
	pos, log := r.Pos(), r.Log()
	_, err := r.Play(ctx, mv)
	if err != nil {
		var ne *world.NotEnabledError
		if !errors.As(err, &ne) {
			t.Fatalf("%s at %s: %v, want a *NotEnabledError or success", mv, scenario.FormatMoves(log[:pos]), err)
		}
		if r.Pos() != pos || scenario.FormatMoves(r.Log()) != scenario.FormatMoves(log) {
			t.Fatalf("refused %s changed the run: at %d of %s", mv, r.Pos(), scenario.FormatMoves(r.Log()))
		}
		return false
	}
	if r.Pos() != pos+1 || !r.Log()[pos].Same(mv) {
		t.Fatalf("played %s: at %d of %s", mv, r.Pos(), scenario.FormatMoves(r.Log()))
	}
	if err := r.Seek(ctx, pos); err != nil {
		t.Fatal(err)
	}
	return true
}

// TestOptionsOnlyEnabledMoves walks each scenario's own log and, at every
// point, plays every move the menu lists (each must succeed) and every move
// of a wider set the menu decides on: a delivery, drop, reply or landing of
// every message name by every actor, a pause or resume, a paused actor's
// moves, and each listed move a tick in the past. Such a move is listed
// exactly when the engine lets it be made.
func TestOptionsOnlyEnabledMoves(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	sc, err := scenario.Parse("kinds.yaml", []byte(kinds))
	if err != nil {
		t.Fatal(err)
	}
	race, _ := scenario.Builtin("renewal-race")
	for _, sc := range []*scenario.Scenario{race, sc} {
		t.Run(sc.Name, func(t *testing.T) {
			ctx := enginetest.Ctx(t)
			r := enginetest.OpenScenario(t, dsn, sc, enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
			script := sc.Log()
			msgs := []string{"nosuch"}
			for _, ev := range sc.Events {
				if ev.Heartbeat != "" && !slices.Contains(msgs, ev.Heartbeat) {
					msgs = append(msgs, ev.Heartbeat)
				}
			}
			usesPause := slices.ContainsFunc(sc.Events, func(ev scenario.Event) bool { return ev.Action == scenario.ActionPause })
			seenRefused, seenListed := 0, 0
			for pos := 0; pos <= len(script); pos++ {
				now := r.Now()
				opts := r.Options()
				if len(opts) == 0 {
					t.Fatalf("no moves at all after %s", scenario.FormatMoves(script[:pos]))
				}
				for _, o := range opts {
					if o.Words == "" || !tryMove(t, r, o.Move) {
						t.Errorf("after %s the menu lists %s (%q), which is refused", scenario.FormatMoves(script[:pos]), o.Move, o.Words)
					}
					if o.Move.T > now {
						continue
					}
					past := o.Move
					if past.T = now - 1; pos > 0 && tryMove(t, r, past) {
						t.Errorf("after %s, %s a tick in the past is allowed", scenario.FormatMoves(script[:pos]), past)
					}
				}
				check := func(mv scenario.Move) {
					on, ok := listed(opts, mv), tryMove(t, r, mv)
					if on != ok {
						t.Errorf("after %s: %s listed %v but enabled %v", scenario.FormatMoves(script[:pos]), mv, on, ok)
					}
					if on {
						seenListed++
					} else {
						seenRefused++
					}
				}
				view := r.View()
				for _, a := range sc.Actors() {
					for _, id := range msgs {
						for _, act := range []scenario.Action{scenario.ActionDeliver, scenario.ActionDrop, scenario.ActionReply, scenario.ActionWriteDeliver} {
							check(scenario.Move{T: now, Actor: a, Action: act, Msg: id})
						}
					}
					paused := slices.ContainsFunc(view.Beliefs, func(b transcript.Belief) bool { return b.Actor == a && b.Paused })
					if usesPause {
						check(scenario.Move{T: now, Actor: a, Action: scenario.ActionPause})
						check(scenario.Move{T: now, Actor: a, Action: scenario.ActionResume})
					}
					if paused {
						for _, act := range []scenario.Action{scenario.ActionAcquire, scenario.ActionEffect} {
							mv := scenario.Move{T: now, Actor: a, Action: act}
							if listed(opts, mv) || tryMove(t, r, mv) {
								t.Errorf("paused %s may %s", a, act)
							}
						}
					}
				}
				if pos == len(script) {
					break
				}
				if _, err := r.Play(ctx, script[pos]); err != nil {
					t.Fatalf("the scenario's own move %s: %v", script[pos], err)
				}
			}
			if seenListed == 0 || seenRefused == 0 {
				t.Errorf("%d listed and %d refused moves checked: the test proves nothing", seenListed, seenRefused)
			}
		})
	}
}

// TestOptionsDropLeavesFlight: a dropped heartbeat is gone from the network
// and from the menu, and delivering it afterwards is refused.
func TestOptionsDropLeavesFlight(t *testing.T) {
	t.Parallel()
	ctx := enginetest.Ctx(t)
	r := enginetest.Open(t, pgtest.DSN(t), "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	if err := r.Seek(ctx, 0); err != nil {
		t.Fatal(err)
	}
	send := scenario.Move{T: 1055, Actor: "A", Action: scenario.ActionSend, Msg: "hb1"}
	if _, err := r.Play(ctx, send); err != nil {
		t.Fatal(err)
	}
	inFlight := func() []string {
		var ids []string
		for _, m := range r.View().InFlight {
			ids = append(ids, m.ID)
		}
		return ids
	}
	deliver := scenario.Move{T: 1055, Actor: "A", Action: scenario.ActionDeliver, Msg: "hb1"}
	drop := scenario.Move{T: 1055, Actor: "A", Action: scenario.ActionDrop, Msg: "hb1"}
	if ids := inFlight(); !slices.Equal(ids, []string{"hb1"}) || !listed(r.Options(), deliver) || !listed(r.Options(), drop) {
		t.Fatalf("after the send: in flight %v, menu %v", ids, r.Options())
	}
	st, err := r.Play(ctx, drop)
	if err != nil {
		t.Fatal(err)
	}
	if st.Action != scenario.ActionDrop || st.SQL != "" || st.Call != nil {
		t.Errorf("a drop talks to no server: %+v", st)
	}
	if ids := inFlight(); len(ids) != 0 {
		t.Errorf("after the drop, in flight: %v", ids)
	}
	for _, o := range r.Options() {
		if o.Move.Msg == "hb1" {
			t.Errorf("after the drop the menu still offers %s", o.Move)
		}
	}
	_, err = r.Play(ctx, deliver)
	var ne *world.NotEnabledError
	if !errors.As(err, &ne) || !strings.Contains(ne.Why, "hb1 is not in flight") {
		t.Fatalf("delivering the dropped heartbeat: %v", err)
	}
}

// TestStepBackForks: stepping back and choosing another move cuts the log
// at the cursor, and the server follows the new path.
func TestStepBackForks(t *testing.T) {
	t.Parallel()
	ctx := enginetest.Ctx(t)
	r := enginetest.Open(t, pgtest.DSN(t), "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	if err := r.PlayAll(ctx); err != nil {
		t.Fatal(err)
	}
	old := r.Log()
	if len(old) != 6 || r.View().Outcome.Verdict != scenario.VerdictConflict {
		t.Fatalf("the scripted race: %s, %s", scenario.FormatMoves(old), r.View().Outcome.Verdict)
	}
	// Back to just after the lease expired, then A's heartbeat arrives
	// before B can take over.
	if err := r.Seek(ctx, 2); err != nil {
		t.Fatal(err)
	}
	early := scenario.Move{T: 1060, Actor: "A", Action: scenario.ActionDeliver, Msg: "hb1"}
	if _, err := r.Play(ctx, early); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(old[:2]), early)
	if got := r.Log(); scenario.FormatMoves(got) != scenario.FormatMoves(want) || r.Pos() != 3 || r.Len() != 3 {
		t.Fatalf("log after the fork: %s at %d, want %s", scenario.FormatMoves(got), r.Pos(), scenario.FormatMoves(want))
	}
	if _, err := r.Next(ctx); !errors.Is(err, engine.ErrEnd) {
		t.Errorf("the old path's moves are still there: Next gave %v", err)
	}
	// On the server, A holds the renewed lease, so B's takeover finds
	// nothing to take.
	st, err := r.Play(ctx, old[2])
	if err != nil {
		t.Fatal(err)
	}
	if st.Tag != "UPDATE 0" || r.View().Coordinator.Owner != "A" {
		t.Errorf("B's acquire on the forked path: %s, owner %s", st.Tag, r.View().Coordinator.Owner)
	}
	tr, err := r.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	var moves []scenario.Move
	for _, s := range tr.Steps {
		moves = append(moves, s.Move())
	}
	if got := scenario.FormatMoves(moves); got != scenario.FormatMoves(r.Log()) {
		t.Errorf("the transcript holds %s, the run played %s", got, scenario.FormatMoves(r.Log()))
	}
}

// TestOfferedHeartbeatsHaveTheirOwnNames: once A and B both hold a lease,
// the menu offers each a heartbeat, and never one name for the two; the
// clock's words agree in number with the messages it leaves in flight.
func TestOfferedHeartbeatsHaveTheirOwnNames(t *testing.T) {
	t.Parallel()
	ctx := enginetest.Ctx(t)
	r := enginetest.Open(t, pgtest.DSN(t), "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	if err := r.Seek(ctx, 0); err != nil {
		t.Fatal(err)
	}
	for _, mv := range []string{"A:send hb1@1055", "clock:advance@1060", "clock:advance@1070", "B:acquire@1070"} {
		m, err := scenario.ParseMove(mv)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Play(ctx, m); err != nil {
			t.Fatalf("%s: %v", mv, err)
		}
	}
	names := map[string]string{}
	for _, o := range r.Options() {
		if o.Move.Action != scenario.ActionSend {
			continue
		}
		if other, dup := names[o.Move.Msg]; dup {
			t.Errorf("%s and %s are both offered heartbeat %s", other, o.Move.Actor, o.Move.Msg)
		}
		names[o.Move.Msg] = o.Move.Actor
		if !strings.Contains(o.Words, "lease_version ") {
			t.Errorf("the send reads %q: a lease_version is named in full", o.Words)
		}
	}
	if len(names) != 2 {
		t.Fatalf("heartbeats offered: %v, want one each for A and B", names)
	}
	// Send both: two messages in flight, and the clock says they stay.
	for _, o := range r.Options() {
		if o.Move.Action == scenario.ActionSend {
			if _, err := r.Play(ctx, o.Move); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	for _, o := range r.Options() {
		if o.Move.Action == scenario.ActionSend {
			if _, err := r.Play(ctx, o.Move); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	for _, o := range r.Options() {
		if o.Move.Action == scenario.ActionAdvance && !strings.Contains(o.Words, " stay in flight") {
			t.Errorf("with %d messages in flight the clock reads %q", len(r.View().InFlight), o.Words)
		}
	}
}
