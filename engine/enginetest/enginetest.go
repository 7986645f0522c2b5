// Package enginetest helps tests play runs on the servers engine/pgtest
// starts: open a built-in scenario, play it to the end, read the shipped
// recordings. Only tests import it.
package enginetest

import (
	"context"
	"io/fs"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/leaserace/leaserace/assets"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// Ctx is a context that ends with the test, or after two minutes.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Knobs is a knob setting.
func Knobs(r scenario.Renewal, f scenario.Fencing) scenario.Knobs {
	return scenario.Knobs{Renewal: r, Fencing: f}
}

// Open opens a live run of a built-in scenario, closed when the test ends.
func Open(t testing.TB, dsn, name string, k scenario.Knobs) *engine.Run {
	t.Helper()
	return OpenScenario(t, dsn, builtin(t, name), k)
}

func builtin(t testing.TB, name string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// Host is a host on dsn that the package's tests share, as a room's
// attendees share one: their runs are schemas of their own on one pool of
// connections, where a host per run would cost the server a few sessions
// and schemas each. pgtest.Main closes it after the tests. Tests of a
// run's own host (engine.Config without Host) call engine.Open.
func Host(t testing.TB, dsn string) *engine.Host {
	t.Helper()
	return pgtest.Shared(t, "engine host on "+dsn, func(ctx context.Context) (*engine.Host, func(context.Context) error, error) {
		h, err := engine.OpenHost(ctx, engine.HostConfig{DSN: dsn})
		if err != nil {
			return nil, nil, err
		}
		return h, h.Close, nil
	})
}

// OpenScenario opens a live run of sc on the package's shared host (Host),
// closed when the test ends.
func OpenScenario(t testing.TB, dsn string, sc *scenario.Scenario, k scenario.Knobs) *engine.Run {
	t.Helper()
	return open(t, engine.Config{Host: Host(t, dsn), Scenario: sc, Knobs: k})
}

// OpenOwnHost opens a live run of a built-in scenario on a host of its
// own, closed when the test ends: for a test that breaks its run's host
// (kills its resource, reconnects it), which a shared host's other runs
// would feel.
func OpenOwnHost(t testing.TB, dsn, name string, k scenario.Knobs) *engine.Run {
	t.Helper()
	return open(t, engine.Config{DSN: dsn, Scenario: builtin(t, name), Knobs: k})
}

func open(t testing.TB, cfg engine.Config) *engine.Run {
	t.Helper()
	r, err := engine.Open(Ctx(t), cfg)
	if err != nil {
		t.Fatalf("open %s: %v", cfg.Scenario.Name, err)
	}
	t.Cleanup(func() {
		if err := r.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return r
}

// Played plays a built-in scenario to the end on a real server and
// returns its transcript.
func Played(t testing.TB, dsn, name string, k scenario.Knobs) transcript.Transcript {
	t.Helper()
	r := Open(t, dsn, name, k)
	if err := r.PlayAll(Ctx(t)); err != nil {
		t.Fatal(err)
	}
	tr, err := r.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// ShippedNames lists the transcripts in assets/transcripts, without ".json".
func ShippedNames(t testing.TB) []string {
	t.Helper()
	entries, err := fs.ReadDir(assets.FS, "transcripts")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			names = append(names, n)
		}
	}
	return names
}

// ReadShipped reads one shipped transcript by name.
func ReadShipped(t testing.TB, name string) transcript.Transcript {
	t.Helper()
	f, err := assets.FS.Open(path.Join("transcripts", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := transcript.Read(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tr
}
