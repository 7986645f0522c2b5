package workshop

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/tui"
)

// heldRoom takes seat reports one answer at a time: each report waits
// for the test to say how it fares.
type heldRoom struct {
	answers chan error
	tried   []int
	landed  []int
}

func (h *heldRoom) report(ctx context.Context, s room.Seat) error {
	h.tried = append(h.tried, s.Pos)
	select {
	case err := <-h.answers:
		if err == nil {
			h.landed = append(h.landed, s.Pos)
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestReportOnItsWayInABubble, in a testing/synctest bubble: a seat on
// its way counts as waiting until it lands; newer seats merge into one
// waiting behind it; a try that fails is made again with the newest seat
// if one replaced it meanwhile, or with the same one if none did; and the
// room's figures count one report waiting through all of it.
func TestReportOnItsWayInABubble(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := &heldRoom{answers: make(chan error)}
		var stats Backlog
		var notes []tea.Msg
		q := newReportsVia(nil, h.report, func(m tea.Msg) { notes = append(notes, m) }, &stats)
		defer q.stop()
		ctx := context.Background()
		busy := errors.New("the room is busy")
		seat := func(pos int) {
			if err := q.Report(ctx, room.Seat{ID: "s1", Pos: pos}); err != nil {
				t.Fatal(err)
			}
		}

		seat(1)
		synctest.Wait() // seat 1 is on its way
		for pos := 2; pos <= 5; pos++ {
			seat(pos)
		}
		if d := q.Depth(); d != 1 {
			t.Errorf("%d reports wait with seat 1 on its way and seats 2-5 behind it, want 1", d)
		}
		h.answers <- busy // seat 1 fails; the retry sends seat 5
		synctest.Wait()
		h.answers <- nil
		synctest.Wait()
		seat(6)
		synctest.Wait()
		h.answers <- busy // seat 6 fails; nothing replaced it: tried again
		synctest.Wait()
		h.answers <- nil
		synctest.Wait()
		if want := []int{1, 5, 6, 6}; !slices.Equal(h.tried, want) {
			t.Errorf("tried %v, want %v", h.tried, want)
		}
		if want := []int{5, 6}; !slices.Equal(h.landed, want) {
			t.Errorf("landed %v, want %v", h.landed, want)
		}
		st := stats.Stats()
		if q.Depth() != 0 || st.Waiting != 0 || st.MaxWaiting != 1 || st.MaxDepth != 1 || st.Retries != 2 || st.Landed != 2 {
			t.Errorf("after it all: %d waiting, figures %+v; want none waiting, at most one, 2 retries, 2 landed", q.Depth(), st)
		}
		if len(notes) != 0 {
			t.Errorf("the screen heard %v from retries well within the outage bound", notes)
		}

		// A report refused for good is said, and not tried again.
		seat(7)
		synctest.Wait()
		h.answers <- room.ErrNoSeat
		synctest.Wait()
		if len(notes) != 1 || !notes[0].(tui.RoomNoticeMsg).Lost || q.Depth() != 0 {
			t.Errorf("a refused report: the screen heard %v with %d waiting; want it lost, none waiting", notes, q.Depth())
		}
	})
}
