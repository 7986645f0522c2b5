// Package pgserver starts, finds and stops the PostgreSQL servers leaserace
// runs against: a throwaway local cluster, the embedded server, or a server
// behind a DSN. The container provider is pgcontainer's, and choosing one by
// name or the first that works (auto) is choose's: only what may run a
// container links Docker's client. Reading a connection string (redaction,
// the psql line) is pgdsn's.
package pgserver

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgdsn"
)

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
	// ID names what Start made, so it can be found and removed even after
	// a crash: the container's id, or the local cluster's directory. Empty
	// for a server leaserace did not start.
	ID string
	// stop tears the server down; nil for servers leaserace did not start.
	stop func(context.Context) error

	closing  sync.Once
	closeErr error
}

// Close stops the server if leaserace started it. It is safe to call twice
// and from several goroutines (say, a signal handler and the normal exit
// path): later calls wait for the first and return its result. Close keeps
// cleaning up even when ctx is already done, so it can follow a Ctrl-C.
func (s *Server) Close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	s.closing.Do(func() {
		if s.stop != nil {
			s.closeErr = s.stop(ctx)
		}
	})
	return s.closeErr
}

// Redacted is the DSN with any password replaced, safe to print.
func (s *Server) Redacted() string { return pgdsn.Redact(s.DSN) }

// report sends one progress line if anyone listens.
func report(progress func(string), line string) {
	if progress != nil {
		progress(line)
	}
}

// NewServer is a server another package's provider started (pgcontainer):
// Close runs stop once. A nil stop is a server leaserace did not start.
func NewServer(provider, dsn, id, version string, took time.Duration, stop func(context.Context) error) *Server {
	return &Server{Provider: provider, DSN: dsn, ID: id, Version: version, Took: took, stop: stop}
}

// ServerVersion connects once and asks the server for its version. Errors
// come from pgx unchanged: callers that hold a password must clean them.
func ServerVersion(ctx context.Context, dsn string) (string, error) {
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

// WithoutSecret makes sure an error's text does not carry a password. When
// it does, the text is redacted and the original error dropped, since
// anything that unwrapped it could print the password again.
func WithoutSecret(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), secret, "xxxxx"))
}
