package scenario

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Goal is something a learner playing the network tries to make happen.
type Goal struct {
	// ID is short and stable: lowercase letters, digits and dashes.
	ID string
	// Text says the goal in a person's words, for the goal panel.
	Text string
	// When is the one predicate that says the goal is reached.
	When Predicate
	// Pos is "line:column" of the goal in its file; "" for a default goal.
	Pos string
}

// Predicate is a fact about a run that a goal waits for. Each is reached
// at the first step after which it holds, and stays reached.
type Predicate string

const (
	// GoalConflict: the resource accepted a stale write (a write Judge
	// calls JudgedConflict; the run's verdict is VerdictConflict).
	GoalConflict Predicate = "conflict"
	// GoalBlocked: the resource refused a valid write (a write Judge calls
	// JudgedBlocked).
	GoalBlocked Predicate = "blocked"
	// GoalTwoHolders: after some step, two actors both believe they hold
	// the lease at that step's time (each one's belief names it as owner
	// and has not expired).
	GoalTwoHolders Predicate = "two-holders"
	// GoalResurrected: a step left the coordinator's row with a lower
	// fence than the row had before it; a stale owner came back.
	GoalResurrected Predicate = "resurrected"
	// GoalStaleRenewal: a heartbeat delivery changed the row (one row)
	// although the lease it carried was no longer current when it arrived.
	GoalStaleRenewal Predicate = "stale-renewal"
	// GoalZeroRows: a heartbeat delivery, a compare-and-renew, answered
	// zero rows: the coordinator refused a stale renewal.
	GoalZeroRows Predicate = "zero-rows"
)

// Predicates lists every predicate a goal may use.
func Predicates() []Predicate {
	return []Predicate{GoalConflict, GoalBlocked, GoalTwoHolders, GoalResurrected, GoalStaleRenewal, GoalZeroRows}
}

// DefaultGoals are the goals of a scenario whose file has none.
func DefaultGoals() []Goal {
	return []Goal{
		{ID: "stale-write", Text: "The resource accepts a stale write", When: GoalConflict},
		{ID: "valid-write-lost", Text: "A valid write is refused", When: GoalBlocked},
		{ID: "two-holders", Text: "Two actors both believe they hold the lease", When: GoalTwoHolders},
	}
}

// Goals lists the scenario's goals: its file's own, or DefaultGoals when
// the file has none. The slice is the caller's to keep.
func (s *Scenario) Goals() []Goal {
	if len(s.goals) == 0 {
		return DefaultGoals()
	}
	return slices.Clone(s.goals)
}

// MaxGoals bounds a scenario's goals, so the goal panel fits a screen.
const MaxGoals = 12

var goalIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

type fileGoal struct {
	ID   string `yaml:"id"`
	Text string `yaml:"text"`
	When string `yaml:"when"`
}

// goalList checks the file's goals.
func (f *file) goalList() ([]Goal, error) {
	if len(f.Goals) > MaxGoals {
		return nil, f.errAt("$.goals", "%d goals; at most %d", len(f.Goals), MaxGoals)
	}
	var out []Goal
	seen := map[string]int{}
	for i, fg := range f.Goals {
		p := fmt.Sprintf("$.goals[%d]", i)
		g := Goal{ID: fg.ID, Text: strings.TrimSpace(fg.Text), When: Predicate(fg.When)}
		if l, c := f.at(p); l > 0 {
			g.Pos = fmt.Sprintf("%d:%d", l, c)
		}
		if !goalIDRE.MatchString(g.ID) {
			return nil, f.errAt(p+".id", "goal %d: id %q: want lowercase letters, digits and dashes, 1-32 characters, such as stale-write", i, fg.ID)
		}
		if j, dup := seen[g.ID]; dup {
			return nil, f.errAt(p+".id", "goal %d: id %s is goal %d's already; give each goal its own", i, g.ID, j)
		}
		seen[g.ID] = i
		if g.Text == "" {
			return nil, f.errAt(p, "goal %d: needs text: the goal in words, such as \"The resource accepts a stale write\"", i)
		}
		if err := plainText(g.Text, MaxQuestionRunes); err != nil {
			return nil, f.errAt(p+".text", "goal %d: text %v", i, err)
		}
		if !slices.Contains(Predicates(), g.When) {
			var names []string
			for _, w := range Predicates() {
				names = append(names, string(w))
			}
			return nil, f.errAt(p+".when", "goal %d: when %q: want one of %s", i, fg.When, joinWords(names, "or"))
		}
		out = append(out, g)
	}
	return out, nil
}
