package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/tui"
	"github.com/leaserace/leaserace/tui/export"
	"github.com/spf13/cobra"
)

type replayFlags struct {
	at        int64
	exportDir string
	noAsk     bool
	format    string
}

func newReplayCmd(a *app) *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay FILE.json|FILE.html",
		Short: "Show a recorded transcript in the terminal UI, with no database",
		Long: `Replay opens the terminal UI on a transcript leaserace wrote (run --format
json or html, the UI's export, assets/transcripts/) without starting or reaching any
PostgreSQL server: every step shows the rows, command tags and effects that
PostgreSQL and the resource produced when the file was recorded. A REPLAY
banner names the file and where and when it was recorded (provider, server
version, time).

The keys work as in the live UI on the recorded steps: → ← step, . , tick,
g G start and end, space plays. r and f switch to the recording made with the
other knobs, at the same moment: for a built-in scenario leaserace ships a
recording of every setting; for another scenario only the file's own knobs
exist and the UI says so. s opens the shipped recordings of another scenario;
e exports what is shown as json, md, mmd, cast and html.

A file exported from the UI also holds the presenter's session (every step,
toggle and jump, in order). The banner then offers it: ] shows the state
after the next action of the session, [ the one before, switching scenario
and knobs as the presenter did.

With --format, replay writes the whole file in that format to standard
output instead (md, mermaid, cast, html or json), also without a database.

Bare leaserace falls back to the same replay, with the shipped recordings,
when no PostgreSQL server can start.`,
		Example: `  # A shipped recording of the race, anywhere
  leaserace replay assets/transcripts/renewal-race--blind-off.json --at 1075

  # What a presenter exported, session and all
  leaserace replay leaserace-renewal-race-20260314-150926.json

  # The recording as an asciicast, for asciinema play
  leaserace replay renewal-race--blind-off.json --format cast > race.cast`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cli.UsageErr("%s needs exactly one transcript file; see %s --help", cmd.CommandPath(), cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.replay(cmd.Context(), cmd, args[0], f)
		},
	}
	fs := cmd.Flags()
	fs.Int64Var(&f.at, "at", 0, "open positioned at logical time T, every recorded step up to T shown")
	fs.StringVar(&f.exportDir, "export-dir", "", "where e writes exported transcripts (default the current directory)")
	fs.BoolVar(&f.noAsk, "no-ask", false, "skip the predict-then-reveal questions at the scenarios' pivotal steps")
	fs.StringVar(&f.format, "format", "", "write the file in this format to standard output instead of opening the UI: "+strings.Join(export.Formats(), ", "))
	return cmd
}

func (a *app) replay(ctx context.Context, cmd *cobra.Command, file string, f replayFlags) error {
	tr, err := readTranscriptFile(file)
	if err != nil {
		return err
	}
	if cmd.Flags().Changed("format") {
		if !slices.Contains(export.Formats(), f.format) {
			return cli.UsageErr("--format %q: want %s", f.format, strings.Join(export.Formats(), ", "))
		}
		data, err := export.Render(tr, f.format)
		if err != nil {
			return cli.WithCode(cli.ExitUsage, fmt.Errorf("%s: %w", file, err))
		}
		if _, err := a.Stdout.Write(data); err != nil {
			return fmt.Errorf("cannot write the %s transcript to standard output: %w", f.format, err)
		}
		return nil
	}
	rp, err := engine.NewReplay(replayRecordings(tr, file)...)
	if err != nil {
		return cli.WithCode(cli.ExitUsage, fmt.Errorf("%s: %w", file, err))
	}
	o := tui.Options{Replay: rp, ExportDir: f.exportDir, NoColor: a.NoColor(), In: a.Stdin, Out: a.Stdout, NoAsk: f.noAsk}
	if cmd.Flags().Changed("at") {
		if f.at < rp.Start() || f.at > rp.End() {
			return cli.UsageErr("--at %d is outside the recording's timeline, %d–%d", f.at, rp.Start(), rp.End())
		}
		at := f.at
		o.At = &at
	}
	if f.exportDir != "" {
		st, err := os.Stat(f.exportDir)
		if err != nil || !st.IsDir() {
			return cli.UsageErr("--export-dir %s is not a directory", f.exportDir)
		}
	}
	if !cli.IsTerminal(a.Stdout) {
		return cli.UsageErr("standard output is not a terminal, and the interactive UI needs one; to print the file instead use: leaserace replay %s --format md", file)
	}
	if err := tui.Run(ctx, o); err != nil {
		if cli.Interrupted(ctx, err) {
			return err
		}
		return fmt.Errorf("the interactive UI stopped: %w", err)
	}
	return nil
}

// replayRecordings is the file's recording first, then, for a built-in
// scenario recorded with the shipped times, the shipped recordings of the
// other knob settings, so r and f have somewhere to go.
func replayRecordings(tr transcript.Transcript, file string) []engine.Recording {
	recs := []engine.Recording{{Transcript: tr, Origin: file}}
	if tr.Meta != nil && tr.Meta.Source != "" && tr.Meta.Source != "builtin" {
		return recs
	}
	shipped, err := engine.ShippedRecordings(tr.Scenario)
	if err != nil {
		return recs // not a built-in: the file alone
	}
	for _, s := range shipped {
		if s.Transcript.Knobs != tr.Knobs && maps.Equal(s.Transcript.Times, tr.Times) {
			recs = append(recs, s)
		}
	}
	return recs
}
