package export

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
)

// Session is what a TUI session adds to the transcript of the run on
// screen when e exports it: the presenter's log, the questions' tally
// and, for a played run, the goals the session reached.
type Session struct {
	Presenter []transcript.PresenterEntry
	Asks      transcript.AskTally
	// Playing is set in play mode: the files list the run's goals even
	// when it kept to the script.
	Playing bool
	// Reached is every goal the session reached, first under each
	// setting: those reached under another setting than the run's are
	// listed too.
	Reached []Reached
	// Par adds par to goal records of one setting; nil leaves them
	// without.
	Par func(ctx context.Context, sc *scenario.Scenario, recs []transcript.GoalRecord) []transcript.GoalRecord
}

// Reached is a goal a session reached: of which scenario, and its record
// (the setting, the moves that reached it).
type Reached struct {
	Scenario string
	Goal     transcript.GoalRecord
}

// Write writes tr, run of sc, with what the session adds, in every format
// into dir (see Files). For a played run, what says in words which run
// the files hold; it is "" otherwise.
func (s Session) Write(ctx context.Context, tr transcript.Transcript, sc *scenario.Scenario, dir string, now time.Time, noColor bool) (paths []string, what string, err error) {
	tr.Presenter = s.Presenter
	if s.Asks.Asked > 0 {
		asks := s.Asks
		tr.Asks = &asks
	}
	if s.Playing || tr.Played != nil {
		what = s.played(ctx, sc, &tr)
	}
	paths, err = Files(ctx, tr, dir, now, noColor)
	return paths, what, err
}

// played fills in the transcript's goals: the run's own against par, and
// those reached in this session under other settings.
func (s Session) played(ctx context.Context, sc *scenario.Scenario, tr *transcript.Transcript) string {
	par := s.Par
	if par == nil {
		par = func(_ context.Context, _ *scenario.Scenario, recs []transcript.GoalRecord) []transcript.GoalRecord {
			return recs
		}
	}
	p := engine.PlayedOf(sc, tr)
	p.Goals = par(ctx, sc, world.GoalRecords(sc, tr.Knobs, tr.Steps))
	var mine, others []string
	for _, g := range p.Goals {
		if g.Reached {
			mine = append(mine, g.ID)
		}
	}
	for _, g := range s.Reached {
		if g.Scenario == sc.Name && g.Goal.Knobs != tr.Knobs && !slices.Contains(mine, g.Goal.ID) {
			p.Elsewhere = append(p.Elsewhere, par(ctx, sc, []transcript.GoalRecord{g.Goal})...)
			others = append(others, fmt.Sprintf("%s under %s", g.Goal.ID, g.Goal.Knobs))
		}
	}
	what := fmt.Sprintf("the run on screen (%s, ", tr.Knobs)
	if len(mine) > 0 {
		what += "reached " + strings.Join(mine, ", ") + ")"
	} else {
		what += "no goal reached)"
	}
	if len(others) > 0 {
		what += "; also listed: " + strings.Join(others, ", ") + ", reached by another run"
	}
	return what
}

// ShortPaths names exported files short enough for a status line: the
// first in full, the others by what differs ("… .json, .md, .mmd and
// .cast").
func ShortPaths(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	first := paths[0]
	stem := strings.TrimSuffix(first, filepath.Ext(first))
	parts := []string{first}
	for _, p := range paths[1:] {
		if rest, ok := strings.CutPrefix(p, stem); ok {
			parts = append(parts, rest)
		} else {
			parts = append(parts, p)
		}
	}
	if len(parts) == 1 {
		return first
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
