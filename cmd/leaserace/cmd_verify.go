package main

import (
	"context"
	"fmt"
	"os"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/spf13/cobra"
)

func newVerifyCmd(a *app) *cobra.Command {
	var pg cli.PGFlags
	cmd := &cobra.Command{
		Use:   "verify FILE.json|FILE.html...",
		Short: "Re-run recorded transcripts live and compare them digest for digest",
		Long: `Verify reads a transcript that leaserace wrote (run --format json or html,
the TUI's export, assets/transcripts/), plays its scenario with its knobs and times
again on a real PostgreSQL server, and compares the live run with the file.

It also recomputes the file's own digest, so a transcript edited after it
was recorded is caught even when the live run still matches the digest
written in it. When anything differs it prints the first differing step,
the recorded and the live version side by side, field by field.

A transcript of a scenario file names that file; it is looked up again from
the current directory, as it was given when the transcript was recorded.

Exit codes: 0 every file identical to a live run, 1 a difference, 2 a file
that is not a leaserace transcript or whose scenario cannot be found, 3 no
PostgreSQL server could start.`,
		Example: `  # A shipped transcript, on whatever PostgreSQL this machine has
  leaserace verify assets/transcripts/renewal-race--blind-off.json

  # Every shipped transcript, on a server you already have
  leaserace verify assets/transcripts/*.json --pg dsn --dsn postgres://me@localhost/db`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cli.UsageErr("%s needs a transcript file; see %s --help", cmd.CommandPath(), cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, files []string) error {
			return a.verify(cmd.Context(), files, pg)
		},
	}
	pg.Register(cmd.Flags(), a.Getenv)
	return cmd
}

func (a *app) verify(ctx context.Context, files []string, pg cli.PGFlags) error {
	// Every file is read and its scenario found before a server starts.
	trs := make([]transcript.Transcript, len(files))
	for i, file := range files {
		tr, err := readTranscriptFile(file)
		if err != nil {
			return err
		}
		if _, err := engine.ScenarioOf(tr); err != nil {
			return cli.WithCode(cli.ExitUsage, fmt.Errorf("%s: %w", file, err))
		}
		trs[i] = tr
	}
	srv, err := a.StartPG(ctx, &pg)
	if err != nil {
		return err
	}
	defer a.CloseServer(srv)
	// One host for every file: each live run is a schema of its own on it.
	host, err := engine.OpenHost(ctx, engine.HostConfig{DSN: srv.DSN, MaxConns: 2})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engine.CloseTimeout)
		defer cancel()
		if err := host.Close(cctx); err != nil {
			a.Warnf("%s", err)
		}
	}()

	differ := 0
	for i, tr := range trs {
		res, err := batch.VerifyOn(ctx, host, tr)
		if err != nil {
			return fmt.Errorf("cannot verify %s: %w", files[i], err)
		}
		if len(files) > 1 {
			fmt.Fprintf(a.Stdout, "%s: ", files[i])
		}
		if err := res.WriteReport(a.Stdout); err != nil {
			return err
		}
		if !res.Identical {
			differ++
		}
	}
	switch {
	case differ == 0:
		return nil
	case len(files) == 1:
		return cli.WithCode(cli.ExitFailure, fmt.Errorf("%s does not match a live run", files[0]))
	}
	return cli.WithCode(cli.ExitFailure, fmt.Errorf("%d of %d transcripts do not match a live run", differ, len(files)))
}

// readTranscriptFile reads a transcript; anything wrong with the file is a
// usage error, as the person named it.
func readTranscriptFile(file string) (transcript.Transcript, error) {
	f, err := os.Open(file)
	if err != nil {
		return transcript.Transcript{}, cli.UsageErr("cannot open the transcript: %w", err)
	}
	defer f.Close()
	tr, err := transcript.Read(f)
	if err != nil {
		return tr, cli.UsageErr("%s: %w", file, err)
	}
	return tr, nil
}
