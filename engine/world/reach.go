package world

import (
	"math/big"
	"time"

	"github.com/leaserace/leaserace/scenario"
)

// SearchResult is every schedule of a scenario's moves under one knob
// setting, explored on the server.
type SearchResult struct {
	Scenario string
	Knobs    scenario.Knobs
	// States is how many different states the search reached, the initial
	// one included; Moves how many moves it played to find them (the
	// edges of the graph: each a real statement or write where the move
	// has one).
	States, Moves int
	// Restores is how many times the search put the server back into a
	// state with SQL before a move.
	Restores int
	// Runs counts the complete runs: the different move lists from the
	// initial state to a state where only the clock can move. Conflict,
	// Blocked and Safe split them by verdict.
	Runs, Conflict, Blocked, Safe *big.Int
	// ShortestConflict and ShortestBlocked are the shortest move lists
	// after which the run's verdict is conflict (blocked); nil when no
	// run reaches that verdict.
	ShortestConflict, ShortestBlocked []scenario.Move
	// Goals is, for each of the scenario's goals in order, whether a run
	// reaches it under these knobs and the fewest moves that do.
	Goals []GoalReach
	// Took is how long the search ran; Cached is set when this call
	// answered from memory (Took is then the original search's).
	Took   time.Duration
	Cached bool
}

// GoalReach is what the search found about one goal under one setting.
type GoalReach struct {
	Goal scenario.Goal
	// Runs is how many complete runs reach the goal, out of the result's
	// Runs; zero means the goal is impossible under these knobs.
	Runs *big.Int
	// Par is the fewest moves that reach it (0 when none does) and Moves
	// one such move list.
	Par   int
	Moves []scenario.Move
	// Cut, for a goal no run reaches, names the move that cuts every path
	// to it, from what the search's moves answered (Cuts.Cut); "" when
	// the goal is reachable or the answers say nothing specific.
	Cut string
}

// Reachable reports whether any run reaches the goal.
func (g GoalReach) Reachable() bool { return g.Par > 0 }
