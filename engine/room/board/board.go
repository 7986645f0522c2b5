// Package board is a workshop room's shared state as data: where the
// presenter is, who is seated and where, and the room at a glance. The
// room package keeps it in PostgreSQL; the renderer draws it without
// that store.
package board

import (
	"time"

	"github.com/leaserace/leaserace/scenario"
)

// Lead is where the presenter is: the scenario (by name), the knobs and
// the cursor. Push marks a lead every attendee takes, even one who broke
// away; Seq orders leads.
type Lead struct {
	Scenario string         `json:"scenario"`
	Knobs    scenario.Knobs `json:"knobs"`
	Pos      int            `json:"pos"`
	T        int64          `json:"t"`
	Push     bool           `json:"push,omitempty"`
	Seq      int64          `json:"seq"`
}

// Seat is one attendee as the board shows them.
type Seat struct {
	// ID is the seat's own, unique across serve processes; Name the
	// attendee's SSH user name; Server names the serve process.
	ID     string `json:"id"`
	Name   string `json:"name"`
	Server string `json:"server"`
	// Where the attendee's own run is.
	Scenario  string         `json:"scenario"`
	Knobs     scenario.Knobs `json:"knobs"`
	Pos       int            `json:"pos"`
	T         int64          `json:"t"`
	Following bool           `json:"following"`
	Joined    time.Time      `json:"joined"`
	Seen      time.Time      `json:"seen"`
}

// Vote is one attendee's prediction for one question.
type Vote struct {
	Seat string `json:"seat"`
	// Question names the question: scenario, time and text.
	Question string `json:"question"`
	Choice   string `json:"choice"`
}

// Board is the room at a glance, for the presenter.
type Board struct {
	Room  string `json:"room"`
	Lead  *Lead  `json:"lead,omitempty"`
	Seats []Seat `json:"seats"`
	// Votes tallies each question's choices: question → choice → count.
	Votes map[string]map[string]int `json:"votes"`
	// Goals counts the attendees who reached each goal: "scenario/goal" → count.
	Goals map[string]int `json:"goals"`
}
