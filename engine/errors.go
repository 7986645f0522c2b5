package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/leaserace/leaserace/engine/resource"
)

// The parts of leaserace a failure can be blamed on, as Part names them.
const (
	PartPostgreSQL = "PostgreSQL"
	PartResource   = "resource"
)

// IsServerGone reports whether err means PostgreSQL went away or cannot be
// reached right now: the server was stopped, killed or restarted, refused
// the connection, or ended the session (SQLSTATE 57P01 admin shutdown,
// 57P02 crash shutdown, 57P03 cannot connect now, class 08 connection
// exceptions). Reconnecting, once the server is back, is the way out.
//
// A statement the server rejected (a syntax error, a wrong password, a
// missing database) is not "gone", nor is a run the caller cancelled. A
// deadline that ran out while waiting for the server counts: the server did
// not answer. A write the resource could not store because its own
// PostgreSQL connection failed (HTTP 503) counts as well.
func IsServerGone(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ce *resource.CallError
	if errors.As(err, &ce) {
		// The resource's own store failing is PostgreSQL gone; the
		// resource not answering is not.
		return ce.StoreDown()
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// The server's own word decides: it answered, so only a code that
		// says the session is over means gone.
		return sessionOver(pgErr.Code)
	}
	if isLocalListenError(err) {
		return false
	}
	var netErr net.Error
	switch {
	case errors.Is(err, errNotConnected), errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		// Refused, reset, a missing Unix socket, a DNS failure: the
		// server cannot be reached.
		errors.As(err, &netErr),
		pgconn.Timeout(err):
		return true
	}
	return false
}

// IsResourceDown reports whether err means the resource stopped answering:
// a request to it was refused, reset or cut off, or got no answer in time.
// A write the resource answered, even with a refusal, is not "down".
func IsResourceDown(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ce *resource.CallError
	return errors.As(err, &ce) && ce.Unanswered()
}

// Part names the part of leaserace that failed, for a person: PartPostgreSQL
// or PartResource, or "" when err is nil, a cancellation, or not the fault
// of either (a bad scenario, say).
func Part(err error) string {
	switch {
	case err == nil || errors.Is(err, context.Canceled):
		return ""
	case IsServerGone(err):
		return PartPostgreSQL
	case IsResourceDown(err):
		return PartResource
	}
	var ce *resource.CallError
	if errors.As(err, &ce) || isLocalListenError(err) {
		// The resource answered with an error, or could not listen.
		return PartResource
	}
	var pgErr *pgconn.PgError
	var connErr *pgconn.ConnectError
	if errors.As(err, &pgErr) || errors.As(err, &connErr) {
		return PartPostgreSQL
	}
	return ""
}

// explainFault puts the failed part in front of err in words, so a message
// printed as it is (by the headless commands) already says what broke.
func explainFault(err error) error {
	switch {
	case IsServerGone(err):
		return fmt.Errorf("lost the connection to PostgreSQL: %w", err)
	case IsResourceDown(err):
		return fmt.Errorf("the resource is not answering: %w", err)
	}
	return err
}

// sessionOver tells whether a SQLSTATE means the session or the server is
// gone, rather than that one statement failed.
func sessionOver(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03":
		return true
	}
	return strings.HasPrefix(code, "08")
}

// isLocalListenError is the resource failing to listen on its own port: a
// net error too, but nothing to do with PostgreSQL.
func isLocalListenError(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "listen"
}

// errNotConnected is a run whose sessions are gone after a reconnect that
// failed: reconnecting again is the way out, so it counts as server gone.
var errNotConnected = errors.New("not connected: the last reconnect did not succeed")
