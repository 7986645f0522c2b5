package htmlpage

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/search"
	"github.com/leaserace/leaserace/engine/search/searchtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
)

// Played runs in the browser: for every built-in scenario under all six
// settings, each shortest schedule explore --orders finds (to a conflict,
// to a blocked write, to each goal; searchtest's recording of it) is
// played live on PostgreSQL, given
// its goals against par as run --moves gives them, and its page is opened
// and checked like a scripted run's, and for its goals and par. Heavy:
// only with LEASERACE_BROWSER_ALL=1 (CI's browser phase).
func TestPlayedPagesInBrowser(t *testing.T) {
	if os.Getenv(envBrowserAll) != "1" {
		t.Skipf("played runs' pages are opened in the browser only with %s=1 (CI's browser phase)", envBrowserAll)
	}
	// Its pages open beside TestPageInBrowser's.
	t.Parallel()
	browser := newBrowser(t)
	dsn := pgtest.DSN(t)
	// Cleanup, not defer: the parallel subtests run after this function
	// returns, and still play on ctx.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	t.Cleanup(cancel)
	dir := t.TempDir()
	scs, err := scenario.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scs {
		// What explore --orders finds, as recorded (engine/search's
		// TestRecordedSearchesMatchLiveOnes keeps the recording true).
		for _, res := range searchtest.Results(t, sc) {
			for i, moves := range shortestSchedules(res) {
				name := fmt.Sprintf("%s/%s/%d", sc.Name, res.Knobs, i)
				t.Run(name, func(t *testing.T) {
					// Each plays on a run of its own and opens its page
					// in a tab of its own; they start once the loop has
					// named them all.
					t.Parallel()
					tr := playSchedule(t, ctx, dsn, sc, res, moves)
					file := writePage(t, dir, strings.ReplaceAll(name, "/", "-"), tr)
					page, err := os.ReadFile(file)
					if err != nil {
						t.Fatal(err)
					}
					checkPlayedGoals(t, tr, string(page))
					browse(t, browser, file, tr)
				})
			}
		}
	}
}

// shortestSchedules are the search's shortest move lists, each once.
func shortestSchedules(res search.Result) [][]scenario.Move {
	var out [][]scenario.Move
	seen := map[string]bool{}
	add := func(m []scenario.Move) {
		if key := scenario.FormatMoves(m); len(m) > 0 && !seen[key] {
			seen[key] = true
			out = append(out, m)
		}
	}
	add(res.ShortestConflict)
	add(res.ShortestBlocked)
	for _, g := range res.Goals {
		add(g.Moves)
	}
	return out
}

// playSchedule plays the moves live and gives the transcript its goals
// against par, as run --moves does.
func playSchedule(t *testing.T, ctx context.Context, dsn string, sc *scenario.Scenario, res search.Result, moves []scenario.Move) transcript.Transcript {
	t.Helper()
	run, err := engine.Open(ctx, engine.Config{DSN: dsn, Scenario: sc, Knobs: res.Knobs, Log: moves})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = run.Close(context.WithoutCancel(ctx)) }()
	if err := run.PlayAll(ctx); err != nil {
		t.Fatalf("playing %s: %v", scenario.FormatMoves(moves), err)
	}
	tr, err := run.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	engine.PlayedOf(sc, &tr).Goals = search.WithPar(res, world.GoalRecords(sc, res.Knobs, tr.Steps))
	return tr
}

// checkPlayedGoals: the page names each goal, reached ones with their
// moves, and par for every goal the search reaches.
func checkPlayedGoals(t *testing.T, tr transcript.Transcript, page string) {
	t.Helper()
	page = strings.ReplaceAll(page, "&#39;", "'")
	if !strings.Contains(page, "Goals of this played run") {
		t.Error("the page does not say it is a played run's")
	}
	for _, g := range tr.Played.Goals {
		i := strings.Index(page, fmt.Sprintf(`data-goal="%s"`, g.ID))
		if i < 0 {
			t.Errorf("goal %s is not on the page", g.ID)
			continue
		}
		item := page[i:]
		item = item[:strings.Index(item, "</li>")]
		if g.Reached && !strings.Contains(item, fmt.Sprintf("<b>reached</b> in %d moves", g.Moves)) {
			t.Errorf("goal %s reached in %d moves, but the page says %q", g.ID, g.Moves, item)
		}
		if g.Par != nil && g.Par.Moves > 0 && !strings.Contains(item, fmt.Sprintf("par %d", g.Par.Moves)) {
			t.Errorf("goal %s has par %d, but the page says %q", g.ID, g.Par.Moves, item)
		}
	}
	if !strings.Contains(page, tr.Moves) {
		t.Error("the page does not give the moves for run --moves")
	}
}
