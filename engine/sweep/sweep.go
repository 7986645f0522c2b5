// Package sweep is a sweep's result as data: the named times varied, and
// each variant's effects and verdict under each knob setting. engine/batch
// runs the sweep (leaserace explore); the explore map draws its result
// without the engine.
package sweep

import (
	"time"

	"github.com/leaserace/leaserace/scenario"
)

// Vary is one named time swept over an inclusive range.
type Vary struct {
	Name string `json:"name"`
	From int64  `json:"from"`
	To   int64  `json:"to"`
}

// Cell is one variant under one knob setting.
type Cell struct {
	Renewal scenario.Renewal `json:"renewal"`
	Fencing scenario.Fencing `json:"fencing"`
	Values  map[string]int64 `json:"values"`
	Effects int              `json:"effects"`
	Verdict string           `json:"verdict"`
}

// Result is a whole sweep.
type Result struct {
	Scenario string        `json:"scenario"`
	Vary     []Vary        `json:"vary"`
	Cells    []Cell        `json:"cells"`
	Took     time.Duration `json:"-"`
}
