package scenario_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leaserace/leaserace/scenario"
)

// The committed seeds are in testdata/fuzz/<target>; these add the
// built-in scenarios and a few shapes worth starting from.

func FuzzParseScenario(f *testing.F) {
	for _, name := range scenario.BuiltinNames() {
		src, err := scenario.BuiltinSource(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	example, err := os.ReadFile("testdata/every-action.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	for _, s := range []string{
		"",
		"name: x\n",
		"[1, 2, 3]\n",
		"name: a\n---\nname: b\n",
		"name: a\nsql: DROP TABLE leases\n",
		"name: 'x''; DROP TABLE leases; --'\nwindow: {from: 0, to: 10}\nttl: 5\nevents: []\n",
		"a: &a [1, 2]\nb: &b [*a, *a]\nc: [*b, *b]\n",
		"name: x\nwindow: {from: 0, to: 9223372036854775807}\nttl: -1\n",
		"name: x\nwindow: {from: 0, to: 10}\nttl: 5\nevents:\n  - {t: 'x+99999999999999999999', actor: A, action: write, epoch: 1}\n",
	} {
		f.Add([]byte(s))
	}
	actorRE := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,15}$`)
	nameRE := regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	const file = "fuzz.yaml"

	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := parseWithin(t, file, src, parseLimit)
		if err != nil {
			// Every refusal says where and what, as a *scenario.Error.
			var se *scenario.Error
			if !errors.As(err, &se) {
				t.Fatalf("error is a %T, not a *scenario.Error: %v", err, err)
			}
			if se.File != file || strings.TrimSpace(se.Msg) == "" {
				t.Fatalf("error without a file or a message: %#v", se)
			}
			if !strings.HasPrefix(err.Error(), file+":") {
				t.Fatalf("error does not start with the file name: %q", err)
			}
			// YAML breaks lines at \n, \r and \r\n: counting both bytes is
			// an upper bound on the lines.
			lines := bytes.Count(src, []byte("\n")) + bytes.Count(src, []byte("\r")) + 1
			if se.Line < 0 || se.Column < 0 || se.Line > lines {
				t.Fatalf("error at line %d column %d of a file of at most %d lines: %v", se.Line, se.Column, lines, err)
			}
			return
		}

		// An accepted scenario holds up when checked again from outside.
		if !nameRE.MatchString(s.Name) || s.Title == "" || s.Lease == "" || len(s.Lease) > 63 {
			t.Fatalf("accepted name %q title %q lease %q", s.Name, s.Title, s.Lease)
		}
		if s.Window.From < 0 || s.Window.To <= s.Window.From || s.TTL <= 0 {
			t.Fatalf("accepted window %+v ttl %d", s.Window, s.TTL)
		}
		if len(s.Events) == 0 || len(s.Events) > scenario.MaxEvents {
			t.Fatalf("accepted %d events", len(s.Events))
		}
		sent := map[string]scenario.Event{}
		delivered, replied, paused := map[string]bool{}, map[string]bool{}, map[string]bool{}
		for i, ev := range s.Events {
			if ev.T < 0 || (i > 0 && ev.T < s.Events[i-1].T) {
				t.Fatalf("event %d at %d: times negative or out of order", i, ev.T)
			}
			if !slicesContains(scenario.Actions(), ev.Action) {
				t.Fatalf("event %d: action %q", i, ev.Action)
			}
			if !actorRE.MatchString(ev.Actor) {
				t.Fatalf("event %d: actor %q", i, ev.Actor)
			}
			if ev.Actor == "clock" && ev.Action != scenario.ActionExpire {
				t.Fatalf("event %d: the clock does %s", i, ev.Action)
			}
			// A paused actor does nothing but resume.
			switch {
			case ev.Action == scenario.ActionResume && !paused[ev.Actor]:
				t.Fatalf("event %d: %s resumes without a pause", i, ev.Actor)
			case ev.Action != scenario.ActionResume && paused[ev.Actor]:
				t.Fatalf("event %d: %s does %s while paused", i, ev.Actor, ev.Action)
			}
			switch ev.Action {
			case scenario.ActionPause:
				paused[ev.Actor] = true
			case scenario.ActionResume:
				paused[ev.Actor] = false
			}
			switch ev.Action {
			case scenario.ActionSend, scenario.ActionWriteSend:
				if _, dup := sent[ev.Heartbeat]; dup || ev.Heartbeat == "" {
					t.Fatalf("event %d sends %q again", i, ev.Heartbeat)
				}
				sent[ev.Heartbeat] = ev
			case scenario.ActionDeliver, scenario.ActionWriteDeliver:
				kind := map[scenario.Action]scenario.Action{scenario.ActionDeliver: scenario.ActionSend, scenario.ActionWriteDeliver: scenario.ActionWriteSend}[ev.Action]
				from, ok := sent[ev.Heartbeat]
				if !ok || from.Actor != ev.Actor || from.Action != kind || delivered[ev.Heartbeat] {
					t.Fatalf("event %d delivers %q, sent by %q with %s", i, ev.Heartbeat, from.Actor, from.Action)
				}
				delivered[ev.Heartbeat] = true
			case scenario.ActionReply:
				if from := sent[ev.Heartbeat]; !delivered[ev.Heartbeat] || replied[ev.Heartbeat] || from.Action != scenario.ActionSend || from.Actor != ev.Actor {
					t.Fatalf("event %d replies to %q, not a heartbeat %s sent and delivered and not replied to", i, ev.Heartbeat, ev.Actor)
				}
				replied[ev.Heartbeat] = true
			case scenario.ActionWrite:
				if ev.Fence == nil || *ev.Fence < 0 {
					t.Fatalf("event %d: write with epoch %v", i, ev.Fence)
				}
			}
			switch ev.Action {
			case scenario.ActionWrite, scenario.ActionEffect, scenario.ActionWriteSend:
				if !json.Valid(ev.Value) {
					t.Fatalf("event %d: value %q is not JSON", i, ev.Value)
				}
			default:
				if ev.Value != nil {
					t.Fatalf("event %d: %s carries a value", i, ev.Action)
				}
			}
			// Every event is a move the move log reads back.
			mv := ev.Move()
			back, err := scenario.ParseMove(mv.String())
			if err != nil || !back.Same(mv) {
				t.Fatalf("event %d as a move %q reads back as %v, %v", i, mv, back, err)
			}
			if a := ev.Ask; a != nil {
				checkAsk(t, i, a, s.Actors())
			}
		}
		goals := s.Goals()
		if len(goals) == 0 || len(goals) > scenario.MaxGoals {
			t.Fatalf("%d goals", len(goals))
		}
		ids := map[string]bool{}
		for _, g := range goals {
			if ids[g.ID] || g.ID == "" || strings.TrimSpace(g.Text) == "" || !slicesContains(scenario.Predicates(), g.When) {
				t.Fatalf("goal %+v", g)
			}
			ids[g.ID] = true
		}
		if s.Initial != nil && !actorRE.MatchString(s.Initial.Owner) {
			t.Fatalf("initial owner %q", s.Initial.Owner)
		}
		if !json.Valid(s.Resource.Value) || s.Resource.Fence < 0 {
			t.Fatalf("initial resource %+v", s.Resource)
		}
		for _, k := range scenario.AllKnobs() {
			if _, ok := s.ExpectationFor(k); !ok {
				t.Fatalf("accepted without an expectation for %s", k)
			}
		}
		// Parsing is deterministic, and re-resolving the same times is a
		// no-op: what explore relies on.
		again, err := scenario.Parse(file, src)
		if err != nil {
			t.Fatalf("accepted once, refused the second time: %v", err)
		}
		sameScenario(t, "parsed again", s, again)
		same, err := s.WithTimes(s.Times)
		if err != nil {
			t.Fatalf("re-resolving its own times: %v", err)
		}
		sameScenario(t, "re-resolved", s, same)
	})
}

// checkAsk checks an accepted question from outside: 2 to 6 unique,
// non-empty, short choices, each one the fact could take.
func checkAsk(t *testing.T, i int, a *scenario.Ask, actors []string) {
	t.Helper()
	if strings.TrimSpace(a.Question) == "" || !slicesContains(scenario.Abouts(), a.About) {
		t.Fatalf("event %d: ask %+v", i, *a)
	}
	if len(a.Choices) < 2 || len(a.Choices) > scenario.MaxChoices {
		t.Fatalf("event %d: %d choices", i, len(a.Choices))
	}
	seen := map[string]bool{}
	for _, c := range a.Choices {
		if c == "" || seen[c] || len([]rune(c)) > scenario.MaxChoiceRunes {
			t.Fatalf("event %d: choice %q", i, c)
		}
		seen[c] = true
		if vals := a.About.Values(); vals != nil && !slicesContains(vals, c) {
			t.Fatalf("event %d: choice %q cannot be a %s", i, c, a.About)
		}
		if a.About == scenario.AboutOwner && !slicesContains(actors, c) {
			t.Fatalf("event %d: owner choice %q is not an actor of %v", i, c, actors)
		}
		if got, ok := a.Right(c); !ok || got != c {
			t.Fatalf("event %d: choice %q is not right when it is the fact", i, c)
		}
	}
}

// parseLimit bounds one Parse: a scenario file must never hang leaserace.
const parseLimit = 2 * time.Second

// parseWithin parses src, failing the test if that takes longer than limit.
func parseWithin(t *testing.T, file string, src []byte, limit time.Duration) (*scenario.Scenario, error) {
	t.Helper()
	type result struct {
		s   *scenario.Scenario
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := scenario.Parse(file, src)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-time.After(limit):
		shown := src[:min(len(src), 200)]
		t.Fatalf("Parse did not finish within %s on %d bytes starting %q", limit, len(src), shown)
		return nil, nil
	}
}

func slicesContains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// sameScenario compares what a scenario exposes.
func sameScenario(t *testing.T, how string, a, b *scenario.Scenario) {
	t.Helper()
	for _, c := range []struct {
		field string
		x, y  any
	}{
		{"name", a.Name, b.Name}, {"title", a.Title, b.Title}, {"lease", a.Lease, b.Lease},
		{"window", a.Window, b.Window}, {"ttl", a.TTL, b.TTL}, {"times", a.Times, b.Times},
		{"initial", a.Initial, b.Initial}, {"resource", a.Resource, b.Resource},
		{"events", a.Events, b.Events}, {"expect", a.Expect, b.Expect}, {"goals", a.Goals(), b.Goals()},
	} {
		if !reflect.DeepEqual(c.x, c.y) {
			t.Fatalf("%s: %s differs:\n%+v\n%+v", how, c.field, c.x, c.y)
		}
	}
}
