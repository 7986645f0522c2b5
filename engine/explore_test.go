package engine_test

import (
	"testing"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
)

func TestExploreMapMatchesTheRaceLogic(t *testing.T) {
	dsn := pgtest.DSN(t)
	sc, _ := scenario.Builtin("renewal-race")
	// Around the takeover at 1070, and the far end of the window.
	vary := []engine.Vary{{Name: "arrival", From: 1060, To: 1072}}
	res, err := engine.Explore(ctxT(t), dsn, sc, vary, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 13*6 {
		t.Fatalf("%d cells", len(res.Cells))
	}
	for _, c := range res.Cells {
		arr := c.Values["arrival"]
		// Events at the same time keep file order: B's takeover comes first,
		// so an arrival at 1070 is already after it.
		after := arr >= 1070
		wantConflict := c.Renewal == scenario.RenewalBlind && c.Fencing == scenario.FencingOff && after
		if (c.Verdict == scenario.VerdictConflict) != wantConflict {
			t.Errorf("arrival %d %s/%s: %s with %d effects, want conflict=%v", arr, c.Renewal, c.Fencing, c.Verdict, c.Effects, wantConflict)
		}
		if wantConflict && c.Effects != 2 {
			t.Errorf("arrival %d blind/off: %d effects, want 2", arr, c.Effects)
		}
		if !after {
			// Before the takeover exactly one holder writes: A (blind renewal
			// kept its lease, so B's takeover finds it live) or B. Strict
			// fencing refuses A's fence-1 write against the stored epoch 1:
			// the current holder blocked, as in the second seed.
			want := 1
			if c.Renewal == scenario.RenewalBlind && c.Fencing == scenario.FencingStrict {
				want = 0
			}
			if c.Effects != want {
				t.Errorf("arrival %d before takeover %s/%s: %d effects, want %d", arr, c.Renewal, c.Fencing, c.Effects, want)
			}
		}
	}
}

func TestExploreTwoTimesAndLimits(t *testing.T) {
	dsn := pgtest.DSN(t)
	sc, _ := scenario.Builtin("renewal-race")
	vary := []engine.Vary{{Name: "takeover", From: 1080, To: 1081}, {Name: "arrival", From: 1075, To: 1085}}
	res, err := engine.Explore(ctxT(t), dsn, sc, vary, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 2*11*6 {
		t.Fatalf("%d cells", len(res.Cells))
	}
	for _, c := range res.Cells {
		wantConflict := c.Renewal == scenario.RenewalBlind && c.Fencing == scenario.FencingOff && c.Values["arrival"] >= c.Values["takeover"]
		if (c.Verdict == scenario.VerdictConflict) != wantConflict {
			t.Errorf("%v %s/%s: %s", c.Values, c.Renewal, c.Fencing, c.Verdict)
		}
	}
	if _, err := engine.Explore(ctxT(t), dsn, sc, []engine.Vary{{Name: "nope", From: 1, To: 2}}, nil); err == nil {
		t.Fatal("unknown time accepted")
	}
	for _, bad := range []string{"arrival", "arrival=5..1", "arrival=1..x", "=1..2"} {
		if _, err := engine.ParseVary(bad); err == nil {
			t.Errorf("ParseVary(%q) accepted", bad)
		}
	}
	if v, err := engine.ParseVary("arrival=1060..1135"); err != nil || v.From != 1060 || v.To != 1135 {
		t.Fatalf("ParseVary: %+v %v", v, err)
	}
}
