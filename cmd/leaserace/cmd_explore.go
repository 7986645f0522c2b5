package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/tui/exploremap"
	"github.com/spf13/cobra"
)

type exploreFlags struct {
	scenario string
	vary     []string
	format   string
	orders   bool
	pg       pgFlags
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

  ✓1  safe: 1 effect accepted, none from an older epoch after a newer one
  ✗2  conflict: 2 effects accepted, one from an older epoch after a newer one

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
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.explore(cmd.Context(), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.scenario, "scenario", "renewal-race", "a built-in scenario's name or a scenario YAML file")
	fs.StringArrayVar(&f.vary, "vary", nil, "sweep a named time, NAME=FROM..TO (repeatable; default arrival over the window)")
	fs.StringVar(&f.format, "format", "text", "output: text (a map), json or csv; with --orders text (a table) or json")
	fs.BoolVar(&f.orders, "orders", false, "explore every order of the scenario's moves under each setting, instead of sweeping a time")
	f.pg.register(fs, a.getenv)
	return cmd
}

func (a *app) explore(ctx context.Context, f exploreFlags) error {
	if f.orders {
		return a.exploreOrders(ctx, f)
	}
	switch f.format {
	case "text", "json", "csv":
	default:
		return usageErr("--format %q: want text, json or csv", f.format)
	}
	sc, err := loadScenario(f.scenario)
	if err != nil {
		return err
	}
	var vary []batch.Vary
	for _, s := range f.vary {
		v, err := batch.ParseVary(s)
		if err != nil {
			return withCode(exitUsage, err)
		}
		vary = append(vary, v)
	}
	if len(vary) == 0 {
		if vary, err = batch.DefaultVary(sc); err != nil {
			return withCode(exitUsage, err)
		}
	}
	// A sweep that cannot run fails here, before any server starts.
	if err := batch.CheckVary(sc, vary); err != nil {
		return usageErr("--vary: %w", err)
	}
	srv, err := a.startPG(ctx, &f.pg)
	if err != nil {
		return err
	}
	defer a.closeServer(srv)

	bar := newProgressBar(a.stderr, "explore "+sc.Name, "cells")
	res, err := batch.Explore(ctx, srv.DSN, sc, vary, bar.update)
	bar.finish()
	if err != nil {
		if interrupted(ctx, err) {
			return err
		}
		return fmt.Errorf("exploring %s: %w", sc.Name, err)
	}
	a.infof("%d runs of %s in %s", len(res.Cells), sc.Name, res.Took.Round(time.Millisecond))
	switch f.format {
	case "json":
		return writeJSON(a.stdout, res)
	case "csv":
		return writeExploreCSV(a.stdout, res)
	}
	return exploremap.Write(a.stdout, res, exploremap.Options{
		Color: !a.noColor() && isTerminal(a.stdout),
		Width: terminalWidth(a.stdout, a.getenv),
		Light: lightBackground(a.getenv),
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

// lightBackground reads COLORFGBG ("fg;bg"), which many terminals set: a
// background of 7 or 15 is light. Without it, dark is the likelier guess.
func lightBackground(getenv func(string) string) bool {
	v := getenv("COLORFGBG")
	bg := v[strings.LastIndex(v, ";")+1:]
	return bg == "7" || bg == "15"
}

// terminalWidth is the width to wrap to: the terminal's, else $COLUMNS,
// else 80.
func terminalWidth(w io.Writer, getenv func(string) string) int {
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		if cols, _, err := term.GetSize(f.Fd()); err == nil && cols >= 40 {
			return cols
		}
	}
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n >= 40 {
		return n
	}
	return 80
}

// progressBar shows a command's progress on standard error: a bar redrawn
// in place on a terminal, a line every tenth of the way otherwise, so logs
// stay short.
type progressBar struct {
	w          io.Writer
	label      string
	unit       string
	tty        bool
	start      time.Time
	drawn      time.Time
	lastTenth  int
	done, tot  int
	wroteInTTY bool
}

func newProgressBar(w io.Writer, label, unit string) *progressBar {
	return &progressBar{w: w, label: label, unit: unit, tty: isTerminal(w), start: time.Now(), lastTenth: -1}
}

// update is called with how many of how many are done; calls never overlap.
func (p *progressBar) update(done, total int) {
	p.done, p.tot = done, total
	if total <= 0 {
		return
	}
	if !p.tty {
		if tenth := done * 10 / total; tenth != p.lastTenth {
			p.lastTenth = tenth
			fmt.Fprintf(p.w, "%s: %d/%d %s (%d%%)\n", p.label, done, total, p.unit, done*100/total)
		}
		return
	}
	// Redrawing more than ~20 times a second only costs time.
	if done != total && time.Since(p.drawn) < 50*time.Millisecond {
		return
	}
	p.drawn = time.Now()
	const width = 30
	fill := done * width / total
	rate := ""
	if s := time.Since(p.start).Seconds(); s > 0.2 {
		rate = fmt.Sprintf("  %.0f %s/s", float64(done)/s, p.unit)
	}
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d %s%s\x1b[K", p.label,
		strings.Repeat("█", fill), strings.Repeat("·", width-fill), done, total, p.unit, rate)
	p.wroteInTTY = true
}

// finish ends the bar's line on a terminal.
func (p *progressBar) finish() {
	if p.tty && p.wroteInTTY {
		fmt.Fprintln(p.w)
	}
}
