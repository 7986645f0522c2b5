// Package room keeps a workshop room's shared state in PostgreSQL, in
// tables of the room's own schema: where the presenter is, who is seated
// and where each attendee is, their predictions and the goals they
// reached. LISTEN/NOTIFY carries every change to every process serving
// the room, so any number of serve processes on one PostgreSQL form one
// room.
package room

import "github.com/leaserace/leaserace/engine/room/board"

// The room's shared state is board's data; room stores it and carries
// every change.
type (
	Lead  = board.Lead
	Seat  = board.Seat
	Vote  = board.Vote
	Board = board.Board
)
