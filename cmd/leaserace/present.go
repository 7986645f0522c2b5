package main

import (
	"context"
	"fmt"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/workshop"
	"github.com/spf13/cobra"
)

type presentFlags struct {
	room     string
	scenario string
	knobs    cli.KnobFlags
	dsn      string
}

func newPresentCmd(a *app) *cobra.Command {
	var f presentFlags
	cmd := &cobra.Command{
		Use:   "present",
		Short: "Lead a room of attendees served by leaserace serve",
		Long: `Present opens the TUI as the presenter of a room: every step, knob toggle and
scenario switch you make is where the attendees who follow you go (they press F
to go on their own, and F again to rejoin). b shows the room board: who is
connected, where each attendee is, the predictions tallied live and how many
reached each goal. P pushes your scenario and knobs to everyone, even those on
their own.

The room lives in PostgreSQL, so present needs the room's server: the DSN that
leaserace serve prints at start (or DATABASE_URL / the PG* variables).`,
		Example: `  # In one terminal
  leaserace serve --pg dsn --dsn postgres://me@localhost/ws
  # In another
  leaserace present --dsn postgres://me@localhost/ws`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.present(cmd.Context(), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.room, "room", "main", "the room to lead (serve's --room)")
	fs.StringVar(&f.scenario, "scenario", "renewal-race", "the scenario to start with")
	f.knobs.Register(fs)
	fs.StringVar(&f.dsn, "dsn", "", "the room's PostgreSQL (else DATABASE_URL or the PG* variables)")
	return cmd
}

func (a *app) present(ctx context.Context, f presentFlags) error {
	k, err := f.knobs.Knobs()
	if err != nil {
		return err
	}
	if _, err := cli.LoadScenario(f.scenario); err != nil {
		return err
	}
	if err := checkRoomFlag(f.room); err != nil {
		return err
	}
	if !cli.IsTerminal(a.Stdout) {
		return cli.UsageErr("standard output is not a terminal, and the presenter's UI needs one")
	}
	a.AddSecretsFromDSN(f.dsn)
	srv, err := a.StartServer(ctx, pgserver.DSNProvider{DSN: f.dsn})
	if err != nil {
		return err
	}
	defer a.CloseServer(srv)
	err = workshop.Present(ctx, workshop.PresentConfig{
		DSN: srv.DSN, Room: f.room, Scenario: f.scenario, Knobs: k,
		NoColor: a.NoColor(), In: a.Stdin, Out: a.Stdout, Stderr: a.Stderr,
	})
	if err != nil && !cli.Interrupted(ctx, err) {
		return fmt.Errorf("the presenter's UI stopped: %w", err)
	}
	return err
}
