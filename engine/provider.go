package engine

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Provider starts (or finds) a PostgreSQL server for leaserace to use.
type Provider interface {
	// Name is the word used on the command line: container, local or dsn.
	Name() string
	// Start brings a server up. progress, if not nil, receives short lines
	// ("initdb", "starting postgres") while it works. The caller must Close
	// the returned Server, also on error paths and signals.
	Start(ctx context.Context, progress func(string)) (*Server, error)
}

// Server is a running PostgreSQL server and how to reach it.
type Server struct {
	// Provider names who started it.
	Provider string
	// DSN reaches the server. It may hold a password: show Redacted() instead.
	DSN string
	// Took is how long Start took.
	Took time.Duration
	// Version is the server's version string, filled in by Start when known.
	Version string
	// stop tears the server down; nil for servers leaserace did not start.
	stop func(context.Context) error
}

// Close stops the server if leaserace started it. It is safe to call twice.
func (s *Server) Close(ctx context.Context) error {
	if s == nil || s.stop == nil {
		return nil
	}
	stop := s.stop
	s.stop = nil
	return stop(ctx)
}

// Redacted is the DSN with any password replaced, safe to print.
func (s *Server) Redacted() string { return RedactDSN(s.DSN) }

// RedactDSN hides the password in a URL or key=value connection string.
func RedactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" && strings.Contains(dsn, "://") {
		if u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			}
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	fields := strings.Fields(dsn)
	for i, f := range fields {
		if k, _, ok := strings.Cut(f, "="); ok && strings.EqualFold(k, "password") {
			fields[i] = k + "=xxxxx"
		}
	}
	return strings.Join(fields, " ")
}

// report sends one progress line if anyone listens.
func report(progress func(string), line string) {
	if progress != nil {
		progress(line)
	}
}

// serverVersion connects once and asks the server for its version. Errors
// come from pgx unchanged: callers that hold a password must clean them.
func serverVersion(ctx context.Context, dsn string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer func() {
		// A short bound of its own: a closing handshake must not outlast
		// the caller's patience, nor be skipped because ctx just ended.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		conn.Close(ctx)
	}()
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "", err
	}
	return v, nil
}
