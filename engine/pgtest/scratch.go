package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ScratchDatabase creates an empty database on the server behind dsn,
// named prefix and a random suffix, and drops it (with whatever is still
// connected to it) when the test ends. It returns the database's name.
func ScratchDatabase(t testing.TB, dsn, prefix string) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	exec := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE DATABASE " + pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("cannot create a scratch database: %v", err)
	}
	t.Cleanup(func() {
		if err := exec("DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)"); err != nil {
			t.Errorf("cannot drop the scratch database: %v", err)
		}
	})
	return name
}

// ScratchDSN is ScratchDatabase's database reached as dsn reaches its
// server: a database of the test's own, where whatever it counts (schemas,
// sessions) is its own, whatever else runs on the server.
func ScratchDSN(t testing.TB, dsn, prefix string) string {
	t.Helper()
	return WithDatabase(t, dsn, ScratchDatabase(t, dsn, prefix))
}

// WithDatabase points a DSN (URL or key=value) at database name.
func WithDatabase(t testing.TB, dsn, name string) string {
	t.Helper()
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("test DSN: %v", err)
		}
		u.Path = "/" + name
		return u.String()
	}
	return dsn + " dbname=" + name
}
