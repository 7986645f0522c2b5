package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
)

func TestCatchPanicTurnsAPanicIntoAnError(t *testing.T) {
	work := func() (err error) {
		defer engine.CatchPanic(&err)
		var r *engine.Run
		_ = r.Schema() // a real runtime panic: a nil pointer dereference
		return nil
	}
	err := work()
	var pe *engine.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v (%T), want a *PanicError", err, err)
	}
	if !strings.Contains(err.Error(), "nil pointer dereference") {
		t.Errorf("the error does not say what panicked: %v", err)
	}
	if !strings.Contains(string(pe.Stack), "panic_test.go") {
		t.Errorf("the stack does not reach the panicking function:\n%s", pe.Stack)
	}
}

func TestCatchPanicKeepsAnOrdinaryResult(t *testing.T) {
	want := errors.New("an ordinary failure")
	for _, ret := range []error{nil, want} {
		got := func() (err error) {
			defer engine.CatchPanic(&err)
			return ret
		}()
		if got != ret {
			t.Errorf("CatchPanic changed %v into %v", ret, got)
		}
	}
}

// A release build (no leaserace_faults tag, as go test and go run build
// it) must ignore LEASERACE_FAULT entirely.
func TestReleaseBuildsIgnoreLeaseraceFault(t *testing.T) {
	if engine.FaultsBuilt {
		t.Skip("built with -tags leaserace_faults")
	}
	t.Setenv("LEASERACE_FAULT", "panic@1075,resource-down@1080,panic@1055")
	r := enginetest.Open(t, pgtest.DSN(t), "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	if err := r.PlayAll(enginetest.Ctx(t)); err != nil {
		t.Fatalf("the race failed with LEASERACE_FAULT set: %v", err)
	}
	if o := r.View().Outcome; o.Effects != 2 || o.Verdict != scenario.VerdictConflict {
		t.Errorf("outcome %d effects, %s; want the blind race's 2 effects and a conflict", o.Effects, o.Verdict)
	}
}

// One PanicError serves the engine's workers and the room's background
// work alike: the latter says where it was caught.
func TestPanicErrorSaysWhere(t *testing.T) {
	for _, tc := range []struct {
		err  *engine.PanicError
		want string
	}{
		{&engine.PanicError{Value: "boom"}, "panic: boom"},
		{&engine.PanicError{Where: "the room's listener", Value: "boom"}, "panic in the room's listener: boom"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", *tc.err, got, tc.want)
		}
	}
}
