package world_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
)

// The rules alone: the moves here never reach a server, so every Apply
// gets a nil Server, and one that tried to use it would panic.

func start(t *testing.T, name string) world.State {
	t.Helper()
	sc, err := scenario.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	k := scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff}
	return world.New(sc, k, transcript.ResourceSnap{Fence: sc.Resource.Fence, Value: sc.Resource.Value, Effects: []scenario.Effect{}})
}

func move(t *testing.T, text string) scenario.Move {
	t.Helper()
	mv, err := scenario.ParseMove(text)
	if err != nil {
		t.Fatal(err)
	}
	return mv
}

func apply(t *testing.T, s *world.State, text string) transcript.Step {
	t.Helper()
	st, err := s.Apply(context.Background(), nil, move(t, text))
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return st
}

func listed(s *world.State, at int64, free bool) []string {
	var out []string
	for _, o := range s.Options(at, free) {
		out = append(out, o.Move.String())
	}
	return out
}

func TestMovesNotEnabledAreRefusedAndChangeNothing(t *testing.T) {
	for _, c := range []struct {
		before []string
		move   string
		why    string
	}{
		{nil, "A:deliver hb1@1060", "hb1 was never sent"},
		{nil, "A:drop hb1@1060", "hb1 was never sent"},
		{[]string{"A:send hb1@1055"}, "A:send hb1@1056", "was sent already"},
		{[]string{"A:send hb1@1055"}, "B:deliver hb1@1060", "sent by A, so the move is A's"},
		{[]string{"A:send hb1@1055"}, "A:send hb2@1050", "it is already t=1055"},
		{[]string{"A:send hb1@1055", "A:drop hb1@1056"}, "A:deliver hb1@1057", "hb1 is not in flight"},
		{nil, "A:resume@1060", "A is not paused"},
		{[]string{"A:pause@1060"}, "A:pause@1061", "A is paused already"},
		{[]string{"A:pause@1060"}, "A:send hb1@1061", "A is paused: it does nothing until A:resume"},
	} {
		t.Run(c.move, func(t *testing.T) {
			s := start(t, "renewal-race")
			for _, b := range c.before {
				apply(t, &s, b)
			}
			before := s.Clone()
			_, err := s.Apply(context.Background(), nil, move(t, c.move))
			var ne *world.NotEnabledError
			if !errors.As(err, &ne) {
				t.Fatalf("got %v, want a *NotEnabledError", err)
			}
			if !strings.Contains(ne.Why, c.why) {
				t.Errorf("why = %q, want it to say %q", ne.Why, c.why)
			}
			if !reflect.DeepEqual(s, before) {
				t.Errorf("a refused move changed the state")
			}
			if slices.Contains(listed(&s, max(s.Now(), move(t, c.move).T), true), c.move) {
				t.Errorf("the menu offers %s, which is refused", c.move)
			}
		})
	}
}

func TestADroppedMessageLeavesTheFlight(t *testing.T) {
	s := start(t, "renewal-race")
	st := apply(t, &s, "A:send hb1@1055")
	if len(st.InFlight) != 1 || st.InFlight[0].ID != "hb1" || st.InFlight[0].From != "A" {
		t.Fatalf("after the send, in flight: %+v", st.InFlight)
	}
	menu := listed(&s, 1056, false)
	for _, want := range []string{"A:deliver hb1@1056", "A:drop hb1@1056"} {
		if !slices.Contains(menu, want) {
			t.Errorf("the menu at 1056 lacks %s: %v", want, menu)
		}
	}
	st = apply(t, &s, "A:drop hb1@1056")
	if len(st.InFlight) != 0 || st.Result != transcript.ResultNoCall {
		t.Fatalf("after the drop: in flight %+v, result %s", st.InFlight, st.Result)
	}
	for _, mv := range listed(&s, 1057, true) {
		if strings.Contains(mv, "hb1") {
			t.Errorf("the menu still offers %s after hb1 was dropped", mv)
		}
	}
}

func TestAPausedActorOnlyResumes(t *testing.T) {
	s := start(t, "paused-holder")
	at := s.Now()
	apply(t, &s, "A:pause@"+itoa(at))
	for _, mv := range listed(&s, at, true) {
		if strings.HasPrefix(mv, "A:") && mv != "A:resume@"+itoa(at) {
			t.Errorf("paused A is offered %s", mv)
		}
	}
	if !slices.Contains(listed(&s, at, true), "A:resume@"+itoa(at)) {
		t.Errorf("paused A is not offered a resume")
	}
	apply(t, &s, "A:resume@"+itoa(at+1))
	if slices.Contains(listed(&s, at+1, true), "A:resume@"+itoa(at+1)) {
		t.Errorf("A is offered a resume after resuming")
	}
}

func TestAScriptedEventIsOfferedUntilPlayed(t *testing.T) {
	s := start(t, "renewal-race")
	const send = "A:send hb1@1055"
	if !slices.Contains(listed(&s, 1055, false), send) {
		t.Fatalf("the scripted send is not offered: %v", listed(&s, 1055, false))
	}
	apply(t, &s, send)
	if slices.ContainsFunc(listed(&s, 1055, false), func(m string) bool { return strings.HasPrefix(m, "A:send") }) {
		t.Errorf("the scripted send is offered again after it was played: %v", listed(&s, 1055, false))
	}
}

func TestCloneIsIndependent(t *testing.T) {
	s := start(t, "renewal-race")
	c := s.Clone()
	apply(t, &c, "A:send hb1@1055")
	apply(t, &c, "A:pause@1056")
	if !reflect.DeepEqual(s, start(t, "renewal-race")) {
		t.Errorf("moves made on a clone changed the original")
	}
	if _, err := s.Apply(context.Background(), nil, move(t, "A:drop hb1@1056")); err == nil {
		t.Errorf("the original has hb1 in flight, sent only on the clone")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// An advance of the clock to a time the script has an event at says which,
// in words ("when the script has the clock expire", "... has P2 acquire"):
// at the start of every built-in scenario, the advance to its first
// scripted time after the start. (Later ones need a server to get to.)
func TestClockOptionsNameTheScriptedEvent(t *testing.T) {
	for _, name := range scenario.BuiltinNames() {
		sc, err := scenario.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		s := start(t, name)
		i := slices.IndexFunc(sc.Events, func(ev scenario.Event) bool { return ev.T > sc.Window.From })
		if i < 0 {
			continue
		}
		ev := sc.Events[i]
		who := ev.Actor
		if ev.Actor == scenario.ClockActor || ev.Actor == "" {
			who = "the clock"
		}
		want := "the script has " + who + " " + ev.Action.Verb()
		if ev.Heartbeat != "" {
			want += " " + ev.Heartbeat
		}
		var words []string
		for _, o := range s.Options(sc.Window.From, true) {
			if o.Move.Action == scenario.ActionAdvance && o.Move.T == ev.T {
				words = append(words, o.Words)
			}
		}
		if len(words) != 1 || !strings.Contains(words[0], want) {
			t.Errorf("%s: the advance to %d reads %q, want it to say %q", name, ev.T, words, want)
		}
	}
}
