package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/sshroom"
	"github.com/leaserace/leaserace/workshop"
	"github.com/spf13/cobra"
)

type serveFlags struct {
	listen       string
	hostKeyDir   string
	maxAttendees int
	maxConns     int
	idle         time.Duration
	allowRemote  bool
	open         bool
	roomCode     string
	room         string
	roomIdle     time.Duration
	scenario     string
	knobs        cli.KnobFlags
	pg           cli.PGFlags
}

func newServeCmd(a *app) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the race over SSH: every attendee drives a run of their own",
		Long: `Serve starts PostgreSQL and an SSH server. Every attendee who connects with
ssh -p PORT NAME@HOST gets leaserace in their own terminal, with a run of their
own on this PostgreSQL, named NAME in pg_stat_activity. Attendees follow the
presenter (leaserace present) until they press F to go on their own.

The room's state (who is connected, where each attendee is, their predictions
and goals) lives in PostgreSQL, in the room's schema, so two serve processes on
one PostgreSQL (--pg dsn) form one room: put any number of them behind a TCP
load balancer.

The host key is made once in --host-key-dir and reused; its fingerprint is
printed at start so attendees can check it. serve listens on loopback unless
--allow-remote, and then asks for a room code at login unless --open says
otherwise. Ctrl-C or SIGTERM tells every attendee, closes their sessions, drops
their runs and stops what serve started.`,
		Example: `  # A room on this machine, on a throwaway PostgreSQL
  leaserace serve
  ssh -p 2222 alice@127.0.0.1

  # A workshop: other machines connect with the printed room code
  leaserace serve --listen 0.0.0.0:2222 --allow-remote --max-attendees 60

  # Two serve processes, one room, on a PostgreSQL of your own
  leaserace serve --pg dsn --dsn postgres://me@db/ws --listen 127.0.0.1:2222
  leaserace serve --pg dsn --dsn postgres://me@db/ws --listen 127.0.0.1:2223`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.serve(cmd.Context(), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.listen, "listen", sshroom.DefaultListen, "address to serve SSH on (host:port)")
	fs.StringVar(&f.hostKeyDir, "host-key-dir", defaultHostKeyDir(a.Getenv), "directory of the server's host key, made on first use and reused")
	fs.IntVar(&f.maxAttendees, "max-attendees", 100, "most attendees at once; the next one is told the room is full")
	fs.IntVar(&f.maxConns, "max-conns", 16, "PostgreSQL connections the attendees' runs share (the resource gets as many)")
	fs.DurationVar(&f.idle, "idle-timeout", 30*time.Minute, "end an attendee's session after this long without a key (0: never)")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow a --listen address other machines can reach")
	fs.BoolVar(&f.open, "open", false, "with --allow-remote, let anyone in without a room code")
	fs.StringVar(&f.roomCode, "room-code", "", "the code attendees type at login (default: one is made and printed when needed)")
	fs.DurationVar(&f.roomIdle, "room-idle", time.Minute, "how long a silent serve process (one that died) keeps its seats on the board before the room's other processes remove them")
	fs.StringVar(&f.room, "room", "main", "the room's name: serve processes with the same name on one PostgreSQL form one room")
	fs.StringVar(&f.scenario, "scenario", "renewal-race", "the scenario attendees start with (the presenter's lead moves them)")
	f.knobs.Register(fs)
	f.pg.Register(fs, a.Getenv)
	return cmd
}

// defaultHostKeyDir is where the host key lives unless told otherwise: the
// user's config directory, so the fingerprint stays the same between talks.
func defaultHostKeyDir(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "leaserace", "ssh")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "leaserace", "ssh")
	}
	return filepath.Join(os.TempDir(), "leaserace-ssh")
}

// checkRoomFlag refuses a --room that cannot name a room, for serve and
// present alike.
func checkRoomFlag(name string) error {
	if err := room.ValidRoom(name); err != nil {
		return cli.UsageErr("--room %q: %w", name, room.ErrRoomName)
	}
	return nil
}

func (a *app) serve(ctx context.Context, f serveFlags) error {
	k, err := f.knobs.Knobs()
	if err != nil {
		return err
	}
	sc, err := cli.LoadScenario(f.scenario)
	if err != nil {
		return err
	}
	switch {
	case f.maxConns < 2 || f.maxConns > 500:
		return cli.UsageErr("--max-conns %d: want 2..500", f.maxConns)
	case f.maxAttendees < 1:
		return cli.UsageErr("--max-attendees %d: want at least 1", f.maxAttendees)
	case f.open && !f.allowRemote:
		return cli.UsageErr("--open only matters with --allow-remote: on loopback nobody else can connect")
	case f.idle < 0:
		return cli.UsageErr("--idle-timeout %s: want 0 (never) or more", f.idle)
	}
	if err := checkRoomFlag(f.room); err != nil {
		return err
	}
	if err := room.ValidIdle(f.roomIdle); err != nil {
		return cli.UsageErr("--room-idle: %w", err)
	}
	if err := checkListen(f.listen, f.allowRemote); err != nil {
		return err
	}
	// The attendees' pool, the resource's, the room's and a margin.
	f.pg.MaxConns = 2*f.maxConns + 20
	srv, err := a.StartPG(ctx, &f.pg)
	if err != nil {
		return err
	}
	defer a.CloseServer(srv)

	rm, err := workshop.Start(ctx, workshop.Config{
		DSN: srv.DSN, Room: f.room, RoomIdle: f.roomIdle, MaxConns: f.maxConns, Scenario: sc, Knobs: k,
		SSH: sshroom.Config{
			Listen: f.listen, HostKeyDir: f.hostKeyDir, MaxAttendees: f.maxAttendees, IdleTimeout: f.idle,
			AllowRemote: f.allowRemote, Open: f.open, RoomCode: f.roomCode,
		},
		OnError: func(err error) { a.Warnf("room %s: %v", f.room, err) },
	})
	if err != nil {
		switch {
		case errors.Is(err, workshop.ErrRemoteNotAllowed):
			return cli.UsageErr("%v", err)
		case ctx.Err() != nil:
			return ctx.Err()
		}
		return fmt.Errorf("cannot serve room %s: %w", f.room, err)
	}
	addrHost, port, _ := net.SplitHostPort(rm.Addr().String())
	a.Infof("room %s: attendees connect with ssh -p %s NAME@%s", f.room, port, addrHost)
	a.Infof("host key fingerprint %s", rm.Fingerprint())
	if code := rm.RoomCode(); code != "" {
		a.Infof("room code: %s", code)
	}
	a.Infof("presenter: leaserace present --room %s --dsn %q", f.room, srv.Redacted())
	// The address alone on standard output, for scripts and tests.
	_, err = fmt.Fprintln(a.Stdout, rm.Addr().String())
	if err != nil {
		err = fmt.Errorf("cannot write the address: %w", err)
	} else {
		select {
		case <-ctx.Done():
			// Ctrl-C or SIGTERM: the CLI's exit code says which.
			err = ctx.Err()
		case <-rm.Done():
			err = fmt.Errorf("the SSH server stopped: %w", rm.Err())
		}
	}
	a.Infof("closing the room: every attendee is told, and their runs are dropped")
	sctx, cancel := context.WithTimeout(context.Background(), sshroom.DefaultShutdownTimeout)
	defer cancel()
	if serr := rm.Shutdown(sctx); serr != nil {
		a.Warnf("the room did not close cleanly: %v", serr)
	}
	return err
}
