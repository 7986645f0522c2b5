package engine

import (
	"context"

	"github.com/leaserace/leaserace/scenario"
)

// Stepper is what a user interface steps through: a live Run against
// PostgreSQL, or a Replay of recorded transcripts that needs no database.
// Implementations serialise their own calls, so a UI may call them from
// background commands.
type Stepper interface {
	// Next takes the next event and returns its step; ErrEnd after the last.
	Next(ctx context.Context) (Step, error)
	// Seek moves to just after n events.
	Seek(ctx context.Context, n int) error
	// SeekTime moves the cursor to logical time t, every event at or
	// before t taken.
	SeekTime(ctx context.Context, t int64) error
	// SetKnobs switches the settings and returns to the same position.
	SetKnobs(ctx context.Context, k scenario.Knobs) (Change, error)
	// View is the state at the cursor.
	View() View
	// Steps are the steps taken so far.
	Steps() []Step
	// Transcript is the run so far, with its digest.
	Transcript() (Transcript, error)

	Start() int64
	End() int64
	Len() int
	Pos() int
	Now() int64
	Scenario() *scenario.Scenario
	// Schema is the run's schema on the server; "" when there is none.
	Schema() string
	Knobs() scenario.Knobs

	// Reconnect dials again after the server went away and returns to the
	// same position; a Replay has nothing to reconnect.
	Reconnect(ctx context.Context) error
	// Close releases whatever the stepper holds on a server.
	Close(ctx context.Context) error
}

var (
	_ Stepper = (*Run)(nil)
	_ Stepper = (*Replay)(nil)
)
