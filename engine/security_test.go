package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgdsn"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/resource"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// secretForms is a password as it may appear in text: as is, and escaped
// the ways a connection URL escapes it.
func secretForms(password string) []string {
	forms := []string{password}
	for _, e := range []string{url.QueryEscape(password), url.PathEscape(password)} {
		if e != password {
			forms = append(forms, e)
		}
	}
	return forms
}

// assertNoSecret fails if text shows any form of any password.
func assertNoSecret(t *testing.T, where, text string, passwords ...string) {
	t.Helper()
	for _, p := range passwords {
		for _, f := range secretForms(p) {
			if strings.Contains(text, f) {
				t.Errorf("%s shows a password:\n%s", where, text)
				return
			}
		}
	}
}

// captureLog sends the standard logger to a buffer for the test, so any
// log line the engine or its libraries write can be checked too.
func captureLog(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	prevOut, prevFlags := log.Writer(), log.Flags()
	log.SetOutput(&buf)
	t.Cleanup(func() { log.SetOutput(prevOut); log.SetFlags(prevFlags) })
	return &buf
}

// everyOutput renders a run's transcript in every format leaserace writes.
func everyOutput(t *testing.T, r *engine.Run) string {
	t.Helper()
	tr, err := r.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tr.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if err := transcript.WriteMarkdown(&b, tr); err != nil {
		t.Fatal(err)
	}
	if err := transcript.WriteMermaid(&b, tr); err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Steps() {
		fmt.Fprintf(&b, "%+v\n", s)
	}
	fmt.Fprintf(&b, "%+v\n%s\n", r.View(), r.ResourceURL())
	return b.String()
}

// withPassword puts another password (and database) into a URL DSN.
func withPassword(t *testing.T, dsn, password, db string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), password)
	if db != "" {
		u.Path = "/" + db
	}
	return u.String()
}

// checkPasswordStaysHidden plays a run on a server that wants a password
// and runs into the errors a person meets, none of which may show it.
func checkPasswordStaysHidden(t *testing.T, dsn, password string) *engine.Run {
	t.Helper()
	logged := captureLog(t)
	wrong := "wrong-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	sc, err := scenario.Builtin("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Open(enginetest.Ctx(t), engine.Config{DSN: dsn, Scenario: sc, Knobs: blindOff(), Provider: "test"})
	if err != nil {
		t.Fatalf("open with the right password: %v", err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	if err := r.PlayAll(enginetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	assertNoSecret(t, "the transcript", everyOutput(t, r), password)

	for _, tc := range []struct{ name, dsn string }{
		{"wrong password", withPassword(t, dsn, wrong, "")},
		{"missing database", withPassword(t, dsn, password, "no_such_database")},
		{"unparsable DSN", strings.Replace(withPassword(t, dsn, password, ""), "@", "@[", 1)},
	} {
		_, err := engine.Open(enginetest.Ctx(t), engine.Config{DSN: tc.dsn, Scenario: sc, Knobs: blindOff()})
		if err == nil {
			t.Errorf("%s: opened", tc.name)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
		assertNoSecret(t, tc.name+" (run)", err.Error(), password, wrong)
		_, err = resource.Start(enginetest.Ctx(t), resource.Config{DSN: tc.dsn})
		if err == nil {
			t.Errorf("%s: the resource started", tc.name)
			continue
		}
		assertNoSecret(t, tc.name+" (resource)", err.Error(), password, wrong)
	}
	t.Cleanup(func() { assertNoSecret(t, "the log", logged.String(), password, wrong) })
	return r
}

// scramCluster is a local cluster of the test's own that asks every
// session for a password (scram-sha-256), with a role that may create the
// run's schemas. The password holds characters a URL must escape.
func scramCluster(t *testing.T) (c *ownCluster, dsn, password string) {
	t.Helper()
	c = startOwnCluster(t)
	role := "lr_scram"
	password = "p@ss w/rd'%&-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ctx := enginetest.Ctx(t)
	conn, err := pgx.Connect(ctx, c.srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The password is a literal here only because CREATE ROLE takes no
	// parameters; it is the test's own, quoted for SQL.
	quoted := "'" + strings.ReplaceAll(password, "'", "''") + "'"
	for _, q := range []string{
		"CREATE ROLE " + role + " LOGIN PASSWORD " + quoted,
		"GRANT CREATE ON DATABASE postgres TO " + role,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	hba := filepath.Join(c.data, "pg_hba.conf")
	if err := os.WriteFile(hba, []byte("local all all scram-sha-256\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword(role, password), Path: "/postgres",
		RawQuery: "host=" + url.QueryEscape(c.srv.ID) + "&port=5432&sslmode=disable"}
	return c, u.String(), password
}

func TestSecurityNoPasswordInAnyOutput(t *testing.T) {
	// Not parallel: it captures the standard logger (serial tests run
	// before the parallel ones start).
	t.Run("local cluster with scram passwords", func(t *testing.T) {
		c, dsn, password := scramCluster(t)
		r := checkPasswordStaysHidden(t, dsn, password)

		// The server dies under the run: no message on the way down or
		// back up may show the password either.
		if err := r.Seek(enginetest.Ctx(t), 2); err != nil {
			t.Fatal(err)
		}
		c.stop(t, syscall.SIGQUIT)
		var errs []error
		for range r.Len() {
			_, err := r.Next(enginetest.Ctx(t))
			errs = append(errs, err)
			if err != nil {
				break
			}
		}
		errs = append(errs, r.Reconnect(enginetest.Ctx(t)), r.Seek(enginetest.Ctx(t), 0), r.Close(enginetest.Ctx(t)))
		for _, err := range errs {
			if err != nil {
				assertNoSecret(t, "an error after the server died", err.Error(), password)
			}
		}
		if err := errors.Join(errs...); err == nil || !engine.IsServerGone(err) {
			t.Errorf("no error named the dead server: %v", err)
		}
		assertNoSecret(t, "the transcript after the fault", everyOutput(t, r), password)
	})
	t.Run("container", func(t *testing.T) {
		for _, s := range pgtest.Servers(t) {
			if s.Provider != "container" {
				continue
			}
			u, err := url.Parse(s.DSN)
			if err != nil {
				t.Fatal(err)
			}
			password, ok := u.User.Password()
			if !ok || password == "" {
				t.Fatalf("the container's DSN has no password: %s", pgdsn.Redact(s.DSN))
			}
			checkPasswordStaysHidden(t, s.DSN, password)
			return
		}
		t.Skip("no container provider here")
	})
}

func TestSecurityResourceListensOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.invalid:0", "127.0.0.1"} {
		_, err := resource.Start(enginetest.Ctx(t), resource.Config{DSN: "postgres://nobody@127.0.0.1:1/none", Listen: addr})
		if err == nil || !strings.Contains(err.Error(), "loopback") && !strings.Contains(err.Error(), "host:port") {
			t.Errorf("listen %q: %v", addr, err)
		}
	}
	// Loopback is fine, and what it binds is loopback.
	dsn := pgtest.DSN(t)
	for _, addr := range []string{"", "127.0.0.1:0", "localhost:0"} {
		res, err := resource.Start(enginetest.Ctx(t), resource.Config{DSN: dsn, Listen: addr})
		if err != nil {
			t.Errorf("listen %q: %v", addr, err)
			continue
		}
		u, err := url.Parse(res.URL())
		if err != nil || (u.Hostname() != "127.0.0.1" && u.Hostname() != "::1") {
			t.Errorf("listen %q gave %s", addr, res.URL())
		}
		if err := res.Close(enginetest.Ctx(t)); err != nil {
			t.Error(err)
		}
	}
}

// hostile is SQL that would do damage if it ever reached a statement as text.
const hostile = `'); DROP TABLE leases; --`

// hostileScenario is renewal-race with SQL in every field that is data: the
// lease name, the values, the title and the notes.
func hostileScenario(t *testing.T) *scenario.Scenario {
	t.Helper()
	q := strconv.Quote(hostile)
	src := `name: hostile
title: ` + q + `
description: ` + q + `
lease: ` + q + `
window: {from: 1060, to: 1135}
ttl: 60
initial:
  coordinator: {owner: A, fence: 1, lease_version: 1, expires_at: 1060}
  resource: {epoch: 1, value: ` + q + `}
events:
  - {t: 1055, actor: A, action: heartbeat.send, heartbeat: hb1, note: ` + q + `}
  - {t: 1060, action: expire}
  - {t: 1070, actor: B, action: acquire}
  - {t: 1070, actor: B, action: effect, value: {"sql": "DELETE FROM effects; DROP TABLE resource_state; --"}}
  - {t: 1075, actor: A, action: heartbeat.deliver, heartbeat: hb1}
  - {t: 1080, actor: A, action: effect, value: ` + q + `}
expect:
  - {renewal: "*", fencing: "*", effects: 1, verdict: safe}
`
	sc, err := scenario.Parse("hostile.yaml", []byte(src))
	if err != nil {
		t.Fatalf("a scenario with SQL in its data was refused: %v", err)
	}
	return sc
}

func TestSecurityScenarioValuesNeverBecomeSQL(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	sc := hostileScenario(t)
	for _, k := range []scenario.Knobs{blindOff(), {Renewal: scenario.RenewalCompare, Fencing: scenario.FencingMonotonic}} {
		t.Run(k.String(), func(t *testing.T) {
			r := enginetest.OpenScenario(t, dsn, sc, k)
			if err := r.PlayAll(enginetest.Ctx(t)); err != nil {
				t.Fatalf("the hostile scenario did not run: %v", err)
			}
			for _, s := range r.Steps() {
				if strings.Contains(s.SQL, "DROP") || strings.Contains(s.SQL, hostile) {
					t.Errorf("step %s %s ran SQL built from data: %s", s.Actor, s.Action, s.SQL)
				}
			}
			acquire := stepAt(t, r.Steps(), "B", scenario.ActionAcquire)
			if len(acquire.Args) == 0 || acquire.Args[0] != hostile {
				t.Errorf("the lease name is not the statement's first parameter: %v", acquire.Args)
			}

			// From another session: every table is there, and the hostile
			// text sits in them as data.
			ctx := enginetest.Ctx(t)
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			schema := pgx.Identifier{r.Schema()}.Sanitize()
			res := pgx.Identifier{r.Schema() + "_res"}.Sanitize()
			for _, tbl := range []string{schema + ".leases", res + ".resource_state", res + ".effects"} {
				var exists bool
				if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", tbl).Scan(&exists); err != nil || !exists {
					t.Errorf("table %s is gone (%v)", tbl, err)
				}
			}
			var name string
			var rows int
			if err := conn.QueryRow(ctx, "SELECT min(name), count(*) FROM "+schema+".leases").Scan(&name, &rows); err != nil {
				t.Fatal(err)
			}
			if name != hostile || rows != 1 {
				t.Errorf("leases holds %d rows, name %q", rows, name)
			}
			var effects int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+res+".effects WHERE value::text LIKE '%DROP TABLE%'").Scan(&effects); err != nil {
				t.Fatal(err)
			}
			if effects == 0 {
				t.Error("the hostile values were not stored as data")
			}
		})
	}
}

func TestSecurityScenarioNamesRefuseSQL(t *testing.T) {
	t.Parallel()
	base := func(field, value string) string {
		v := strconv.Quote(value)
		name, actor, owner, hb, tname := "x", "A", "A", "h", "beat"
		switch field {
		case "name":
			name = v
		case "actor":
			actor = v
		case "owner":
			owner = v
		case "heartbeat":
			hb = v
		case "time name":
			tname = v
		}
		return fmt.Sprintf(`name: %s
window: {from: 0, to: 100}
ttl: 60
times: {%s: 10}
initial:
  coordinator: {owner: %s, fence: 1, lease_version: 1, expires_at: 50}
events:
  - {t: 10, actor: %s, action: heartbeat.send, heartbeat: %s}
expect:
  - {renewal: "*", fencing: "*", effects: 0, verdict: safe}
`, name, tname, owner, actor, hb)
	}
	for _, field := range []string{"name", "actor", "owner", "heartbeat", "time name"} {
		for _, value := range []string{hostile, `A"; SELECT pg_sleep(10); --`, "../../etc/passwd", "A B", "a\x00b"} {
			_, err := scenario.Parse("bad.yaml", []byte(base(field, value)))
			var se *scenario.Error
			if !errors.As(err, &se) {
				t.Errorf("%s %q: want a *scenario.Error, got %v", field, value, err)
				continue
			}
			if se.Line == 0 || !strings.Contains(se.Msg, field) && !strings.Contains(se.Msg, "want") {
				t.Errorf("%s %q: the message does not say what or where: %v", field, value, err)
			}
		}
	}
	// The same file with plain names is accepted: the refusals are about
	// the names alone.
	if _, err := scenario.Parse("ok.yaml", []byte(base("", ""))); err != nil {
		t.Fatalf("the plain scenario is refused: %v", err)
	}
}

func TestSecurityScenarioHasNoFieldForSQL(t *testing.T) {
	t.Parallel()
	src, err := scenario.BuiltinSource("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ where, old, new string }{
		{"top level", "ttl: 60\n", "ttl: 60\nsql: DROP TABLE leases\n"},
		{"an event", "action: expire}", "action: expire, sql: 'DROP TABLE leases'}"},
		{"the initial row", "expires_at: 1060}", "expires_at: 1060, sql: 'DELETE FROM leases'}"},
		{"an expectation", "verdict: conflict,", "verdict: conflict, query: 'SELECT 1',"},
	} {
		bad := bytes.Replace(src, []byte(tc.old), []byte(tc.new), 1)
		if bytes.Equal(bad, src) {
			t.Fatalf("%s: %q not found in renewal-race", tc.where, tc.old)
		}
		_, err := scenario.Parse("sql.yaml", bad)
		var se *scenario.Error
		if !errors.As(err, &se) || se.Line == 0 || !strings.Contains(se.Msg, "unknown field") {
			t.Errorf("SQL in %s: want an unknown-field error with its line, got %v", tc.where, err)
		}
	}
}
