package main

// Faults met by the headless commands: they exit non-zero with one message
// that names the part that failed, print no transcript, and show no password.

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgserver"
)

// passwordCluster starts a local cluster of the test's own whose sessions
// must give a password, and returns a DSN with it and the cluster.
func passwordCluster(t *testing.T) (*pgserver.Server, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := pgserver.LocalProvider{}.Start(ctx, nil)
	if err != nil {
		if os.Getenv("LEASERACE_REQUIRE_POSTGRES") == "1" {
			t.Fatalf("no local cluster (LEASERACE_REQUIRE_POSTGRES=1): %v", err)
		}
		t.Skipf("no local cluster: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Close(ctx)
	})
	conn, err := pgx.Connect(ctx, srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	password := "fault p@ss/" + strconv.FormatInt(time.Now().UnixNano(), 36)
	// CREATE ROLE takes no parameters; the password is the test's own.
	quoted := "'" + strings.ReplaceAll(password, "'", "''") + "'"
	for _, q := range []string{
		"CREATE ROLE lr_fault LOGIN PASSWORD " + quoted,
		"GRANT CREATE ON DATABASE postgres TO lr_fault",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(srv.ID, "data", "pg_hba.conf"), []byte("local all all scram-sha-256\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword("lr_fault", password), Path: "/postgres",
		RawQuery: "host=" + url.QueryEscape(srv.ID) + "&port=5432&sslmode=disable"}
	return srv, u.String(), password
}

func TestFaultHeadlessRunNamesPostgreSQL(t *testing.T) {
	t.Parallel()
	srv, dsn, password := passwordCluster(t)
	s := startLeaserace(t, []string{"NO_COLOR=1"}, "run", "--pg", "dsn", "--dsn", dsn, "--scenario", longScenario(t, 1000))
	if !s.stderr.waitFor("PostgreSQL via", 2*time.Minute) {
		t.Fatalf("the run never started:\n%s", s.stderr.String())
	}
	// Stop the server once the run is stepping, not while it sets up: a
	// loaded machine may take longer than any fixed pause to get there.
	waitForEffects(t, dsn, 2*time.Minute)
	// Immediate shutdown of the server under the run.
	stopCluster(t, srv.ID)
	code := s.wait(t, time.Minute)
	out, errOut := s.stdout.String(), s.stderr.String()
	t.Logf("exit %d:\n%s", code, errOut)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(errOut, "lost the connection to PostgreSQL") {
		t.Errorf("the message does not name PostgreSQL:\n%s", errOut)
	}
	// A server given by DSN keeps the run's schemas: say so, and which.
	if !strings.Contains(errOut, "the run's schemas stay on it; drop them once it is back") || !strings.Contains(errOut, "lr_") {
		t.Errorf("no word that the run's schemas stay on the server, and which:\n%s", errOut)
	}
	if out != "" {
		t.Errorf("a failed run printed a transcript:\n%s", clipOut(out))
	}
	for _, form := range []string{password, url.QueryEscape(password), url.PathEscape(password)} {
		if strings.Contains(out+errOut, form) {
			t.Errorf("the output shows the password:\n%s", errOut)
		}
	}
}

func TestFaultHeadlessRunNamesTheResource(t *testing.T) {
	t.Parallel()
	// PostgreSQL refuses the value (jsonb holds no NUL), the resource
	// answers 400, and the run stops at that step.
	res := leaserace(t, append([]string{"run", "--scenario", badValueScenario(t)}, pgArgs(t)...)...)
	if res.code != 1 {
		t.Fatalf("exit %d, want 1\n%v", res.code, res)
	}
	for _, want := range []string{"step 2 (t=2, W write)", "resource", "jsonb"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("the message lacks %q:\n%s", want, res.stderr)
		}
	}
	if res.stdout != "" {
		t.Errorf("a failed run printed a transcript:\n%s", clipOut(res.stdout))
	}
}

// waitForEffects waits until some run's resource on the server behind dsn
// has recorded a write.
func waitForEffects(t *testing.T, dsn string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for {
		var schemas []string
		rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lr\_%\_res'`)
		if err == nil {
			schemas, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil {
			t.Fatalf("looking for the run's resource schema: %v", err)
		}
		for _, schema := range schemas {
			var n int
			// The table may not be there yet: a failed count is a no.
			if conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "effects"}.Sanitize()).Scan(&n) == nil && n > 0 {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no write reached the resource within %s", d)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
