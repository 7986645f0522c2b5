package tui

import (
	"context"
	"testing"

	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/scenario"
)

// noRoom takes every report and keeps none: these tests are about what an
// attendee's TUI does with the presenter's leads, not about the room.
type noRoom struct{}

func (noRoom) Report(context.Context, room.Seat) error                    { return nil }
func (noRoom) Vote(context.Context, room.Vote) error                      { return nil }
func (noRoom) Reached(context.Context, string, string, string, int) error { return nil }
func (noRoom) SetLead(_ context.Context, l room.Lead) (room.Lead, error)  { return l, nil }

// attendee opens renewal-race as an attendee following the presenter.
func attendee(t *testing.T) Model {
	t.Helper()
	sc, err := scenario.Load("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	return openScenarioModel(t, sc, blindOff(), 120, 40, func(c *Config) {
		c.NoAsk, c.Room, c.Seat, c.Follow = true, noRoom{}, room.Seat{ID: "seat-alice", Name: "alice"}, true
	})
}

func leadTo(pos int, at int64, push bool) LeadMsg {
	return LeadMsg{Scenario: "renewal-race", Knobs: blindOff(), Pos: pos, T: at, Push: push}
}

// An attendee who breaks away (F) while the presenter's steps wait their
// turn behind a follow under way is on her own from then on: the follow
// under way lands, and the steps that waited do not move her run.
func TestBreakingAwayDropsTheFollowsStillQueued(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		push bool
		want int
	}{
		{"a step", false, 1},
		{"a push", true, 3}, // a push takes even one on their own
	} {
		t.Run(c.name, func(t *testing.T) {
			m := attendee(t)
			// The presenter's first step: its follow runs, and its result
			// is held back here, as a slow server would.
			nm, underWay := m.Update(leadTo(1, 1055, false))
			m = nm.(Model)
			if !m.Busy() {
				t.Fatal("a lead to follow did not start a follow")
			}
			// Two more steps (or a push) arrive meanwhile and wait.
			for _, l := range []LeadMsg{leadTo(2, 1060, false), leadTo(3, 1070, c.push)} {
				nm, _ = m.Update(l)
				m = nm.(Model)
			}
			if len(m.queue) == 0 {
				t.Fatal("the later leads did not wait behind the follow under way")
			}
			m = send(t, m, keyMsg("F"))
			if m.Room.Following {
				t.Fatal("F did not break away")
			}
			for _, msg := range runCmd(underWay) {
				m = send(t, m, msg)
			}
			if m.Busy() || len(m.queue) > 0 {
				t.Fatalf("still busy (%q) with %d queued", m.Running, len(m.queue))
			}
			if got := m.Snap.View.Pos; got != c.want {
				t.Errorf("on her own after the follow under way, she is at position %d, want %d", got, c.want)
			}
			if got := m.run.View().Pos; got != c.want {
				t.Errorf("her run is at position %d, want %d", got, c.want)
			}
		})
	}
}
