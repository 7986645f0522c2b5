package pgdsn_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgdsn"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
)

// clearPGEnv empties the libpq variables for the test, so that only the
// DSN under test decides what the line says.
func clearPGEnv(t *testing.T) {
	for _, v := range []string{"PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGPASSWORD",
		"PGSSLMODE", "PGSSLROOTCERT", "PGSSLCERT", "PGSSLKEY", "PGOPTIONS", "PGSERVICE", "PGPASSFILE"} {
		t.Setenv(v, "")
	}
}

// shellArgs runs the line through a real shell with psql swapped for a
// printer, and returns the arguments psql would get.
func shellArgs(t *testing.T, line string) []string {
	t.Helper()
	rest, ok := strings.CutPrefix(line, "psql ")
	if !ok {
		t.Fatalf("line does not start with psql: %q", line)
	}
	out, err := exec.Command("sh", "-c", `for a in `+rest+`; do printf '%s\0' "$a"; done`).Output()
	if err != nil {
		t.Fatalf("sh on %q: %v", line, err)
	}
	args := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	return args
}

func TestPsqlCommandShapes(t *testing.T) {
	clearPGEnv(t)
	type want struct {
		host, user, db, sslmode, options string
		port                             uint16
		needsPassword                    bool
	}
	cases := []struct {
		name, dsn, schema, secret string
		env                       map[string]string
		want                      want
	}{
		{
			name:   "URL, unix socket in the query, as the local provider writes it",
			dsn:    "postgres://postgres@/postgres?host=/tmp/leaserace-local-1234&port=54321&sslmode=disable",
			schema: "lr_0123456789",
			want:   want{host: "/tmp/leaserace-local-1234", port: 54321, user: "postgres", db: "postgres", sslmode: "disable", options: "-csearch_path=lr_0123456789"},
		},
		{
			name:   "URL with a password and an IPv6 host, as a container's",
			dsn:    "postgres://postgres:Zq8%21secret-pw@[::1]:32768/postgres?sslmode=require",
			schema: "lr_abc", secret: "Zq8!secret-pw",
			want: want{host: "::1", port: 32768, user: "postgres", db: "postgres", sslmode: "require", options: "-csearch_path=lr_abc", needsPassword: true},
		},
		{
			name:   "URL with the password as a query parameter",
			dsn:    "postgresql://bob@db.example:6543/app?password=topsecret-q&application_name=x",
			schema: "lr_q", secret: "topsecret-q",
			want: want{host: "db.example", port: 6543, user: "bob", db: "app", options: "-csearch_path=lr_q", needsPassword: true},
		},
		{
			name:   "key=value with quoted values, spaces and a quote",
			dsn:    `host='/tmp/a dir/it\'s' port=5433 user='my user' password='pa ss\'word' dbname=app sslmode=verify-full sslrootcert='/etc/ca certs/root.pem'`,
			schema: "lr_kv", secret: `pa ss'word`,
			want: want{host: "/tmp/a dir/it's", port: 5433, user: "my user", db: "app", sslmode: "verify-full", options: "-csearch_path=lr_kv", needsPassword: true},
		},
		{
			name:   "key=value with the password in PGPASSWORD",
			dsn:    "host=127.0.0.1 port=5432 user=postgres dbname=postgres",
			env:    map[string]string{"PGPASSWORD": "from-the-env-pw"},
			schema: "lr_env", secret: "from-the-env-pw",
			want: want{host: "127.0.0.1", port: 5432, user: "postgres", db: "postgres", options: "-csearch_path=lr_env", needsPassword: true},
		},
		{
			name:   "sslmode from PGSSLMODE, and the DSN's own options kept before ours",
			dsn:    "host=localhost user=postgres dbname=postgres options='-c statement_timeout=5s'",
			env:    map[string]string{"PGSSLMODE": "prefer"},
			schema: "lr_opts",
			want:   want{host: "localhost", port: 5432, user: "postgres", db: "postgres", sslmode: "prefer", options: "-c statement_timeout=5s -csearch_path=lr_opts"},
		},
		{
			name:   "characters a shell expands inside double quotes",
			dsn:    "host=/tmp user='$HOME`id`' dbname='a\"b\\\\c'",
			schema: "lr_sh",
			want:   want{host: "/tmp", port: 5432, user: "$HOME`id`", db: `a"b\c`, options: "-csearch_path=lr_sh"},
		},
		{
			name:   "a ! that bash would expand from its history",
			dsn:    `host=/tmp user=postgres dbname='it\'s!'`,
			schema: "lr_bang",
			want:   want{host: "/tmp", port: 5432, user: "postgres", db: "it's!", options: "-csearch_path=lr_bang"},
		},
		{
			name:   "a schema that needs quoting in search_path and in options",
			dsn:    "host=/run/pg user=postgres dbname=postgres",
			schema: `Odd "name" with\ space`,
			want:   want{host: "/run/pg", port: 5432, user: "postgres", db: "postgres", options: `-csearch_path="Odd\ ""name""\ with\\\ space"`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			line, needsPW, err := pgdsn.PsqlCommand(c.dsn, c.schema)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s", line)
			if c.secret != "" && strings.Contains(line, c.secret) {
				t.Fatalf("the password is in the line: %s", line)
			}
			if strings.Contains(strings.ToLower(line), "password") {
				t.Errorf("the line names a password: %s", line)
			}
			if needsPW != c.want.needsPassword {
				t.Errorf("needsPassword = %v, want %v", needsPW, c.want.needsPassword)
			}
			args := shellArgs(t, line)
			if len(args) != 1 {
				t.Fatalf("the shell splits the line into %d words, want 1: %q", len(args), args)
			}
			// Read the conninfo back the way libpq does, with nothing from
			// the environment that the line does not say.
			clearPGEnv(t)
			cfg, err := pgconn.ParseConfig(args[0])
			if err != nil {
				t.Fatalf("conninfo %q does not parse: %v", args[0], err)
			}
			got := want{host: cfg.Host, port: cfg.Port, user: cfg.User, db: cfg.Database,
				options: cfg.RuntimeParams["options"], needsPassword: needsPW}
			if cfg.Password != "" {
				t.Errorf("the conninfo carries a password")
			}
			if i := strings.Index(args[0], "sslmode="); i >= 0 {
				got.sslmode, _, _ = strings.Cut(args[0][i+len("sslmode="):], " ")
			}
			if got != c.want {
				t.Errorf("conninfo %q reads as\n%+v, want\n%+v", args[0], got, c.want)
			}
		})
	}
}

func TestPsqlCommandRefusesWithoutShowingTheDSN(t *testing.T) {
	clearPGEnv(t)
	for _, dsn := range []string{"postgres://u:hunter2-pw@host:notaport/db", "host=x password=hunter2-pw port=nope"} {
		_, _, err := pgdsn.PsqlCommand(dsn, "lr_x")
		if err == nil {
			t.Fatalf("%q: no error", dsn)
		}
		if strings.Contains(err.Error(), "hunter2-pw") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	if _, _, err := pgdsn.PsqlCommand("host=/tmp", ""); err == nil {
		t.Error("no schema: no error")
	}
}

// psqlBinary is psql, or the test is skipped (failed when servers are
// required, as psql comes with them).
func psqlBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("psql")
	if err != nil {
		if os.Getenv("LEASERACE_REQUIRE_POSTGRES") == "1" {
			t.Fatal("psql is not installed (LEASERACE_REQUIRE_POSTGRES=1)")
		}
		t.Skip("psql is not installed")
	}
	return p
}

// runPsqlLine runs line as a shell would, with the query appended, and
// PGPASSWORD set from dsn when the line asks for it.
func runPsqlLine(t *testing.T, dsn, line string, needsPW bool, query string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", line+" -X -A -t -c "+shellQuoteT(query))
	cmd.Env = os.Environ()
	if needsPW {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(cmd.Env, "PGPASSWORD="+cfg.Password)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func shellQuoteT(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestPsqlCommandReachesTheRun runs the run's psql line with the real psql
// and sees the run's own leases row.
func TestPsqlCommandReachesTheRun(t *testing.T) {
	psqlBinary(t)
	dsn := pgtest.DSN(t)
	r := enginetest.Open(t, dsn, "renewal-race", scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff})
	if err := r.SeekTime(enginetest.Ctx(t), 1075); err != nil {
		t.Fatal(err)
	}
	line, needsPW, err := r.PsqlCommand()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, "search_path="+r.Schema()) {
		t.Errorf("the line does not set search_path to %s: %s", r.Schema(), line)
	}
	if got := runPsqlLine(t, dsn, line, needsPW, "SELECT owner, fence FROM leases"); got != "A|1" {
		t.Errorf("psql at 1075 under blind renewal read %q, want A|1", got)
	}
}

// TestPsqlCommandQuotesAnOddSchema creates a schema whose name needs every
// kind of quoting and reads a table in it through the line.
func TestPsqlCommandQuotesAnOddSchema(t *testing.T) {
	psqlBinary(t)
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	schema := `lr Odd "it's" \ name`
	id := pgx.Identifier{schema}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+id+"; CREATE TABLE "+id+".marker (v text); INSERT INTO "+id+".marker VALUES ('found')"); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "DROP SCHEMA "+id+" CASCADE")
	line, needsPW, err := pgdsn.PsqlCommand(dsn, schema)
	if err != nil {
		t.Fatal(err)
	}
	if got := runPsqlLine(t, dsn, line, needsPW, "SELECT v FROM marker"); got != "found" {
		t.Errorf("%s read %q, want found", line, got)
	}
}
