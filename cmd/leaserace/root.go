package main

import (
	"context"
	"fmt"
	"os"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/scenario"
	"github.com/spf13/cobra"
)

type rootFlags struct {
	scenario  string
	knobs     cli.KnobFlags
	at        int64
	exportDir string
	pg        cli.PGFlags
	fallback  bool
	play      bool
	noAsk     bool
}

func newRootCmd(a *app) *cobra.Command {
	var f rootFlags
	root := &cobra.Command{
		Use:   "leaserace",
		Short: "Step through a lease-renewal race on a real PostgreSQL server",
		Long: `leaserace teaches one lesson: a heartbeat is an authority mutation, and it can
go stale while still in flight. It plays the race step by step against a real
PostgreSQL server (every row you see was produced by real SQL, so psql beside
it shows the same rows change; ? shows the psql command line for the run on
screen) and lets you flip two knobs live:

  --renewal blind     the heartbeat overwrites the lease from its cached snapshot
  --renewal compare   compare-and-renew: only while owner, fence and lease_version still match
  --fencing off       the resource accepts every write
  --fencing strict    the resource accepts only a fence above its highest fence accepted
  --fencing monotonic the resource accepts a fence at or above it (the repair)

Bare leaserace opens the terminal UI (keys: → ← step, r renewal, f fencing,
p play mode, e export, ? help, q quit). At a scenario's pivotal steps it asks
you to predict what happens before it runs the step (--no-ask skips that).
The subcommands run headless.

PostgreSQL comes from --pg: dsn (--dsn, DATABASE_URL or PG* variables),
container (a throwaway container, image from --pg-image), local (a throwaway
cluster from the installed server binaries), embedded (PostgreSQL downloaded
once into your user cache, then a throwaway cluster from it) or auto, which
tries them in that order and says why one was passed over. Whatever
leaserace starts it stops, also on Ctrl-C. When auto finds no server at all,
bare leaserace shows the recorded runs that ship with it instead, under a
REPLAY banner that says why (--fallback=false exits 3 instead); leaserace
replay FILE.json shows any recorded transcript that way. LEASERACE_PG_BINDIR,
when set, is the only place --pg local looks for initdb and postgres (set and
empty: nowhere).

Exit codes: 0 ok, 1 check mismatch or runtime failure, 2 bad flag or input,
3 no PostgreSQL server could start, 70 a bug in leaserace (a panic),
129 hung up (the terminal closed), 130 interrupted (Ctrl-C),
143 terminated (SIGTERM).
NO_COLOR turns colour off.`,
		Example: `  # The race at the moment A's late heartbeat arrives
  leaserace --scenario renewal-race --at 1075

  # Schedule the race yourself: choose every move, chase the goals
  leaserace --play --renewal blind --fencing off

  # Start with compare-and-renew and monotonic fencing, on a server you have
  leaserace --renewal compare --fencing monotonic --pg dsn --dsn postgres://me@localhost/db

  # Headless
  leaserace run --renewal blind --fencing off --format md
  leaserace check`,
		Version:       versionLine(),
		Args:          cli.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.tui(cmd.Context(), cmd, f)
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(a.Stdin)
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	// Every bad flag, on any command, is a usage error: exit 2.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cli.UsageErr("%w; see %s --help", cli.FlagValue(err), c.CommandPath())
	})
	fs := root.Flags()
	fs.StringVar(&f.scenario, "scenario", "renewal-race", "a built-in scenario's name or a scenario YAML file")
	f.knobs.Register(fs)
	fs.Int64Var(&f.at, "at", 0, "open positioned at logical time T, every event up to T executed")
	fs.StringVar(&f.exportDir, "export-dir", "", "where e writes exported transcripts (default the current directory)")
	f.pg.Register(fs, a.Getenv)
	fs.BoolVar(&f.fallback, "fallback", true, "with --pg auto, show the recorded runs when no PostgreSQL server can start (false: exit 3)")
	fs.BoolVar(&f.play, "play", false, "open in play mode: choose every move yourself (p toggles it in the UI)")
	fs.BoolVar(&f.noAsk, "no-ask", false, "skip the predict-then-reveal questions at the scenarios' pivotal steps")

	root.AddCommand(newRunCmd(a), newCheckCmd(a), newScenariosCmd(a), newResourceCmd(a), newVersionCmd(a))
	root.AddCommand(newExploreCmd(a), newStressCmd(a))
	root.AddCommand(newVerifyCmd(a), newReplayCmd(a))
	root.AddCommand(newServeCmd(a), newPresentCmd(a))
	return root
}

// tuiOptions are the root command's flags, checked.
type tuiOptions struct {
	scenario  string
	knobs     scenario.Knobs
	at        *int64
	exportDir string
	pg        cli.PGFlags
	// fallback: no server at all shows the shipped recordings instead.
	fallback bool
	// play opens in play mode; noAsk skips the questions.
	play, noAsk bool
}

func (a *app) tui(ctx context.Context, cmd *cobra.Command, f rootFlags) error {
	// Check everything before the screen changes, so a typo gets a plain
	// message and exit 2 rather than a UI that starts and fails.
	k, err := f.knobs.Knobs()
	if err != nil {
		return err
	}
	sc, err := cli.LoadScenario(f.scenario)
	if err != nil {
		return err
	}
	// Only auto falls back: a server named with --pg or --dsn that fails
	// is a mistake to show, not to paper over.
	o := tuiOptions{scenario: f.scenario, knobs: k, exportDir: f.exportDir, pg: f.pg,
		fallback: f.fallback && f.pg.Kind == "auto" && f.pg.DSN == "", play: f.play, noAsk: f.noAsk}
	if cmd.Flags().Changed("at") {
		from, to := cli.Timeline(sc)
		if f.at < from || f.at > to {
			return cli.UsageErr("--at %d is outside %s's timeline, %d–%d", f.at, sc.Name, from, to)
		}
		at := f.at
		o.at = &at
	}
	if f.exportDir != "" {
		st, err := os.Stat(f.exportDir)
		if err != nil || !st.IsDir() {
			return cli.UsageErr("--export-dir %s is not a directory", f.exportDir)
		}
	}
	if !cli.IsTerminal(a.Stdout) {
		return cli.UsageErr("standard output is not a terminal, and the interactive UI needs one; for a transcript without a terminal use: leaserace run --scenario %s --renewal %s --fencing %s", f.scenario, k.Renewal, k.Fencing)
	}
	prov, err := f.pg.Provider(a.App)
	if err != nil {
		return err
	}
	if err := a.runTUI(ctx, prov, o); err != nil {
		if cli.Interrupted(ctx, err) {
			return err
		}
		return fmt.Errorf("the interactive UI stopped: %w", err)
	}
	return nil
}
