package main

import (
	"context"
	"fmt"
	"net"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine/resource"
	"github.com/spf13/cobra"
)

type resourceFlags struct {
	listen      string
	fencing     string
	allowRemote bool
	pg          cli.PGFlags
}

func newResourceCmd(a *app) *cobra.Command {
	var f resourceFlags
	cmd := &cobra.Command{
		Use:   "resource",
		Short: "Run the protected resource alone, its state in PostgreSQL",
		Long: `Resource starts PostgreSQL, then the protected resource: a small HTTP service
whose state, a fence and a value, lives in PostgreSQL and whose fencing check
is a conditional SQL statement. Its URL is the first line of standard output;
everything else goes to standard error. It serves until Ctrl-C or SIGTERM, then
stops the resource and the server it started and exits 0.

  PUT  /state   {"fence":F,"value":V}               set the state, clear effects
  POST /writes  {"fence":F,"value":V,"actor":"A"}   200 accepted / 409 refused
  GET  /state                                       {"fence","value","effects"}

Requests may still call the fence "epoch", its name before this release.

The resource has no authentication, so it listens on loopback only unless
--allow-remote says otherwise in so many words.`,
		Example: `  # On a random loopback port, monotonic fencing
  leaserace resource

  # A fixed port with the unsuccessful fix, then try it from another terminal
  leaserace resource --listen 127.0.0.1:8080 --fencing strict
  curl -s -X POST 127.0.0.1:8080/writes -d '{"fence":3,"value":"x","actor":"A"}'`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.resource(cmd.Context(), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.listen, "listen", "127.0.0.1:0", "address to listen on (port 0 picks a free one)")
	fs.StringVar(&f.fencing, "fencing", "monotonic", "fencing policy: off, strict (>) or monotonic (>=)")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow a --listen address other machines can reach (the resource has no authentication)")
	f.pg.Register(fs, a.Getenv)
	return cmd
}

func (a *app) resource(ctx context.Context, f resourceFlags) error {
	fencing, err := cli.ParseFencingFlag(f.fencing)
	if err != nil {
		return err
	}
	if err := checkListen(f.listen, f.allowRemote); err != nil {
		return err
	}
	srv, err := a.StartPG(ctx, &f.pg)
	if err != nil {
		return err
	}
	defer a.CloseServer(srv)

	res, err := resource.Start(ctx, resource.Config{
		DSN:              srv.DSN,
		Listen:           f.listen,
		AllowNonLoopback: f.allowRemote,
		Fencing:          fencing,
		AppName:          "leaserace resource",
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("cannot start the resource: %w", err)
	}
	defer func() {
		cctx, cancel := cli.CleanupContext()
		defer cancel()
		if err := res.Close(cctx); err != nil {
			a.Warnf("could not stop the resource cleanly: %v", err)
		}
	}()

	// The URL alone on the first line, for scripts: URL=$(leaserace resource | head -1).
	if _, err := fmt.Fprintln(a.Stdout, res.URL()); err != nil {
		return fmt.Errorf("cannot write the resource's URL: %w", err)
	}
	a.Infof("resource at %s, fencing %s, state in schema %s; Ctrl-C or SIGTERM stops it", res.URL(), fencing.Describe(), res.Schema())
	<-ctx.Done()
	a.Infof("stopping the resource and PostgreSQL")
	return nil
}

// checkListen refuses, before anything starts, an address other machines
// could reach unless --allow-remote was given. A host name other than
// localhost counts as remote: what it resolves to is not known yet.
func checkListen(addr string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return cli.UsageErr("--listen %q: want host:port, e.g. 127.0.0.1:8080 (port 0 picks a free one)", addr)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return cli.UsageErr("--listen %q: %q is not a port", addr, port)
	}
	if allowRemote {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	where := host
	if host == "" {
		where = "every interface"
	}
	return cli.UsageErr("--listen %q would listen on %s, which other machines can reach; the resource has no authentication, so pass --allow-remote to do that deliberately", addr, where)
}
