package tui

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/screen"
	"github.com/leaserace/leaserace/tui/tuitest"
)

// psqlOnScreen reads the psql command back from a frame: the line that
// starts it and the lines it wraps onto, up to its closing quote, joined
// by line breaks as a copy from the terminal would be.
func psqlOnScreen(t *testing.T, frame string) string {
	t.Helper()
	lines := strings.Split(frame, "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, " ")
		if !strings.HasPrefix(l, `psql "`) && !strings.HasPrefix(l, `psql '`) {
			continue
		}
		quote := l[len("psql ")]
		cmd := []string{l}
		for j := i + 1; (len(l) <= len("psql  ") || l[len(l)-1] != quote) && j < len(lines); j++ {
			l = strings.TrimRight(lines[j], " ")
			cmd = append(cmd, l)
		}
		return strings.Join(cmd, "\n")
	}
	t.Fatalf("no psql line on screen:\n%s", frame)
	return ""
}

// psqlRun runs a psql command line as a shell would, with the query
// appended; PGPASSWORD comes from the test server's DSN, as the presenter
// would set it.
func psqlRun(t *testing.T, line, query string) string {
	t.Helper()
	if _, err := exec.LookPath("psql"); err != nil {
		if os.Getenv("LEASERACE_REQUIRE_POSTGRES") == "1" {
			t.Fatal("psql is not installed (LEASERACE_REQUIRE_POSTGRES=1)")
		}
		t.Skip("psql is not installed")
	}
	cmd := exec.Command("sh", "-c", line+" -X -A -t -c '"+query+"'")
	cmd.Env = append(os.Environ(), "PGPASSWORD="+serverPassword(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// TestFullHelpShowsPsqlBesideTheRun reads the psql line from the full
// help, runs it with the real psql and sees what the screen shows; R
// keeps it true, and a scenario switch changes it to the new run's schema.
func TestFullHelpShowsPsqlBesideTheRun(t *testing.T) {
	t.Parallel()
	m := at1075(t, blindOff(), 120, 40)
	if strings.Contains(m.View(), "psql") {
		t.Fatalf("the short help already shows psql:\n%s", m.View())
	}
	m = press(t, m, "?")
	v := m.View()
	tuitest.CheckFrame(t, "full help", v, 120, 40)
	schema := m.run.Schema()
	if !strings.Contains(v, "schema "+schema) {
		t.Errorf("the full help does not name the run's schema %s:\n%s", schema, v)
	}
	line := psqlOnScreen(t, v)
	if !strings.Contains(line, "search_path="+schema) {
		t.Errorf("the psql line does not set search_path to %s:\n%s", schema, line)
	}
	if got := psqlRun(t, line, "SELECT owner, fence FROM leases"); got != "A|1" {
		t.Errorf("psql beside blind renewal at 1075 read %q, want A|1 as on screen", got)
	}

	m = press(t, m, "R")
	if m.Failure != nil {
		t.Fatalf("R: %v", m.Failure)
	}
	if again := psqlOnScreen(t, m.View()); again != line {
		t.Errorf("after R the psql line changed:\n%s\nwas\n%s", again, line)
	}
	if got := psqlRun(t, line, "SELECT owner, fence FROM leases"); got != "A|1" {
		t.Errorf("after R psql read %q, want A|1", got)
	}

	m = press(t, m, "s")
	for m.Chooser.Names[m.Chooser.Cursor] != "control" {
		m = press(t, m, "down")
	}
	m = press(t, m, "enter")
	if m.Snap.Scenario.Name != "control" {
		t.Fatalf("switched to %s, want control", m.Snap.Scenario.Name)
	}
	v = m.View()
	next := m.run.Schema()
	if next == schema || !strings.Contains(v, "schema "+next) || strings.Contains(v, schema) {
		t.Errorf("after the switch the help should name %s and not %s:\n%s", next, schema, v)
	}
	line = psqlOnScreen(t, v)
	if !strings.Contains(line, "search_path="+next) {
		t.Errorf("after the switch the psql line does not set search_path to %s:\n%s", next, line)
	}
	if got := psqlRun(t, line, "SELECT owner, fence, expires_at FROM leases"); got != "A|1|1060" {
		t.Errorf("psql beside control at its start read %q, want A|1|1060", got)
	}
}

func TestFullHelpOfAReplayHasNoPsql(t *testing.T) {
	t.Parallel()
	rp, err := engine.ShippedReplay("renewal-race", blindOff())
	if err != nil {
		t.Fatal(err)
	}
	m := press(t, replayModel(t, rp, "", 120, 40), "?")
	v := m.View()
	if !strings.Contains(v, "psql beside it: none (replay: no database)") {
		t.Errorf("the replay's full help does not say it has no psql:\n%s", v)
	}
	if strings.Contains(v, `psql "`) {
		t.Errorf("a replay shows a psql line:\n%s", v)
	}
}

// TestRunWritesThePsqlLineToStderr runs the whole TUI with standard error
// in a buffer: the line of the run opened at start, then of the scenario
// switched to; both work with the real psql.
func TestRunWritesThePsqlLineToStderr(t *testing.T) {
	t.Parallel()
	stderr := &termOut{}
	at := int64(1075)
	keys, out, done := runTUI(t, context.Background(), Options{
		Scenario: "renewal-race", Knobs: enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff),
		At: &at, Stderr: stderr,
	})
	out.waitFor(t, "event 5/6")
	stderr.waitFor(t, "psql beside renewal-race")
	// Each run writes a heading and the line, and, on a server given a
	// password (LEASERACE_TEST_DSN may hold one), how to pass it to psql.
	per, want := 2, "the heading and the line"
	if serverPassword(t) != "" {
		per, want = 3, "the heading, the line and how to give psql the password"
	}
	first := stderrLines(stderr)
	if len(first) != per || !strings.HasPrefix(first[1], "psql ") || (per == 3 && !strings.Contains(first[2], "PGPASSWORD")) {
		t.Fatalf("stderr at start: %q, want %s", first, want)
	}
	if got := psqlRun(t, first[1], "SELECT owner, fence FROM leases"); got != "A|1" {
		t.Errorf("the start's psql line read %q, want A|1", got)
	}
	// The chooser lists the built-ins in order: control is the second.
	for _, k := range []string{"s", "j", "\r"} {
		if _, err := keys.Write([]byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	stderr.waitFor(t, "psql beside control")
	all := stderrLines(stderr)
	if len(all) != 2*per || all[per+1] == first[1] || !strings.HasPrefix(all[per+1], "psql ") {
		t.Fatalf("stderr after the switch: %q, want %s again, for another run", all, want)
	}
	if got := psqlRun(t, all[per+1], "SELECT owner FROM leases"); got != "A" {
		t.Errorf("the switched run's psql line read %q, want A", got)
	}
	if _, err := keys.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	if err := waitRun(t, done); err != nil {
		t.Fatalf("q: Run returned %v", err)
	}
	if strings.Contains(strings.Join(all, "\n"), "password=") {
		t.Errorf("stderr names a password: %q", all)
	}
}

// serverPassword is the password in the test server's DSN ("" for none).
func serverPassword(t *testing.T) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Password
}

func stderrLines(s *termOut) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSuffix(s.b.String(), "\n"), "\n")
}

// withPassword is the test server's DSN carrying a password. The test
// cluster trusts local connections and ignores it; a server of one's own
// already has one in its DSN.
func withPassword(t *testing.T, secret string) (dsn, password string) {
	t.Helper()
	dsn = pgtest.DSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Password != "" {
		return dsn, cfg.Password
	}
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		u.User = url.UserPassword(u.User.Username(), secret)
		return u.String(), secret
	}
	return dsn + " password=" + secret, secret
}

// TestFullHelpSaysToSetPGPASSWORD opens a run on a DSN with a password:
// the full help says to set PGPASSWORD and never shows the password; for
// a container leaserace started it says psql cannot log in from outside.
func TestFullHelpSaysToSetPGPASSWORD(t *testing.T) {
	t.Parallel()
	dsn, secret := withPassword(t, "never-shown-pw-4711")
	for _, c := range []struct{ provider, want string }{
		{"dsn", "set PGPASSWORD to it first"},
		{"container", "psql cannot log in from outside"},
	} {
		t.Run(c.provider, func(t *testing.T) {
			sc, err := scenario.Builtin("control")
			if err != nil {
				t.Fatal(err)
			}
			ctx := enginetest.Ctx(t)
			run, err := engine.Open(ctx, engine.Config{DSN: dsn, Scenario: sc, Knobs: blindOff(), Provider: c.provider})
			if err != nil {
				t.Fatal(err)
			}
			m, err := NewModel(context.Background(), Config{Run: run, DSN: dsn, Provider: c.provider, Renderer: tuitest.ASCIIRenderer()})
			if err != nil {
				_ = run.Close(ctx)
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = m.Close(context.Background()) })
			m = press(t, send(t, m, tea.WindowSizeMsg{Width: 120, Height: 40}), "?")
			v := m.View()
			if !strings.Contains(flatText(v), c.want) {
				t.Errorf("the full help does not say %q:\n%s", c.want, v)
			}
			if strings.Contains(v, secret) {
				t.Fatalf("the full help shows the password:\n%s", v)
			}
			if c.provider == "dsn" {
				// Set as the help says, the line reaches the run.
				if got := psqlRun(t, psqlOnScreen(t, v), "SELECT owner FROM leases"); got != "A" {
					t.Errorf("psql read %q, want A", got)
				}
			}
		})
	}
}

// TestAnotherRunIsToldByItself: the psql line goes to standard error when
// an op puts another run on screen, told by the run itself: not on a step
// of the same run, and also when the op failed after opening the run,
// whose psql line then replaces the old one.
func TestAnotherRunIsToldByItself(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", blindOff(), 120, 40)
	var stderr bytes.Buffer
	m.stderr = &stderr
	m = press(t, m, "right")
	if stderr.Len() != 0 {
		t.Fatalf("a step of the same run wrote %q", stderr.String())
	}
	sc, err := scenario.Load("control")
	if err != nil {
		t.Fatal(err)
	}
	ctx := enginetest.Ctx(t)
	other, err := engine.Open(ctx, engine.Config{DSN: pgtest.DSN(t), Scenario: sc, Knobs: blindOff(), Provider: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close(context.WithoutCancel(ctx)) })
	line, _, err := other.PsqlCommand()
	if err != nil {
		t.Fatal(err)
	}
	m = send(t, m, outcome{run: other, snap: screen.SnapshotOf(other), err: errors.New("the knobs could not be set")})
	if m.Run() != other || m.Psql.Line != line {
		t.Fatalf("after a failure with control opened: run %v, psql line %q, want control's %q", m.Run().Scenario().Name, m.Psql.Line, line)
	}
	if got := stderr.String(); !strings.Contains(got, "psql beside control") || !strings.Contains(got, line) {
		t.Errorf("stderr after control came on screen: %q, want its heading and line", got)
	}
}
