package pgserver

import (
	"errors"
	"strings"
)

// ErrNoDocker means no Docker engine answered (the container provider).
var ErrNoDocker = errors.New("no Docker engine answers")

// ErrNoImage means the PostgreSQL image is not on the Docker engine and the
// container provider may not pull it.
var ErrNoImage = errors.New("the PostgreSQL image is not on this Docker engine")

// ProviderFailure is one provider's failure in an auto start.
type ProviderFailure struct {
	Provider string
	Err      error
}

// NoServerError is an auto start that found no server: every provider it
// tried, and why each failed.
type NoServerError struct {
	Failures []ProviderFailure
}

func (e *NoServerError) Error() string {
	var b strings.Builder
	b.WriteString("no PostgreSQL server could be started or reached. " +
		"Any one of these fixes it: pass --dsn postgres://user:password@host/dbname for a server you have; " +
		"install Docker and start it; install PostgreSQL (Debian: apt-get install postgresql); " +
		"or let leaserace download PostgreSQL once (--pg embedded; --pg-mirror URL names a Maven repository on a closed network).")
	for _, f := range e.Failures {
		b.WriteString("\n" + f.Provider + ": " + f.Err.Error())
	}
	return b.String()
}

// Unwrap gives the providers' own errors.
func (e *NoServerError) Unwrap() []error {
	out := make([]error, len(e.Failures))
	for i, f := range e.Failures {
		out[i] = f.Err
	}
	return out
}

// Reason is the failures in one line for a banner: each provider and in
// a few words why it failed.
func (e *NoServerError) Reason() string {
	parts := make([]string, len(e.Failures))
	for i, f := range e.Failures {
		parts[i] = f.Provider + ": " + shortReason(f.Err)
	}
	return strings.Join(parts, "; ")
}

// shortReason is a provider's failure in a few words: the first clause of
// its message, which names what was missing.
func shortReason(err error) string {
	first, _, _ := strings.Cut(firstLine(err), ": ")
	return first
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
