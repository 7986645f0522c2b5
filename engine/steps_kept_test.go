package engine_test

import (
	"encoding/json"
	"testing"

	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// Steps hands out the run's own steps, and callers (the room's frame
// cache) know a step by its address. That holds only if the run never
// changes a step it handed out: not by stepping on, stepping back and
// taking another move, replaying under other knobs, or resetting.
func TestStepsHandedOutNeverChange(t *testing.T) {
	t.Parallel()
	ctx := enginetest.Ctx(t)
	r := enginetest.Open(t, pgtest.DSN(t), "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	type handed struct {
		steps []transcript.Step
		as    string // the steps as JSON when handed out
		when  string
	}
	var out []handed
	take := func(when string) {
		t.Helper()
		s := r.Steps()
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, handed{s, string(b), when})
		for _, h := range out {
			b, err := json.Marshal(h.steps)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != h.as {
				t.Fatalf("after %s, the steps handed out after %s changed", when, h.when)
			}
		}
	}
	do := func(when string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		take(when)
	}
	for i := range 4 {
		_, err := r.Next(ctx)
		do("step "+string(rune('1'+i)), err)
	}
	do("a step back to 2", r.Seek(ctx, 2))
	opts := r.Options()
	if len(opts) < 2 {
		t.Fatalf("%d moves offered at step 2; the test needs another than the script's", len(opts))
	}
	_, err := r.Play(ctx, opts[len(opts)-1].Move)
	do("another move at 2", err)
	_, err = r.SetKnobs(ctx, enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff))
	do("other knobs", err)
	do("the run played out", r.PlayAll(ctx))
	do("a reset", r.Reset(ctx))
	_, err = r.Next(ctx)
	do("a step after the reset", err)
}
