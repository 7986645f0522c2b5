package lanes

import (
	"context"
	"fmt"
	"testing"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// inputOf is what a screen's snapshot of r gives the diagram.
func inputOf(r *engine.Run) Input {
	sc, v := r.Scenario(), r.View()
	return Input{
		Actors: sc.Actors(), Log: r.Log(), Steps: r.Steps(),
		Initial: sc.Initial, InitialEpoch: sc.Resource.Fence,
		InFlight: v.InFlight, From: sc.Window.From, End: r.End(), Now: v.Now,
	}
}

// eachStep calls f at every position of the shipped recording of every
// built-in scenario under every knob setting, from before the first step
// to after the last.
func eachStep(t *testing.T, f func(t *testing.T, name string, k scenario.Knobs, r *engine.Run, d Diagram)) {
	t.Helper()
	for _, name := range scenario.BuiltinNames() {
		for _, k := range scenario.AllKnobs() {
			t.Run(name+"/"+k.String(), func(t *testing.T) {
				r, err := engine.ShippedReplay(name, k)
				if err != nil {
					t.Fatal(err)
				}
				for {
					f(t, name, k, r, Build(inputOf(r)))
					if len(r.Steps()) >= len(r.Log()) {
						return
					}
					if _, err := r.Next(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// TestMarksNeverContradictResults holds every mark of every step of every
// built-in scenario, under all six settings, to its step: a played move's
// mark agrees with its result, a danger mark with what the step did to
// the resource or the lease row, and a move not played yet has none.
func TestMarksNeverContradictResults(t *testing.T) {
	seen := map[Mark]int{}
	defer func() {
		// The rule above is only tested where the marks occur: every mark
		// must occur somewhere in the built-in scenarios.
		for _, m := range Marks() {
			if seen[m] == 0 {
				t.Errorf("no built-in scenario ever marks a move %s", m.Words())
			}
		}
	}()
	eachStep(t, func(t *testing.T, name string, k scenario.Knobs, r *engine.Run, d Diagram) {
		for _, mv := range d.Moves {
			seen[mv.Mark]++
		}
		steps := r.Steps()
		if len(d.Moves) != len(r.Log()) {
			t.Fatalf("%d moves drawn for a log of %d", len(d.Moves), len(r.Log()))
		}
		sc := r.Scenario()
		high := sc.Resource.Fence
		prev := sc.Initial
		effects := 0
		for i, mv := range d.Moves {
			at := fmt.Sprintf("pos %d, move %d (%s %s at %d)", len(steps), i, mv.Actor, mv.Action, mv.T)
			if d.Lanes[mv.Lane].Name != mv.Actor && !(mv.Actor == scenario.ClockActor && d.Lanes[mv.Lane].Clock) {
				t.Errorf("%s: drawn in %s's lane", at, d.Lanes[mv.Lane].Name)
			}
			if i >= len(steps) {
				if mv.Mark != Pending {
					t.Errorf("%s: not played yet, but marked %s", at, mv.Mark.Words())
				}
				continue
			}
			st := steps[i]
			// What the step did, found here from the step alone.
			var write *scenario.Effect
			if len(st.Resource.Effects) > effects {
				write = &st.Resource.Effects[len(st.Resource.Effects)-1]
			}
			effects = len(st.Resource.Effects)
			stale := write != nil && write.Accepted && write.Fence < high
			blocked := write != nil && !write.Accepted && write.Fence >= high
			regressed := prev != nil && st.Coordinator != nil && st.Coordinator.Fence < prev.Fence
			if write != nil && write.Accepted {
				high = max(high, write.Fence)
			}
			prev = st.Coordinator
			want := map[string][]Mark{
				transcript.ResultDone:    {Done, Stale, Regressed},
				transcript.ResultRefused: {Refused, Blocked},
				transcript.ResultNoCall:  {NoCall},
			}[st.Result]
			ok := false
			for _, w := range want {
				ok = ok || w == mv.Mark
			}
			if !ok {
				t.Errorf("%s: result %q, yet marked %s", at, st.Result, mv.Mark.Words())
			}
			if (mv.Mark == Stale) != stale {
				t.Errorf("%s: marked %s, but the write was stale-accepted: %v", at, mv.Mark.Words(), stale)
			}
			if (mv.Mark == Blocked) != blocked {
				t.Errorf("%s: marked %s, but a valid write was refused: %v", at, mv.Mark.Words(), blocked)
			}
			if mv.Mark == Regressed && !regressed {
				t.Errorf("%s: marked regressed, but the fence did not go down", at)
			}
			if regressed && !stale && st.Result == transcript.ResultDone && mv.Mark != Regressed {
				t.Errorf("%s: the fence went down, yet marked %s", at, mv.Mark.Words())
			}
		}
	})
}

// TestMessagesRunFromSendToEnd: every message starts at a move that sends
// it, in its sender's lane, and ends (if it does) at a later move of the
// same message; one the network lost never arrives.
func TestMessagesRunFromSendToEnd(t *testing.T) {
	eachStep(t, func(t *testing.T, name string, k scenario.Knobs, r *engine.Run, d Diagram) {
		for _, m := range d.Messages {
			send := d.Moves[m.Send]
			if send.Actor != m.From || send.Lane != m.Lane {
				t.Errorf("%s sent by %s in lane %d, drawn from %s's move", m.ID, m.From, m.Lane, send.Actor)
			}
			if m.Sent != (m.Send < d.Pos) {
				t.Errorf("%s: sent %v, but its send move is %d of %d played", m.ID, m.Sent, m.Send, d.Pos)
			}
			if m.End >= 0 {
				end := d.Moves[m.End]
				if m.End <= m.Send || end.Msg != m.ID || end.T < send.T {
					t.Errorf("%s: ends at move %d (%s %s at %d), sent at move %d", m.ID, m.End, end.Action, end.Msg, end.T, m.Send)
				}
			}
			if m.Lost && m.Arrived && d.Moves[m.End].Action != scenario.ActionDrop {
				t.Errorf("%s: lost, yet delivered", m.ID)
			}
		}
		// Every heartbeat the log sends is drawn.
		for i, mv := range d.Moves {
			if mv.Action == scenario.ActionSend || mv.Action == scenario.ActionWriteSend {
				found := false
				for _, m := range d.Messages {
					found = found || m.Send == i
				}
				if !found {
					t.Errorf("move %d sends %s, but no message is drawn from it", i, mv.Msg)
				}
			}
		}
	})
}

// TestPausedHolderStaleWrite is the newcomer's screen: paused-holder under
// compare/off at 1080. A's lane shows its write accepted stale, and the
// resume beside it made no call: two marks, one per move.
func TestPausedHolderStaleWrite(t *testing.T) {
	r, err := engine.ShippedReplay("paused-holder", scenario.Knobs{Renewal: scenario.RenewalCompare, Fencing: scenario.FencingOff})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SeekTime(context.Background(), 1080); err != nil {
		t.Fatal(err)
	}
	d := Build(inputOf(r))
	var at1080 []Move
	for _, mv := range d.Moves {
		if mv.T == 1080 && mv.Actor == "A" {
			at1080 = append(at1080, mv)
		}
	}
	if len(at1080) != 2 || at1080[0].Action != scenario.ActionResume || at1080[1].Action != scenario.ActionEffect {
		t.Fatalf("A's moves at 1080: %+v", at1080)
	}
	if at1080[0].Mark != NoCall || at1080[1].Mark != Stale {
		t.Errorf("A at 1080: resume %s, write %s; want made no call, stale write accepted", at1080[0].Mark.Words(), at1080[1].Mark.Words())
	}
	if got := d.Danger(); len(got) != 1 || got[0].Index != at1080[1].Index {
		t.Errorf("dangers %+v, want only A's write", got)
	}
	if len(d.Pauses) != 1 || d.Moves[d.Pauses[0].Start].T != 1050 || d.Pauses[0].End != at1080[0].Index {
		t.Errorf("A's pause drawn as %+v, want from 1050 to its resume at 1080", d.Pauses)
	}
	// Both moves sit in one instant, side by side, in log order.
	last := d.Times[len(d.Times)-1]
	if last.T != 1080 || len(last.Moves) != 2 || last.Moves[0] != at1080[0].Index {
		t.Errorf("the last instant is %+v", last)
	}
}

// TestRenewalRaceResurrection: the blind heartbeat's arrival regresses the
// row, and hb1 flies from 1055 to 1075 in A's lane.
func TestRenewalRaceResurrection(t *testing.T) {
	r, err := engine.ShippedReplay("renewal-race", scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SeekTime(context.Background(), r.End()); err != nil {
		t.Fatal(err)
	}
	d := Build(inputOf(r))
	var got []string
	for _, mv := range d.Moves {
		got = append(got, fmt.Sprintf("%s:%s%s", d.Lanes[mv.Lane].Name, first(Letter(mv.Action)), mv.Mark.Glyph()))
	}
	want := "[A:s✓ clock:x✓ B:a✓ B:e✓ A:d↓ A:e!]"
	if fmt.Sprint(got) != want {
		t.Errorf("marks %v, want %s", got, want)
	}
	if len(d.Messages) != 1 {
		t.Fatalf("messages %+v", d.Messages)
	}
	m := d.Messages[0]
	if m.ID != "hb1" || d.Moves[m.Send].T != 1055 || m.End < 0 || d.Moves[m.End].T != 1075 || !m.Arrived || m.Lost {
		t.Errorf("hb1 drawn as %+v", m)
	}
	if names := fmt.Sprint(d.Lanes); names != "[{A false} {B false} {clock true}]" {
		t.Errorf("lanes %s", names)
	}
}

func first(a, _ string) string { return a }

// TestLostMessage: a message the network drops ends lost at the drop, and
// one in flight with no delivery scheduled is held, not lost: it may still
// be delivered.
func TestLostMessage(t *testing.T) {
	log := []scenario.Move{
		{T: 1055, Actor: "A", Action: scenario.ActionSend, Msg: "hb1"},
		{T: 1056, Actor: "A", Action: scenario.ActionDrop, Msg: "hb1"},
		{T: 1057, Actor: "B", Action: scenario.ActionSend, Msg: "hb2"},
	}
	steps := []transcript.Step{
		{T: 1055, Actor: "A", Action: scenario.ActionSend, Heartbeat: "hb1", Result: transcript.ResultDone, InFlight: []transcript.Message{{ID: "hb1", From: "A", Sent: 1055, Due: 1075}}},
		{T: 1056, Actor: "A", Action: scenario.ActionDrop, Heartbeat: "hb1", Result: transcript.ResultNoCall},
		{T: 1057, Actor: "B", Action: scenario.ActionSend, Heartbeat: "hb2", Result: transcript.ResultDone, InFlight: []transcript.Message{{ID: "hb2", From: "B", Sent: 1057, Due: -1}}},
	}
	d := Build(Input{Log: log, Steps: steps, InFlight: steps[2].InFlight, From: 1050, End: 1100, Now: 1057})
	if len(d.Messages) != 2 {
		t.Fatalf("messages %+v", d.Messages)
	}
	if m := d.Messages[0]; !m.Lost || m.End != 1 || !m.Arrived {
		t.Errorf("dropped hb1: %+v", m)
	}
	if m := d.Messages[1]; m.Lost || !m.Held || m.End != -1 || m.Due != -1 {
		t.Errorf("hb2 with no delivery scheduled: %+v", m)
	}
	if d.Lanes[0].Name != "A" || d.Lanes[1].Name != "B" || len(d.Lanes) != 2 {
		t.Errorf("lanes %+v: no clock moves, so no clock lane", d.Lanes)
	}
}
