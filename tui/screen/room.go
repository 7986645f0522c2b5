package screen

import (
	"fmt"
	"sort"
	"strings"

	"github.com/leaserace/leaserace/engine/room/board"
	"github.com/leaserace/leaserace/tui/text"
)

// Room is what the screen shows of the TUI's part in a room. It is
// copied on every change, never changed in place.
type Room struct {
	Presenter bool
	// Following: the attendee's run goes where the presenter's goes.
	Following bool
	// Board is the presenter's view of the room; ShowBoard shows it.
	Board     *board.Board
	ShowBoard bool
}

// roomLine is the header's word on the room: following or on one's own,
// or how many attendees the presenter leads.
func (m Screen) roomLine() []text.Span {
	r := m.Room
	if r == nil {
		return nil
	}
	if r.Presenter {
		n := 0
		if r.Board != nil {
			n = len(r.Board.Seats)
		}
		return []text.Span{text.Styled(&m.Styles.Title, "presenting"), text.Plain(fmt.Sprintf(" to %d attendees · b board · P push to all", n))}
	}
	if r.Following {
		return []text.Span{text.Styled(&m.Styles.Good, "following the presenter"), text.Plain(" · F to go on your own")}
	}
	return []text.Span{text.Styled(&m.Styles.Warn, "on your own"), text.Plain(" · F to follow the presenter again")}
}

// boardLines is the presenter's room board: who is where, the votes and
// the goals reached.
func (m Screen) boardLines(w int) []string {
	st := m.Styles
	b := m.Room.Board
	if b == nil {
		return text.Wrap([]text.Span{text.Styled(&st.Faint, "No one in the room yet.")}, w, "", "")
	}
	out := text.Wrap([]text.Span{text.Styled(&st.Title, "Room "+b.Room), text.Plain(fmt.Sprintf(": %d attendees", len(b.Seats)))}, w, "", "")
	for _, s := range b.Seats {
		where := fmt.Sprintf("%s %s t=%d (event %d)", s.Scenario, s.Knobs, s.T, s.Pos)
		mode := "following"
		if !s.Following {
			mode = "on their own"
		}
		out = append(out, text.Wrap([]text.Span{text.Styled(&st.Value, "  "+s.Name), text.Plain(" · " + where + " · " + mode), text.Styled(&st.Faint, " · "+s.Server)}, w, "", "    ")...)
	}
	qs := make([]string, 0, len(b.Votes))
	for q := range b.Votes {
		qs = append(qs, q)
	}
	sort.Strings(qs)
	for _, q := range qs {
		var parts []string
		choices := make([]string, 0, len(b.Votes[q]))
		for c := range b.Votes[q] {
			choices = append(choices, c)
		}
		sort.Strings(choices)
		for _, c := range choices {
			parts = append(parts, fmt.Sprintf("%s %d", c, b.Votes[q][c]))
		}
		out = append(out, text.Wrap([]text.Span{text.Styled(&st.Title, "Votes"), text.Plain(" " + q + ": " + strings.Join(parts, " · "))}, w, "", "    ")...)
	}
	gs := make([]string, 0, len(b.Goals))
	for g := range b.Goals {
		gs = append(gs, g)
	}
	sort.Strings(gs)
	for _, g := range gs {
		out = append(out, text.Wrap([]text.Span{text.Styled(&st.Title, "Goal"), text.Plain(fmt.Sprintf(" %s: reached by %d", g, b.Goals[g]))}, w, "", "    ")...)
	}
	return out
}
