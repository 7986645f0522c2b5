package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/search"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/export"
	"github.com/spf13/cobra"
)

type runFlags struct {
	scenario  string
	knobs     cli.KnobFlags
	format    string
	out       string
	moves     string
	movesFile string
	// movesGiven: --moves was on the command line, even empty (an unset
	// shell variable), which must not fall back to the scenario's events.
	movesGiven bool
	pg         cli.PGFlags
}

func newRunCmd(a *app) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Play a whole scenario headless and write its transcript",
		Long: `Run starts PostgreSQL, plays every event of a scenario with the chosen knobs
(each step's real SQL on the server, each write through the real resource)
and writes the transcript: JSON for tools, Markdown for people, a Mermaid
sequence diagram for slides and design docs, an asciicast (asciinema
play) of the terminal UI's screen at every step, 120×40, with a marker per
event, or one self-contained HTML page: the run's lanes (a lane per actor
and the clock) to step through in any browser, offline, with every move's
SQL, command tag and HTTP call. The page carries the transcript, so verify
and replay read it like the JSON.

Progress and "PostgreSQL via <provider> in <time>" go to standard error; the
transcript goes to standard output unless --out names a file. --out is
written atomically: a failed or interrupted run never leaves a half-written
file, and an existing file is replaced only by a complete new one.

Without --format, an --out file ending in .md gets Markdown, one ending in
.mmd Mermaid, one ending in .cast the asciicast, one ending in .html the
page, anything else JSON. An --out directory (one that exists, or a path
ending in /) gets every format side by side, named after the scenario and
knobs (renewal-race--blind-off.json, .md, .mmd, .cast, .html); with
--format, just that one.

--moves plays a schedule of your own instead of the scenario's events: a
comma-separated list of moves, each ACTOR:VERB[ ARG]@T, such as
"A:send hb1@1055,clock:advance@1060,B:acquire@1060,A:deliver hb1@1060".
Verbs: acquire, send, deliver, reply, drop, effect, write FENCE, post, land,
expire, advance (the clock's), pause, resume, release. "leaserace explore
--orders" prints such lists, and the transcript of any run holds its moves.
--moves-file reads the list from a file (commas or new lines between moves;
- is standard input). A move that cannot be made where it stands (a message
never sent or already delivered, a time before the previous move's) is
refused with its number and why: exit 2.

SOURCE_DATE_EPOCH (seconds since 1970, the reproducible-builds convention)
replaces the time the transcript says it was recorded, so the same run
writes the same bytes (the README's pictures are drawn that way).`,
		Example: `  # The race with a blind heartbeat and no fencing: UPDATE 1 at 1075, 2 effects, conflict
  leaserace run --scenario renewal-race --renewal blind --fencing off

  # The same with compare-and-renew, as Markdown into a file
  leaserace run --renewal compare --format md --out race-compare.md

  # The screen at every step, to play with asciinema play race.cast
  leaserace run --format cast --out race.cast

  # The run as one page to open in a browser, step through and share
  leaserace run --scenario paused-holder --renewal compare --fencing off --format html --out p.html

  # Your own scenario on a server you already have
  leaserace run --scenario ./my-race.yaml --pg dsn --dsn postgres://me@localhost/db

  # A schedule of your own: the heartbeat lands right after B's takeover
  leaserace run --renewal blind --fencing off \
    --moves 'A:send hb1@1055,clock:advance@1060,B:acquire@1060,A:deliver hb1@1060,B:effect@1060,A:effect@1060'

  # The same schedule under the repair, from a file
  leaserace run --renewal compare --fencing monotonic --moves-file race.moves`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.run(cmd.Context(), cmd, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.scenario, "scenario", "renewal-race", "a built-in scenario's name or a scenario YAML file")
	f.knobs.Register(fs)
	fs.StringVar(&f.format, "format", "", "transcript format: json, md, mermaid, cast or html (default json, or md/mermaid/cast/html for an --out ending in .md/.mmd/.cast/.html)")
	fs.StringVar(&f.out, "out", "", "write the transcript to this file, or every format into this directory, instead of standard output")
	fs.StringVar(&f.moves, "moves", "", "play these moves instead of the scenario's events, e.g. 'A:send hb1@1055,clock:advance@1060'")
	fs.StringVar(&f.movesFile, "moves-file", "", "read the moves to play from this file (- for standard input)")
	f.pg.Register(fs, a.Getenv)
	return cmd
}

func (a *app) run(ctx context.Context, cmd *cobra.Command, f runFlags) error {
	// Everything a person typed is checked before anything starts.
	k, err := f.knobs.Knobs()
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
		if ext := filepath.Ext(f.out); strings.EqualFold(ext, ".html") || strings.EqualFold(ext, ".htm") {
			format = "html"
		}
	}
	if !slices.Contains(export.Formats(), format) {
		return cli.UsageErr("--format %q: want %s", format, strings.Join(export.Formats(), ", "))
	}
	outDir := isOutDir(f.out)
	if f.out != "" && !outDir {
		if err := cli.CheckOutPath(f.out); err != nil {
			return err
		}
	}
	recordedAt, err := sourceDate(a.Getenv)
	if err != nil {
		return err
	}
	sc, err := cli.LoadScenario(f.scenario)
	if err != nil {
		return err
	}
	f.movesGiven = cmd.Flags().Changed("moves")
	log, err := a.movesOf(f)
	if err != nil {
		return err
	}
	srv, err := a.StartPG(ctx, &f.pg)
	if err != nil {
		return err
	}
	defer a.CloseServer(srv)

	run, err := engine.Open(ctx, engine.Config{
		DSN: srv.DSN, Scenario: sc, Knobs: k, Log: log,
		Provider: srv.Provider, ServerVersion: srv.Version,
	})
	if err != nil {
		return fmt.Errorf("cannot prepare the run of %s: %w", sc.Name, err)
	}
	defer a.CloseRun(run, srv)
	if err := playAll(ctx, run); err != nil {
		var refused *cli.ExitError
		if errors.As(err, &refused) {
			return err
		}
		return fmt.Errorf("%s (%s) stopped: %w", sc.Name, k, err)
	}
	tr, err := run.Transcript()
	if err != nil {
		return err
	}
	if tr.Meta != nil {
		tr.Meta.Leaserace = version()
		if recordedAt != "" {
			tr.Meta.RecordedAt = recordedAt
		}
	}
	if log != nil {
		// A schedule of one's own: its goals, each against par.
		engine.PlayedOf(sc, &tr).Goals = a.goalsAgainstPar(ctx, srv.DSN, sc, k, tr.Steps)
	}
	if outDir {
		formats := export.Formats()
		if cmd.Flags().Changed("format") {
			formats = []string{format}
		}
		return a.writeTranscriptDir(ctx, f.out, tr, formats)
	}

	// Render fully before touching the output, so an encoding failure
	// cannot leave a partial transcript behind either. The asciicast is
	// drawn by the TUI's renderer, so tui/export renders every format.
	data, err := export.Render(tr, format)
	if err != nil {
		return err
	}
	if f.out == "" {
		if _, err := a.Stdout.Write(data); err != nil {
			return fmt.Errorf("cannot write the transcript to standard output: %w", err)
		}
		return nil
	}
	if err := cli.WriteFileAtomic(ctx, f.out, data); err != nil {
		return err
	}
	a.Infof("transcript (%s, %s, %s, %s) written to %s", format, k, effectsNoun(tr.Outcome.Effects), tr.Outcome.Verdict, f.out)
	return nil
}

// maxMovesFile bounds a --moves-file: a log of scenario.MaxMoves moves
// fits many times over.
const maxMovesFile = 1 << 20

// movesOf reads --moves or --moves-file: nil means the scenario's events.
// A list that cannot be read is a usage error naming the move.
func (a *app) movesOf(f runFlags) ([]scenario.Move, error) {
	text, from := f.moves, "--moves"
	switch {
	case f.moves != "" && f.movesFile != "":
		return nil, cli.UsageErr("--moves and --moves-file both give the moves: use one")
	case f.movesFile == "-":
		data, err := io.ReadAll(io.LimitReader(a.Stdin, maxMovesFile+1))
		if err != nil {
			return nil, cli.UsageErr("--moves-file -: cannot read standard input: %w", err)
		}
		if len(data) > maxMovesFile {
			return nil, cli.UsageErr("--moves-file -: more than %d bytes", maxMovesFile)
		}
		text, from = movesFileText(data), "--moves-file -"
	case f.movesFile != "":
		data, err := cli.ReadLimited(f.movesFile, maxMovesFile)
		if err != nil {
			return nil, cli.UsageErr("--moves-file: %w", err)
		}
		text, from = movesFileText(data), f.movesFile
	default:
		if f.moves == "" && !f.movesGiven {
			return nil, nil
		}
	}
	log, err := scenario.ParseMoves(text)
	if err != nil {
		return nil, cli.UsageErr("%s: %w", from, err)
	}
	if len(log) == 0 {
		return nil, cli.UsageErr("%s holds no moves; leave it out to play the scenario's events", from)
	}
	return log, nil
}

// movesFileText is a moves file as one list: a file may put its moves on
// lines or between commas, or both, with blank lines between.
func movesFileText(data []byte) string {
	var moves []string
	for _, m := range strings.FieldsFunc(string(data), func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		if m = strings.TrimSpace(m); m != "" {
			moves = append(moves, m)
		}
	}
	return strings.Join(moves, ",")
}

// playAll plays every move of the run's log. A move that is not possible
// where it stands is the person's input, not a failure: exit 2, naming the
// move by its number and saying why.
func playAll(ctx context.Context, run *engine.Run) error {
	log := run.Log()
	for i := run.Pos(); i < len(log); i++ {
		_, err := run.Next(ctx)
		var ne *world.NotEnabledError
		if errors.As(err, &ne) {
			return cli.UsageErr("move %d %q: %s", i+1, ne.Move.String(), ne.Why)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// goalsAgainstPar is how steps went for each of sc's goals under k, with
// par from a search of every order of the scenario's moves on the server.
// A search that cannot finish leaves par out and says why.
func (a *app) goalsAgainstPar(ctx context.Context, dsn string, sc *scenario.Scenario, k scenario.Knobs, steps []transcript.Step) []transcript.GoalRecord {
	goals := world.GoalRecords(sc, k, steps)
	a.Infof("finding par: every order of %s's moves under %s, on the server…", sc.Name, k)
	o := search.New(search.Config{DSN: dsn, Lanes: 1})
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engine.CloseTimeout)
		defer cancel()
		_ = o.Close(cctx)
	}()
	res, err := o.Search(ctx, sc, k, nil)
	if err != nil {
		a.Infof("no par for the goals: %v", err)
		return goals
	}
	return search.WithPar(res, goals)
}

// effectsNoun is "1 effect" or "n effects".
func effectsNoun(n int) string {
	if n == 1 {
		return "1 effect"
	}
	return fmt.Sprintf("%d effects", n)
}

// sourceDate reads SOURCE_DATE_EPOCH, the reproducible-builds convention for
// "pretend it is this time": the transcript's recorded time, RFC 3339, or ""
// when it is not set.
func sourceDate(getenv func(string) string) (string, error) {
	v := getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return "", nil
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil || sec < 0 {
		return "", cli.UsageErr("SOURCE_DATE_EPOCH=%q: want a whole number of seconds since 1970-01-01 UTC, such as 1700000000", v)
	}
	return time.Unix(sec, 0).UTC().Format(time.RFC3339), nil
}
