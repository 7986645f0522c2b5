package tui

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/screen"
	"github.com/leaserace/leaserace/tui/tuitest"
	"go.uber.org/goleak"
)

// termOut collects what Run writes, safe to read while it writes.
type termOut struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *termOut) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *termOut) has(text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Contains(s.b.Bytes(), []byte(text))
}

func (s *termOut) waitFor(t *testing.T, text string) {
	t.Helper()
	// A frame that waits on a step's SQL: the wait of one round of work.
	deadline := time.Now().Add(pgtest.WaitTimeout())
	for !s.has(text) {
		if time.Now().After(deadline) {
			s.mu.Lock()
			defer s.mu.Unlock()
			t.Fatalf("screen never showed %q; it showed:\n%s", text, s.b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runSchemas lists the schemas engine runs create on the test server.
func runSchemas(t *testing.T, dsn string) []string {
	t.Helper()
	conn, err := pgx.Connect(enginetest.Ctx(t), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(enginetest.Ctx(t), "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lr\\_%' ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// runTUI starts Run in the background on the test server and returns the
// key pipe, the screen and the channel Run's error arrives on.
func runTUI(t *testing.T, ctx context.Context, o Options) (*io.PipeWriter, *termOut, <-chan error) {
	t.Helper()
	in, keys := io.Pipe()
	out := &termOut{}
	o.In, o.Out, o.NoColor = in, out, true
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Start == nil {
		o = withDSN(o, pgtest.DSN(t))
	}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	t.Cleanup(func() { _ = keys.Close() })
	return keys, out, done
}

// withDSN is o with the dsn provider for dsn as the server to start.
func withDSN(o Options, dsn string) Options {
	p := pgserver.DSNProvider{DSN: dsn}
	o.Start, o.ProviderName = p.Start, p.Name()
	return o
}

func waitRun(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	// Run returns once the run is closed and the server it started stopped.
	case <-time.After(3 * pgtest.WaitTimeout()):
		t.Fatal("Run did not return")
		return nil
	}
}

func TestRunStepsAndQuitsCleaningUp(t *testing.T) {
	// A database of its own: the schemas listed there are this test's.
	dsn := pgtest.ScratchDSN(t, pgtest.DSN(t), "lr_tui_")
	before := runSchemas(t, dsn)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	at := int64(1075)
	keys, out, done := runTUI(t, context.Background(), withDSN(Options{
		Scenario: "renewal-race", Knobs: enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff),
		At: &at, ExportDir: t.TempDir(),
	}, dsn))
	out.waitFor(t, "event 5/6")
	if !out.has("UPDATE 1") {
		t.Error("--at 1075 does not show the blind renewal's UPDATE 1")
	}
	if _, err := keys.Write([]byte("r")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "UPDATE 0")
	if _, err := keys.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	if err := waitRun(t, done); err != nil {
		t.Fatalf("q: Run returned %v", err)
	}
	_ = keys.Close()
	if after := runSchemas(t, dsn); !slices.Equal(after, before) {
		t.Errorf("schemas left on the server: before %v, after %v", before, after)
	}
}

func TestRunStopsOnContextCancel(t *testing.T) {
	t.Parallel()
	// A database of its own: the schemas listed there are this test's.
	dsn := pgtest.ScratchDSN(t, pgtest.DSN(t), "lr_tui_")
	before := runSchemas(t, dsn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keys, out, done := runTUI(t, ctx, withDSN(Options{Scenario: "control"}, dsn))
	out.waitFor(t, "event 0/3")
	if _, err := keys.Write([]byte("l")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "event 1/3")
	cancel() // what the CLI does on SIGTERM
	err := waitRun(t, done)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Run returned %v, want context.Canceled", err)
	}
	if after := runSchemas(t, dsn); !slices.Equal(after, before) {
		t.Errorf("schemas left on the server: before %v, after %v", before, after)
	}
}

func TestRunReportsAProviderThatCannotStart(t *testing.T) {
	t.Parallel()
	_, _, done := runTUI(t, context.Background(), withDSN(Options{}, "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"))
	err := waitRun(t, done)
	if err == nil || !strings.Contains(err.Error(), "dsn provider") {
		t.Fatalf("Run returned %v, want the provider's failure", err)
	}
}

func TestBootScreenNamesTheProviderAndItsProgress(t *testing.T) {
	t.Parallel()
	m := newModel(context.Background(), tuitest.ASCIIRenderer(), "", nil)
	m.Boot = screen.NewBoot(m.Styles, "local")
	for _, l := range []string{"initdb", "starting postgres"} {
		m.Boot, _ = updateBoot(m.Boot, nil, progressMsg{line: l, ok: true})
	}
	v := m.Frame(80, 24)
	for _, want := range []string{"local provider", "initdb", "starting postgres"} {
		if !strings.Contains(v, want) {
			t.Errorf("boot screen lacks %q:\n%s", want, v)
		}
	}
	// Keys other than quit wait for the server.
	nm, cmd := m.Update(keyMsg("right"))
	if cmd != nil || nm.(Model).Phase != screen.PhaseBoot {
		t.Error("→ did something while PostgreSQL was starting")
	}
	if _, cmd := m.Update(keyMsg("q")); cmd == nil {
		t.Error("q does not quit while PostgreSQL is starting")
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	t.Parallel()
	const dsn = "postgres://unused"
	for name, o := range map[string]Options{
		"no provider":      {},
		"unknown scenario": withDSN(Options{Scenario: "no-such-scenario"}, dsn),
		"bad renewal":      withDSN(Options{Knobs: scenario.Knobs{Renewal: "sometimes"}}, dsn),
		"bad fencing":      withDSN(Options{Knobs: scenario.Knobs{Fencing: "maybe"}}, dsn),
	} {
		if err := Run(context.Background(), o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
