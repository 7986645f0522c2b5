// Package pgserver starts, finds and stops the PostgreSQL servers leaserace
// runs against: a container (testcontainers-go), a throwaway local cluster,
// a server behind a DSN, or the first of these that works (auto); and
// says how to reach one with psql.
package pgserver

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
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
func (s *Server) Redacted() string { return RedactDSN(s.DSN) }

// RedactDSN hides the password in a URL or key=value connection string. It
// edits the text in place rather than parsing and re-printing it, so it also
// masks passwords in strings a parser would reject.
func RedactDSN(dsn string) string {
	if scheme, rest, ok := strings.Cut(dsn, "://"); ok {
		return scheme + "://" + redactURL(rest)
	}
	return redactKeywords(dsn)
}

const redactedMask = "xxxxx"

// isPasswordKey names the connection settings that hold secrets.
func isPasswordKey(k string) bool {
	return strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword")
}

// redactURL masks the userinfo password and password query values of a URL
// without its scheme.
func redactURL(rest string) string {
	head, query, hasQuery := strings.Cut(rest, "?")
	// The last @ ends the userinfo: an unescaped @ in a password comes earlier.
	if at := strings.LastIndexByte(head, '@'); at >= 0 {
		if user, _, hasPW := strings.Cut(head[:at], ":"); hasPW {
			head = user + ":" + redactedMask + head[at:]
		}
	}
	if !hasQuery {
		return head
	}
	params := strings.Split(query, "&")
	for i, kv := range params {
		k, _, _ := strings.Cut(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil && isPasswordKey(uk) {
			params[i] = k + "=" + redactedMask
		}
	}
	return head + "?" + strings.Join(params, "&")
}

// redactKeywords masks password values in libpq key=value syntax, where a
// value may be 'quoted' and hold spaces and backslash escapes.
func redactKeywords(dsn string) string {
	var b strings.Builder
	i := 0
	for i < len(dsn) {
		eq := strings.IndexByte(dsn[i:], '=')
		if eq < 0 {
			break
		}
		eq += i
		key := strings.TrimSpace(dsn[i:eq])
		if f := strings.Fields(key); len(f) > 0 {
			key = f[len(f)-1]
		}
		// The value starts after the = and any spaces.
		start := eq + 1
		for start < len(dsn) && dsn[start] == ' ' {
			start++
		}
		end := valueEnd(dsn, start)
		b.WriteString(dsn[i:start])
		if isPasswordKey(key) {
			b.WriteString(redactedMask)
		} else {
			b.WriteString(dsn[start:end])
		}
		i = end
	}
	b.WriteString(dsn[i:])
	return b.String()
}

// valueEnd finds where a key=value value that starts at start ends.
func valueEnd(s string, start int) int {
	quoted := start < len(s) && s[start] == '\''
	i := start
	if quoted {
		i++
	}
	for i < len(s) {
		switch c := s[i]; {
		case c == '\\':
			i += 2
			continue
		case quoted && c == '\'':
			return i + 1
		case !quoted && (c == ' ' || c == '\t' || c == '\n'):
			return i
		}
		i++
	}
	return len(s)
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

// withoutSecret makes sure an error's text does not carry a password. When
// it does, the text is redacted and the original error dropped, since
// anything that unwrapped it could print the password again.
func withoutSecret(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), secret, "xxxxx"))
}
