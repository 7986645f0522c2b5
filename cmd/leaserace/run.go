package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/tui"
	"github.com/spf13/cobra"
)

type runFlags struct {
	scenario string
	knobs    knobFlags
	format   string
	out      string
	pg       pgFlags
}

func newRunCmd(a *app) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Play a whole scenario headless and write its transcript",
		Long: `Run starts PostgreSQL, plays every event of a scenario with the chosen knobs
(each step's real SQL on the server, each write through the real resource)
and writes the transcript: JSON for tools, Markdown for people, a Mermaid
sequence diagram for slides and design docs, or an asciicast (asciinema
play) of the terminal UI's screen at every step, 120×40, with a marker per
event.

Progress and "PostgreSQL via <provider> in <time>" go to standard error; the
transcript goes to standard output unless --out names a file. --out is
written atomically: a failed or interrupted run never leaves a half-written
file, and an existing file is replaced only by a complete new one.

Without --format, an --out file ending in .md gets Markdown, one ending in
.mmd Mermaid, one ending in .cast the asciicast, anything else JSON. An --out
directory (one that exists, or a path ending in /) gets every format side by
side, named after the scenario and knobs (renewal-race--blind-off.json, .md,
.mmd, .cast); with --format, just that one.`,
		Example: `  # The race with a blind heartbeat and no fencing: UPDATE 1 at 1075, 2 effects, conflict
  leaserace run --scenario renewal-race --renewal blind --fencing off

  # The same with compare-and-renew, as Markdown into a file
  leaserace run --renewal compare --format md --out race-compare.md

  # The screen at every step, to play with asciinema play race.cast
  leaserace run --format cast --out race.cast

  # Your own scenario on a server you already have
  leaserace run --scenario ./my-race.yaml --pg dsn --dsn postgres://me@localhost/db`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.run(cmd.Context(), cmd, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.scenario, "scenario", "renewal-race", "a built-in scenario's name or a scenario YAML file")
	f.knobs.register(fs)
	fs.StringVar(&f.format, "format", "", "transcript format: json, md, mermaid or cast (default json, or md/mermaid/cast for an --out ending in .md/.mmd/.cast)")
	fs.StringVar(&f.out, "out", "", "write the transcript to this file, or every format into this directory, instead of standard output")
	f.pg.register(fs, a.getenv)
	return cmd
}

func (a *app) run(ctx context.Context, cmd *cobra.Command, f runFlags) error {
	// Everything a person typed is checked before anything starts.
	k, err := f.knobs.knobs()
	if err != nil {
		return err
	}
	format := f.format
	if !cmd.Flags().Changed("format") {
		format = "json"
		if strings.EqualFold(filepath.Ext(f.out), ".md") {
			format = "md"
		}
		if strings.EqualFold(filepath.Ext(f.out), ".mmd") {
			format = "mermaid"
		}
		if strings.EqualFold(filepath.Ext(f.out), ".cast") {
			format = "cast"
		}
	}
	if !slices.Contains(tui.TranscriptFormats(), format) {
		return usageErr("--format %q: want %s", format, strings.Join(tui.TranscriptFormats(), ", "))
	}
	outDir := isOutDir(f.out)
	if f.out != "" && !outDir {
		if err := checkOutPath(f.out); err != nil {
			return err
		}
	}
	sc, err := loadScenario(f.scenario)
	if err != nil {
		return err
	}
	srv, err := a.startPG(ctx, &f.pg)
	if err != nil {
		return err
	}
	defer a.closeServer(srv)

	run, err := engine.Open(ctx, engine.Config{
		DSN: srv.DSN, Scenario: sc, Knobs: k,
		Provider: srv.Provider, ServerVersion: srv.Version,
	})
	if err != nil {
		return fmt.Errorf("cannot prepare the run of %s: %w", sc.Name, err)
	}
	defer a.closeRun(run, srv)
	if err := run.PlayAll(ctx); err != nil {
		return fmt.Errorf("%s (%s) stopped: %w", sc.Name, k, err)
	}
	tr, err := run.Transcript()
	if err != nil {
		return err
	}
	if tr.Meta != nil {
		tr.Meta.Leaserace = version()
	}
	if outDir {
		formats := tui.TranscriptFormats()
		if cmd.Flags().Changed("format") {
			formats = []string{format}
		}
		return a.writeTranscriptDir(ctx, f.out, tr, formats)
	}

	// Render fully before touching the output, so an encoding failure
	// cannot leave a partial transcript behind either. The asciicast is
	// drawn by the TUI's view code, so the TUI package renders every format.
	data, err := tui.RenderTranscript(tr, format)
	if err != nil {
		return err
	}
	if f.out == "" {
		if _, err := a.stdout.Write(data); err != nil {
			return fmt.Errorf("cannot write the transcript to standard output: %w", err)
		}
		return nil
	}
	if err := writeFileAtomic(ctx, f.out, data); err != nil {
		return err
	}
	a.infof("transcript (%s, %s, %d effects, %s) written to %s", format, k, tr.Outcome.Effects, tr.Outcome.Verdict, f.out)
	return nil
}

// noArgs refuses positional arguments as a usage error (exit 2).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasSubCommands() {
		return usageErr("unknown command %q; see %s --help", args[0], cmd.CommandPath())
	}
	return usageErr("%s takes no arguments, got %q; see %s --help", cmd.CommandPath(), args[0], cmd.CommandPath())
}
