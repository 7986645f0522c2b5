package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/scenario"
	"github.com/spf13/cobra"
)

type stressFlags struct {
	runs     int
	workers  int
	parallel int
	seed     uint64
	ttl      int
	renewal  []string
	fencing  []string
	format   string
	pg       cli.PGFlags
}

func newStressCmd(a *app) *cobra.Command {
	var f stressFlags
	cmd := &cobra.Command{
		Use:   "stress",
		Short: "Race real goroutines for one lease with millisecond TTLs and count what goes wrong",
		Long: fmt.Sprintf(`Stress leaves logical time behind. In each run, --workers holders, each a
goroutine with its own PostgreSQL session, race for one lease row whose TTL is
--ttl ms of wall clock (default %d) (the time passed to the coordinator's statements is the
milliseconds since the run began). A holder that gets the lease writes to the
real resource over HTTP, sends a heartbeat that the schedule delays (about
half arrive after the lease expired), renews from the snapshot the heartbeat
carries, and writes again while it believes it still holds the lease.

For each knob setting it counts:
  takeovers                 acquires that took the lease from another holder
  stale renewals accepted   renewals that changed the row although, when they
                            arrived, it no longer held the renewer's owner
                            and fence
  violations                writes judged a conflict: the resource accepted a
                            fence below its highest fence accepted before
  valid writes refused      writes judged blocked: the resource refused a
                            fence at or above its highest fence accepted
                            before, a valid write lost (strict fencing, the
                            unsuccessful fix, refuses the current holder's
                            second write)

Writes are judged in the order the resource saw them, by the same rule as
every other verdict leaserace gives: accept a fence at or above the resource's
highest fence accepted so far.

--seed fixes the schedule of delays (and prints it); real timing still varies,
so counts differ between repeated runs with the same seed. Progress
goes to standard error; the table, or JSON with --format json, to standard
output:
  {"seed","runs","settings":[{"renewal","fencing","runs","takeovers",
                              "stale_renewals_accepted","violations",
                              "valid_writes_refused"}]}

Exit codes: 0 done, 1 strict or monotonic fencing let a violation through, or
off or monotonic fencing refused a valid write (the resource's guarantee
broke), or a runtime failure, 2 bad flags, 3 no server.`, batch.StressTTL),
		Example: `  # All six settings, 1000 runs each
  leaserace stress --runs 1000

  # The safe setting alone, 10,000 runs, reproducible delays
  leaserace stress --runs 10000 --renewal compare --fencing monotonic --seed 42

  # The unsafe one, as JSON
  leaserace stress --runs 500 --renewal blind --fencing off --format json`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.stress(cmd.Context(), cmd, f)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&f.runs, "runs", 1000, "runs per knob setting")
	fs.IntVar(&f.workers, "workers", batch.DefaultStressWorkers, "holders racing in each run")
	fs.IntVar(&f.parallel, "parallel", batch.DefaultStressParallel, "runs going on at once, each on its own lease row and resource")
	fs.Uint64Var(&f.seed, "seed", 0, "seed for the schedule of delays (default: a random one, printed)")
	fs.IntVar(&f.ttl, "ttl", batch.StressTTL, "the lease's time to live in milliseconds of wall clock; every delay scales with it")
	fs.StringSliceVar(&f.renewal, "renewal", nil, "renewal modes to race: blind, compare or both (default both)")
	fs.StringSliceVar(&f.fencing, "fencing", nil, "fencing modes to race: off, strict, monotonic (default all)")
	fs.StringVar(&f.format, "format", "text", "output: text (a table) or json")
	f.pg.Register(fs, a.Getenv)
	return cmd
}

func (a *app) stress(ctx context.Context, cmd *cobra.Command, f stressFlags) error {
	if f.format != "text" && f.format != "json" {
		return cli.UsageErr("--format %q: want text or json", f.format)
	}
	if f.runs < 1 || f.runs > batch.MaxStressRuns {
		return cli.UsageErr("--runs %d: want 1 to %d", f.runs, batch.MaxStressRuns)
	}
	if f.workers < 2 || f.workers > batch.MaxStressWorkers {
		return cli.UsageErr("--workers %d: want 2 to %d (a race needs two holders)", f.workers, batch.MaxStressWorkers)
	}
	if f.parallel < 1 || f.parallel > batch.MaxStressParallel {
		return cli.UsageErr("--parallel %d: want 1 to %d", f.parallel, batch.MaxStressParallel)
	}
	if f.ttl < 1 || f.ttl > batch.MaxStressTTL {
		return cli.UsageErr("--ttl %d: want 1 to %d milliseconds", f.ttl, batch.MaxStressTTL)
	}
	settings, err := stressSettings(f.renewal, f.fencing)
	if err != nil {
		return err
	}
	seed := f.seed
	if !cmd.Flags().Changed("seed") {
		// 53 bits, so a JSON reader that turns numbers into doubles still
		// gets the seed back exactly.
		seed = rand.Uint64() >> 11
	}
	srv, err := a.StartPG(ctx, &f.pg)
	if err != nil {
		return err
	}
	defer a.CloseServer(srv)

	a.Infof("stress: %d runs × %d settings, %d holders, TTL %d ms, seed %d", f.runs, len(settings), f.workers, f.ttl, seed)
	bar := cli.NewProgressBar(a.Stderr, "stress", "runs")
	res, err := batch.Stress(ctx, batch.StressConfig{
		DSN: srv.DSN, Runs: f.runs, Workers: f.workers, Parallel: f.parallel,
		Seed: seed, TTL: f.ttl, Settings: settings, Progress: bar.Update,
	})
	bar.Finish()
	if err != nil {
		if cli.Interrupted(ctx, err) {
			return err
		}
		return fmt.Errorf("stress (seed %d): %w", seed, err)
	}
	if f.format == "json" {
		err = cli.WriteJSON(a.Stdout, res)
	} else {
		err = writeStressTable(a.Stdout, res)
	}
	if err != nil {
		return err
	}
	for _, s := range res.Settings {
		// Strict and monotonic fencing make accepted epochs never go down,
		// so a violation there is a bug, not a finding.
		if s.Fencing != scenario.FencingOff && s.Violations > 0 {
			return cli.WithCode(cli.ExitFailure, fmt.Errorf("%s/%s fencing let %d violations through (seed %d): the resource's guarantee broke", s.Renewal, s.Fencing, s.Violations, seed))
		}
		// Off refuses nothing and monotonic refuses only epochs below the
		// stored one, which is the highest accepted: neither can lose a
		// valid write. Strict does, and that is the lesson.
		if s.Fencing != scenario.FencingStrict && s.ValidWritesRefused > 0 {
			return cli.WithCode(cli.ExitFailure, fmt.Errorf("%s/%s fencing refused %d valid writes (seed %d): the resource's guarantee broke", s.Renewal, s.Fencing, s.ValidWritesRefused, seed))
		}
	}
	return nil
}

// stressSettings is the chosen subset of the six settings, in their usual
// order; nothing chosen means all.
func stressSettings(renewals, fencings []string) ([]scenario.Knobs, error) {
	for _, r := range renewals {
		if _, err := scenario.ParseRenewal(r); err != nil {
			return nil, cli.UsageErr("--renewal: %w", err)
		}
	}
	for _, f := range fencings {
		if _, err := scenario.ParseFencing(f); err != nil {
			return nil, cli.UsageErr("--fencing: %w", err)
		}
	}
	var out []scenario.Knobs
	for _, k := range scenario.AllKnobs() {
		if (len(renewals) == 0 || slices.Contains(renewals, string(k.Renewal))) &&
			(len(fencings) == 0 || slices.Contains(fencings, string(k.Fencing))) {
			out = append(out, k)
		}
	}
	return out, nil
}

func writeStressTable(w io.Writer, res batch.StressResult) error {
	fmt.Fprintf(w, "stress: %d runs per setting, %d holders per run, TTL %d ms, %d runs at once\n\n",
		res.Runs, res.Workers, res.TTL, res.Parallel)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RENEWAL\tFENCING\tRUNS\tTAKEOVERS\tSTALE RENEWALS ACCEPTED\tVIOLATIONS\tRUNS WITH VIOLATIONS\tVALID WRITES REFUSED\tWRITES ACCEPTED\tWRITES REFUSED")
	for _, s := range res.Settings {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", s.Renewal, s.Fencing, s.Runs, s.Takeovers,
			s.StaleRenewalsAccepted, s.Violations, s.ViolatingRuns, s.ValidWritesRefused, s.Accepted, s.Rejected)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("cannot write the table: %w", err)
	}
	fmt.Fprintf(w, "\nviolations: writes the resource accepted below its highest fence accepted (conflict).\n")
	fmt.Fprintf(w, "valid writes refused: writes it refused at or above that fence, a valid write lost (blocked).\n")
	fmt.Fprintf(w, "%d runs in %s (%.0f runs/s).\n", res.Runs*len(res.Settings), res.Took.Round(time.Millisecond), res.RunsPerSecond())
	fmt.Fprintf(w, "seed %d: the same seed gives the same schedule of delays (--seed %d); real timing still varies.\n", res.Seed, res.Seed)
	return nil
}
