package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/tui/exploremap"
	"github.com/spf13/cobra"
)

type exploreFlags struct {
	scenario string
	vary     []string
	format   string
	orders   bool
	pg       cli.PGFlags
}

func newExploreCmd(a *app) *cobra.Command {
	var f exploreFlags
	cmd := &cobra.Command{
		Use:   "explore",
		Short: "Map where each knob setting loses safety as the race's times move",
		Long: `Explore re-runs a scenario against PostgreSQL for every value of one or more
of its named times, under all six knob settings, and prints a map: one row per
setting, one column per value, each cell the verdict and the number of effects
the resource accepted.

  ✓1  safe: 1 effect accepted, none with an older fence after one with a newer fence
  ✗2  conflict: 2 effects accepted, one with an older fence after one with a newer fence

Without --vary it sweeps A's heartbeat arrival over the scenario's window.
Each --vary NAME=FROM..TO sweeps one named time (see "leaserace scenarios"
for a scenario's times); with two, there is one map per value of the first.
Below each map, words say where each setting conflicts, so the map reads the
same without colour (NO_COLOR, or output that is not a terminal).

json: {"scenario","vary":[...],"cells":[{"renewal","fencing","values","effects","verdict"}]}
csv:  renewal,fencing,<each varied name>,effects,verdict
Progress goes to standard error.

With --orders it asks another question: is there any order of events that
breaks this? It explores the scenario's move graph from its initial state,
under each of the six settings, on the server: from each state, every move
the scenario allows now (each of its events not played yet, once, at the
current time; delivering or dropping each message in flight; the clock
moving on to the next time that matters) runs its real SQL or HTTP write.
Equal states are explored once. A run is complete when only the clock could
move. Per setting it counts the states, the complete runs and how many end
in conflict, blocked and safe, and gives the shortest move list that reaches
a conflict and a blocked write, ready for "leaserace run --moves".

json (--orders): {"scenario","settings":[{"renewal","fencing","states","runs",
"conflict","blocked","safe","shortest":{"conflict":MOVES|null,"blocked":MOVES|null}}]}
where MOVES is a move list's text form, e.g. "A:send hb1@1055,clock:advance@1060".`,
		Example: `  # A's late heartbeat, every arrival time in the window
  leaserace explore --scenario renewal-race

  # Move B's takeover too: one map per takeover time
  leaserace explore --vary takeover=1065..1075 --vary arrival=1060..1090

  # For a spreadsheet
  leaserace explore --format csv > map.csv

  # Every order of renewal-race's moves under each setting, and the
  # shortest schedule that breaks each one
  leaserace explore --orders --scenario renewal-race

  # The same for tools; then play the conflict it found
  leaserace explore --orders --format json > orders.json
  leaserace run --renewal blind --fencing off \
    --moves "$(jq -r '.settings[0].shortest.conflict' orders.json)"`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.explore(cmd.Context(), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.scenario, "scenario", "renewal-race", "a built-in scenario's name or a scenario YAML file")
	fs.StringArrayVar(&f.vary, "vary", nil, "sweep a named time, NAME=FROM..TO (repeatable; default arrival over the window)")
	fs.StringVar(&f.format, "format", "text", "output: text (a map), json or csv; with --orders text (a table) or json")
	fs.BoolVar(&f.orders, "orders", false, "explore every order of the scenario's moves under each setting, instead of sweeping a time")
	f.pg.Register(fs, a.Getenv)
	return cmd
}

func (a *app) explore(ctx context.Context, f exploreFlags) error {
	if f.orders {
		return a.searchSchedules(ctx, f)
	}
	switch f.format {
	case "text", "json", "csv":
	default:
		return cli.UsageErr("--format %q: want text, json or csv", f.format)
	}
	sc, err := cli.LoadScenario(f.scenario)
	if err != nil {
		return err
	}
	var vary []batch.Vary
	for _, s := range f.vary {
		v, err := batch.ParseVary(s)
		if err != nil {
			return cli.WithCode(cli.ExitUsage, err)
		}
		vary = append(vary, v)
	}
	if len(vary) == 0 {
		if vary, err = batch.DefaultVary(sc); err != nil {
			return cli.WithCode(cli.ExitUsage, err)
		}
	}
	// A sweep that cannot run fails here, before any server starts.
	if err := batch.CheckVary(sc, vary); err != nil {
		return cli.UsageErr("--vary: %w", err)
	}
	srv, err := a.StartPG(ctx, &f.pg)
	if err != nil {
		return err
	}
	defer a.CloseServer(srv)

	bar := cli.NewProgressBar(a.Stderr, "explore "+sc.Name, "cells")
	res, err := batch.Explore(ctx, srv.DSN, sc, vary, bar.Update)
	bar.Finish()
	if err != nil {
		if cli.Interrupted(ctx, err) {
			return err
		}
		return fmt.Errorf("exploring %s: %w", sc.Name, err)
	}
	a.Infof("%d runs of %s in %s", len(res.Cells), sc.Name, res.Took.Round(time.Millisecond))
	switch f.format {
	case "json":
		return cli.WriteJSON(a.Stdout, res)
	case "csv":
		return writeExploreCSV(a.Stdout, res)
	}
	return exploremap.Write(a.Stdout, res, exploremap.Options{
		Color: !a.NoColor() && cli.IsTerminal(a.Stdout),
		Width: cli.TerminalWidth(a.Stdout, a.Getenv),
		Light: cli.LightBackground(a.Getenv),
	})
}

func writeExploreCSV(w io.Writer, res batch.ExploreResult) error {
	cw := csv.NewWriter(w)
	head := []string{"renewal", "fencing"}
	for _, v := range res.Vary {
		head = append(head, v.Name)
	}
	_ = cw.Write(append(head, "effects", "verdict"))
	for _, c := range res.Cells {
		row := []string{string(c.Renewal), string(c.Fencing)}
		for _, v := range res.Vary {
			row = append(row, strconv.FormatInt(c.Values[v.Name], 10))
		}
		_ = cw.Write(append(row, strconv.Itoa(c.Effects), c.Verdict))
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("cannot write the CSV: %w", err)
	}
	return nil
}
