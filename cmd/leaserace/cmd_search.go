package main

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/search"
	"github.com/leaserace/leaserace/scenario"
)

// explore --orders is the command line's face of the schedule search
// (engine/search): searchSchedules runs it, searchJSON and writeSearchTable
// print it.

// searchJSON is explore --orders's JSON: exactly the fields the README
// documents.
type searchJSON struct {
	Scenario string            `json:"scenario"`
	Settings []searchSettingJS `json:"settings"`
}

type searchSettingJS struct {
	Renewal  scenario.Renewal `json:"renewal"`
	Fencing  scenario.Fencing `json:"fencing"`
	States   int              `json:"states"`
	Runs     *big.Int         `json:"runs"`
	Conflict *big.Int         `json:"conflict"`
	Blocked  *big.Int         `json:"blocked"`
	Safe     *big.Int         `json:"safe"`
	Shortest searchShortestJS `json:"shortest"`
}

// searchShortestJS holds each shortest move list's text form, or null.
type searchShortestJS struct {
	Conflict *string `json:"conflict"`
	Blocked  *string `json:"blocked"`
}

func movesOrNull(log []scenario.Move) *string {
	if log == nil {
		return nil
	}
	s := scenario.FormatMoves(log)
	return &s
}

func (a *app) searchSchedules(ctx context.Context, f exploreFlags) error {
	switch {
	case f.format != "text" && f.format != "json":
		return cli.UsageErr("--format %q: with --orders, want text or json", f.format)
	case len(f.vary) > 0:
		return cli.UsageErr("--vary sweeps a time; --orders explores every order of the moves at the scenario's own times: give one or the other")
	}
	sc, err := cli.LoadScenario(f.scenario)
	if err != nil {
		return err
	}
	srv, err := a.StartPG(ctx, &f.pg)
	if err != nil {
		return err
	}
	defer a.CloseServer(srv)

	searcher := search.New(search.Config{DSN: srv.DSN})
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engine.CloseTimeout)
		defer cancel()
		if err := searcher.Close(cctx); err != nil {
			a.Warnf("%s", err)
		}
	}()
	counter := cli.NewStateCounter(a.Stderr, "explore --orders "+sc.Name)
	start := time.Now()
	rs, err := searcher.SearchAll(ctx, sc, counter.Update)
	took := time.Since(start)
	counter.Finish()
	if err != nil {
		if cli.Interrupted(ctx, err) {
			return err
		}
		return fmt.Errorf("exploring the orders of %s: %w", sc.Name, err)
	}
	states := 0
	for _, r := range rs {
		states += r.States
	}
	a.Infof("%d states of %s under six settings in %s (%.0f states/s)", states, sc.Name, took.Round(time.Millisecond), float64(states)/max(took.Seconds(), 1e-9))
	if f.format == "json" {
		out := searchJSON{Scenario: sc.Name, Settings: []searchSettingJS{}}
		for _, r := range rs {
			out.Settings = append(out.Settings, searchSettingJS{
				Renewal: r.Knobs.Renewal, Fencing: r.Knobs.Fencing, States: r.States,
				Runs: r.Runs, Conflict: r.Conflict, Blocked: r.Blocked, Safe: r.Safe,
				Shortest: searchShortestJS{Conflict: movesOrNull(r.ShortestConflict), Blocked: movesOrNull(r.ShortestBlocked)},
			})
		}
		return cli.WriteJSON(a.Stdout, out)
	}
	return writeSearchTable(a.Stdout, sc, rs)
}

// writeSearchTable is explore --orders for a person: a table of the
// counts, then the shortest move lists, and how to play one.
func writeSearchTable(w io.Writer, sc *scenario.Scenario, rs []search.Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: every order of its moves, each move run on the server, under each knob setting\n\n", sc.Name)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	// The numbers align right; the setting, padded here, reads left.
	w0 := len("setting")
	for _, r := range rs {
		w0 = max(w0, len(r.Knobs.String()))
	}
	fmt.Fprintf(tw, "%-*s\tstates\truns\tconflict\tblocked\tsafe\t\n", w0, "setting")
	for _, r := range rs {
		fmt.Fprintf(tw, "%-*s\t%d\t%s\t%s\t%s\t%s\t\n", w0, r.Knobs, r.States, r.Runs, r.Conflict, r.Blocked, r.Safe)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("cannot write the table: %w", err)
	}
	var play string
	section := func(title, what string, pick func(search.Result) []scenario.Move) {
		fmt.Fprintf(&b, "\n%s:\n", title)
		var none []string
		for _, r := range rs {
			log := pick(r)
			if log == nil {
				none = append(none, r.Knobs.String())
				continue
			}
			n := "moves"
			if len(log) == 1 {
				n = "move"
			}
			fmt.Fprintf(&b, "  %-18s %d %s: %s\n", r.Knobs, len(log), n, scenario.FormatMoves(log))
			if play == "" {
				play = fmt.Sprintf("leaserace run --scenario %s --renewal %s --fencing %s --moves '%s'", sc.Name, r.Knobs.Renewal, r.Knobs.Fencing, scenario.FormatMoves(log))
			}
		}
		switch {
		case len(none) == len(rs):
			fmt.Fprintf(&b, "  none: no order of the moves %s under any setting\n", what)
		case len(none) > 0:
			fmt.Fprintf(&b, "  none under %s: no order of the moves %s there\n", strings.Join(none, ", "), what)
		}
	}
	section("Shortest move list to a conflict (a stale write accepted)", "accepts a stale write", func(r search.Result) []scenario.Move { return r.ShortestConflict })
	section("Shortest move list to a blocked write (a valid write refused)", "refuses a valid write", func(r search.Result) []scenario.Move { return r.ShortestBlocked })
	b.WriteString("\nA run is complete when only the clock could move; runs count the different move lists.\n")
	if play != "" {
		fmt.Fprintf(&b, "Play one, under any knobs:\n  %s\n", play)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("cannot write the table: %w", err)
	}
	return nil
}
