// Package exploremap draws the verdict of a sweep (every knob setting at
// every value of a named time) as a map: the TUI's x overlay, with its
// cursor, and the text `leaserace explore` prints. Both draw the same
// cells and say the same legend, so they live together here.
package exploremap

import (
	"fmt"
	"strconv"
	"time"

	"github.com/leaserace/leaserace/engine/sweep"
	"github.com/leaserace/leaserace/scenario"
)

// Explorer is the x overlay: the verdict of every knob setting (rows) at
// every value of one named time (columns), with a cell cursor. It is a
// value like the model; Grid is never changed once built, so copies share it.
type Explorer struct {
	Open bool
	Grid *Grid
	// Row and Col are the cursor, indexes into Grid.Rows and Grid.Values.
	Row, Col int
}

// Grid is one sweep laid out as the overlay draws it. It is never changed
// once built.
type Grid struct {
	// Scenario and Source say which scenario was swept; a second x on the
	// same one reopens the grid without sweeping again, since a sweep sets
	// the varied time itself and the other times never change in the TUI.
	Scenario, Source string
	Vary             sweep.Vary
	Rows             []scenario.Knobs
	Values           []int64
	Cells            [][]sweep.Cell // [row][col]; Verdict "" = missing
	effW             int            // widest effect count, in digits
	took             time.Duration
}

// NewGrid lays out a sweep of sc over one varied time.
func NewGrid(sc *scenario.Scenario, res sweep.Result) (*Grid, error) {
	if len(res.Vary) != 1 {
		return nil, fmt.Errorf("the map shows one varied time, not %d", len(res.Vary))
	}
	v := res.Vary[0]
	g := &Grid{Scenario: sc.Name, Source: sc.Source, Vary: v, Rows: scenario.AllKnobs(), effW: 1, took: res.Took}
	for t := v.From; t <= v.To; t++ {
		g.Values = append(g.Values, t)
	}
	g.Cells = make([][]sweep.Cell, len(g.Rows))
	for i := range g.Cells {
		g.Cells[i] = make([]sweep.Cell, len(g.Values))
	}
	for _, c := range res.Cells {
		r := g.rowOf(scenario.Knobs{Renewal: c.Renewal, Fencing: c.Fencing})
		t, ok := c.Values[v.Name]
		if r < 0 || !ok || t < v.From || t > v.To {
			continue
		}
		g.Cells[r][t-v.From] = c
		g.effW = max(g.effW, len(strconv.Itoa(c.Effects)))
	}
	return g, nil
}

func (g *Grid) rowOf(k scenario.Knobs) int {
	for i, r := range g.Rows {
		if r == k {
			return i
		}
	}
	return -1
}

// colOf is t's column, -1 when t is outside the sweep.
func (g *Grid) colOf(t int64) int {
	if t < g.Vary.From || t > g.Vary.To {
		return -1
	}
	return int(t - g.Vary.From)
}

// Of reports whether the grid is a sweep of sc over v.
func (g *Grid) Of(sc *scenario.Scenario, v sweep.Vary) bool {
	return g != nil && g.Scenario == sc.Name && g.Source == sc.Source && g.Vary == v
}

// Current is the cell of the run on screen, which has knobs k and named
// times times: its knobs' row and its varied time's column (-1 when off
// the map).
func (e Explorer) Current(k scenario.Knobs, times map[string]int64) (row, col int) {
	g := e.Grid
	row, col = g.rowOf(k), -1
	if t, ok := times[g.Vary.Name]; ok {
		col = g.colOf(t)
	}
	return row, col
}
