package engine_test

import (
	"testing"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
)

// A step back lets the coordinator's moves run while the resource is still
// being reset, showing the state that same reset answered before. What the
// run shows must still be the value as the resource answers it (in jsonb's
// key order, not the file's), exactly as a run that waited for its first
// reset shows it.
func TestStepBackShowsTheResourceAsTheServerSpellsIt(t *testing.T) {
	t.Parallel()
	ctx := enginetest.Ctx(t)
	dsn := pgtest.DSN(t)
	open := func() *engine.Run {
		sc, err := scenario.Builtin("renewal-race")
		if err != nil {
			t.Fatal(err)
		}
		sc.Resource.Value = []byte(`{"b": 1,   "a": [1,    2]}`)
		return enginetest.OpenScenario(t, dsn, sc, enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	}
	const beforeWrite = 3 // send, expire, acquire: the coordinator's alone
	fresh := open()
	if err := fresh.Seek(ctx, beforeWrite); err != nil {
		t.Fatal(err)
	}
	back := open()
	if err := back.PlayAll(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := back.Seek(ctx, beforeWrite); err != nil {
			t.Fatal(err)
		}
		if got, want := string(back.View().Resource.Value), `{"a":[1,2],"b":1}`; got != want {
			t.Fatalf("after a step back the resource shows %s, want the server's %s", got, want)
		}
		if got, want := back.View().Resource, fresh.View().Resource; got.Fence != want.Fence || string(got.Value) != string(want.Value) {
			t.Fatalf("after a step back the resource shows %+v, a fresh run %+v", got, want)
		}
		if err := back.PlayAll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := fresh.PlayAll(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := back.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	b, err := fresh.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest != b.Digest {
		t.Errorf("a run stepped back three times has digest %s, a fresh one %s", a.Digest, b.Digest)
	}
}

// A step back that makes no write still reports a resource that did not
// answer its reset, and Reconnect brings the run back.
func TestStepBackReportsAFailedResourceReset(t *testing.T) {
	t.Parallel()
	ctx := enginetest.Ctx(t)
	// A host of its own: it kills the host's resource.
	r := enginetest.OpenOwnHost(t, pgtest.DSN(t), "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	if err := r.PlayAll(ctx); err != nil {
		t.Fatal(err)
	}
	want := r.View()
	for _, pos := range []int{0, 3} {
		engine.KillResource(r)
		err := r.Seek(ctx, pos)
		if err == nil {
			t.Fatalf("Seek(%d) with the resource gone reported nothing", pos)
		}
		if got := engine.Part(err); got != engine.PartResource {
			t.Fatalf("Seek(%d) with the resource gone: part %q, want %q: %v", pos, got, engine.PartResource, err)
		}
		if err := r.Reconnect(ctx); err != nil {
			t.Fatalf("reconnect after Seek(%d): %v", pos, err)
		}
		if err := r.PlayAll(ctx); err != nil {
			t.Fatal(err)
		}
		if got := r.View(); got.Outcome.Verdict != want.Outcome.Verdict || got.Resource.Fence != want.Resource.Fence || string(got.Resource.Value) != string(want.Resource.Value) {
			t.Fatalf("after Reconnect and replay: %+v, want %+v", got, want)
		}
	}
}
