package engine_test

import (
	"context"
	"testing"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
)

// TestSharedHostOutlivesARunThatCloses: runs on one host share pooled
// connections, in its pool and in its resource's. When a run closes, its
// schemas go while a pooled connection may still point at them; the next
// run to use that connection must still be able to prepare statements it
// has not sent before. One connection each makes sure it is the same one.
func TestSharedHostOutlivesARunThatCloses(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	host, err := engine.OpenHost(ctx, engine.HostConfig{DSN: dsn, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := host.Close(context.Background()); err != nil {
			t.Errorf("close the host: %v", err)
		}
	}()
	sc, err := scenario.Builtin("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	k := enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff)
	open := func() *engine.Run {
		r, err := engine.Open(ctx, engine.Config{Scenario: sc, Knobs: k, Host: host})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := open()
	defer a.Close(context.Background())
	// b's reset leaves both connections pointed at b's schemas; closing b
	// drops them.
	b := open()
	if err := b.Close(ctx); err != nil {
		t.Fatalf("close b: %v", err)
	}
	// a's moves send statements neither connection has prepared yet: the
	// coordinator's acquire and renewal, the resource's lock and fencing.
	if err := a.PlayAll(ctx); err != nil {
		t.Fatalf("a run on a shared host, after another run closed: %v", err)
	}
	got, err := a.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	want := enginetest.Played(t, dsn, "renewal-race", k)
	if got.Digest != want.Digest {
		t.Errorf("digest %s on the shared host, %s on a host of its own", got.Digest, want.Digest)
	}
}
