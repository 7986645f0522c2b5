package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/scenario/fixtures"
)

// stepAt finds the executed step for an action by an actor.
func stepAt(t *testing.T, steps []transcript.Step, actor string, action scenario.Action) transcript.Step {
	t.Helper()
	for _, s := range steps {
		if s.Actor == actor && s.Action == action {
			return s
		}
	}
	t.Fatalf("no %s step by %s", action, actor)
	return transcript.Step{}
}

func lease(o string, f, v, e int64) scenario.Lease {
	return scenario.Lease{Owner: o, Fence: f, LeaseVersion: v, ExpiresAt: e}
}

func TestRenewalRaceOnEveryProvider(t *testing.T) {
	t.Parallel()
	for _, srv := range pgtest.Servers(t) {
		t.Run(srv.Provider, func(t *testing.T) {
			t.Run("blind/off resurrects A and conflicts", func(t *testing.T) {
				r := enginetest.Open(t, srv.DSN, "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
				if err := r.PlayAll(enginetest.Ctx(t)); err != nil {
					t.Fatal(err)
				}
				steps := r.Steps()
				hb := stepAt(t, steps, "A", scenario.ActionDeliver)
				if hb.T != 1075 || hb.Tag != "UPDATE 1" || hb.Rows != 1 {
					t.Fatalf("A's heartbeat at %d: tag %q rows %d", hb.T, hb.Tag, hb.Rows)
				}
				if !strings.HasPrefix(hb.SQL, "UPDATE leases") || strings.Contains(hb.SQL, "AND owner") {
					t.Fatalf("blind renewal ran %q", hb.SQL)
				}
				acq := stepAt(t, steps, "B", scenario.ActionAcquire)
				if acq.T != 1070 || acq.Tag != "UPDATE 1" || *acq.Coordinator != lease("B", 2, 2, 1130) {
					t.Fatalf("takeover: %+v %+v", acq, acq.Coordinator)
				}
				tr, err := r.Transcript()
				if err != nil {
					t.Fatal(err)
				}
				o := tr.Outcome
				if *o.Coordinator != lease("A", 1, 2, 1135) || o.Effects != 2 || o.Verdict != scenario.VerdictConflict {
					t.Fatalf("outcome %+v coordinator %+v", o, o.Coordinator)
				}
				aEff := steps[len(steps)-1]
				if aEff.Actor != "A" || aEff.Call == nil || !aEff.Call.Accepted || aEff.Call.Status != 200 {
					t.Fatalf("A's effect: %+v", aEff)
				}
				if !strings.Contains(aEff.Note, "CONFLICT") {
					t.Fatalf("narration %q does not call the conflict", aEff.Note)
				}
			})
			t.Run("compare/off turns the heartbeat into zero rows", func(t *testing.T) {
				r := enginetest.Open(t, srv.DSN, "renewal-race", enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff))
				if err := r.PlayAll(enginetest.Ctx(t)); err != nil {
					t.Fatal(err)
				}
				steps := r.Steps()
				hb := stepAt(t, steps, "A", scenario.ActionDeliver)
				if hb.Tag != "UPDATE 0" || hb.Rows != 0 || !strings.Contains(hb.SQL, "AND owner = $2") {
					t.Fatalf("compare renewal: %q %d %q", hb.Tag, hb.Rows, hb.SQL)
				}
				if *hb.Coordinator != lease("B", 2, 2, 1130) {
					t.Fatalf("coordinator after zero rows: %+v", hb.Coordinator)
				}
				last := steps[len(steps)-1]
				if last.Actor != "A" || last.Action != scenario.ActionEffect || last.Call != nil || last.SQL != "" {
					t.Fatalf("A made a call after losing the lease: %+v", last)
				}
				tr, _ := r.Transcript()
				if tr.Outcome.Effects != 1 || tr.Outcome.Verdict != scenario.VerdictSafe || tr.Outcome.Resource.Fence != 2 {
					t.Fatalf("outcome %+v", tr.Outcome)
				}
			})
			t.Run("blind/monotonic: coordinator corrupted, resource right", func(t *testing.T) {
				r := enginetest.Open(t, srv.DSN, "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingMonotonic))
				if err := r.PlayAll(enginetest.Ctx(t)); err != nil {
					t.Fatal(err)
				}
				tr, _ := r.Transcript()
				o := tr.Outcome
				if o.Coordinator.Owner != "A" || o.Coordinator.Fence != 1 {
					t.Fatalf("coordinator should be corrupted back to A/1: %+v", o.Coordinator)
				}
				if o.Resource.Fence != 2 || o.Effects != 1 || o.Rejected != 1 || o.Verdict != scenario.VerdictSafe {
					t.Fatalf("resource should keep epoch 2 with one effect: %+v", o)
				}
				last := r.Steps()[len(r.Steps())-1]
				if last.Call == nil || last.Call.Status != 409 || last.Tag != "UPDATE 0" {
					t.Fatalf("A's fenced write: %+v", last)
				}
			})
		})
	}
}

func TestControlRenewsExactlyOneRow(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	for _, ren := range scenario.Renewals() {
		r := enginetest.Open(t, dsn, "control", enginetest.Knobs(ren, scenario.FencingMonotonic))
		if err := r.PlayAll(enginetest.Ctx(t)); err != nil {
			t.Fatal(err)
		}
		hb := stepAt(t, r.Steps(), "A", scenario.ActionDeliver)
		if hb.Tag != "UPDATE 1" || hb.Rows != 1 || *hb.Coordinator != lease("A", 1, 2, 1090) {
			t.Fatalf("%s: %q rows %d %+v", ren, hb.Tag, hb.Rows, hb.Coordinator)
		}
		if !strings.Contains(hb.Note, "1060 → 1090") || !strings.Contains(hb.Note, "lease_version 1 → 2") {
			t.Fatalf("%s narration: %q", ren, hb.Note)
		}
	}
}

// builtinRecordings plays every built-in scenario under each knob setting
// once for the package's tests, which read the transcripts and change
// nothing in them: one run per scenario, played under each setting in turn
// as a person switching settings would (batch.RecordAll). check plays them
// the same way (batch.CheckScenario).
func builtinRecordings(t *testing.T) []batch.Recording {
	t.Helper()
	dsn := pgtest.DSN(t)
	recs := pgtest.Shared(t, "built-in recordings on "+dsn, func(ctx context.Context) ([]batch.Recording, func(context.Context) error, error) {
		all, err := scenario.Builtins()
		if err != nil {
			return nil, nil, err
		}
		var recs []batch.Recording
		for _, sc := range all {
			ts, err := batch.RecordAll(ctx, batch.EvidenceConfig{DSN: dsn}, sc)
			if err != nil {
				return nil, nil, fmt.Errorf("recording %s: %w", sc.Name, err)
			}
			recs = append(recs, batch.Recording{Scenario: sc, Transcripts: ts})
		}
		return recs, func(context.Context) error { return nil }, nil
	})
	if len(recs) != len(scenario.BuiltinNames()) {
		t.Fatalf("%d scenarios recorded, want every built-in (%d)", len(recs), len(scenario.BuiltinNames()))
	}
	return recs
}

func TestEveryBuiltinMeetsItsExpectations(t *testing.T) {
	t.Parallel()
	recs := builtinRecordings(t)
	for _, rec := range recs {
		sc := rec.Scenario
		rows := batch.CheckRows(rec)
		if len(rows) != 6 {
			t.Fatalf("%s: %d rows", sc.Name, len(rows))
		}
		for _, row := range rows {
			if !row.Passed {
				t.Errorf("%s %s: %v", sc.Name, row.Knobs, row.Mismatch)
			}
		}
	}
}

func TestCheckNoticesAWrongExpectation(t *testing.T) {
	t.Parallel()
	src, _ := scenario.BuiltinSource("control")
	bad := bytes.Replace(src, []byte("effects: 1"), []byte("effects: 7"), 1)
	sc, err := scenario.Parse("bad.yaml", bad)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := batch.CheckScenario(enginetest.Ctx(t), pgtest.DSN(t), sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if row.Passed || !strings.Contains(strings.Join(row.Mismatch, ";"), "effects: got 1, want 7") {
			t.Fatalf("%s: passed=%v mismatch=%v", row.Knobs, row.Passed, row.Mismatch)
		}
	}
}

func TestRevokedWriterCaseVariants(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	wantFail := map[string][]string{
		"off":       {"late revoked writer", "new holder then old arrival"},
		"strict":    {"same holder writes twice", "initial epoch may be zero"},
		"monotonic": nil,
	}
	for _, n := range []int64{1, 2, 3} {
		fx, _ := fixtures.RevokedWriterFixtures(n)
		rep, err := batch.RunCase(enginetest.Ctx(t), dsn, fx)
		if err != nil {
			t.Fatal(err)
		}
		for pol, want := range wantFail {
			pr := rep.Policies[pol]
			var failed []string
			for _, o := range pr.Observations {
				if !o.Passed {
					failed = append(failed, o.Check)
				}
			}
			if strings.Join(failed, "|") != strings.Join(want, "|") || pr.Passed != (len(want) == 0) || len(pr.Observations) != 6 {
				t.Errorf("variant %d %s: failed %v (passed=%v), want %v", n, pol, failed, pr.Passed, want)
			}
		}
		// The seed's table: off ends 'late revoked writer' at [e-1,'stale'].
		got := rep.Policies["off"].Observations[0].Actual
		if got.Fence != 10*n-1 || string(got.Value) != `"stale"` {
			t.Errorf("variant %d off late writer actual %d %s", n, got.Fence, got.Value)
		}
	}
}

func TestStepBackAndToggleReplayFromTheServer(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	// A host of its own: its one session for actor A is counted below.
	r := enginetest.OpenOwnHost(t, dsn, "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	var views []engine.View
	views = append(views, r.View())
	for {
		if _, err := r.Next(ctx); err != nil {
			if err == engine.ErrEnd {
				break
			}
			t.Fatal(err)
		}
		views = append(views, r.View())
	}
	for i := len(views) - 1; i >= 0; i-- {
		if err := r.Seek(ctx, i); err != nil {
			t.Fatal(err)
		}
		got := r.View()
		if fmt.Sprint(got.Coordinator, got.Resource.Fence, len(got.Resource.Effects), got.InFlight) !=
			fmt.Sprint(views[i].Coordinator, views[i].Resource.Fence, len(views[i].Resource.Effects), views[i].InFlight) {
			t.Fatalf("seek %d: %+v\nwant %+v", i, got, views[i])
		}
	}
	// At 1075 (after A's heartbeat), toggling to compare re-runs on the server.
	if err := r.SeekTime(ctx, 1075); err != nil {
		t.Fatal(err)
	}
	if r.Now() != 1075 || r.Pos() != 5 {
		t.Fatalf("at 1075: now %d pos %d", r.Now(), r.Pos())
	}
	ch, err := r.SetKnobs(ctx, enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Join(ch.Lines, "; ")
	if !strings.Contains(lines, "owner A → B") || !strings.Contains(lines, "fence 1 → 2") {
		t.Fatalf("toggle said %q", lines)
	}
	if st := r.Steps()[4]; st.Tag != "UPDATE 0" {
		t.Fatalf("after the toggle the heartbeat ran %q", st.Tag)
	}
	if r.Now() != 1075 || r.Pos() != 5 {
		t.Fatalf("toggle moved the cursor: now %d pos %d", r.Now(), r.Pos())
	}
	// The server really holds what the view says.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var owner string
	var fence int64
	if err := conn.QueryRow(ctx, "SELECT owner, fence FROM "+pgx.Identifier{r.Schema(), "leases"}.Sanitize()).Scan(&owner, &fence); err != nil {
		t.Fatal(err)
	}
	if owner != "B" || fence != 2 {
		t.Fatalf("psql sees %s/%d", owner, fence)
	}
	var apps int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE $1", "leaserace A "+r.Schema()).Scan(&apps); err != nil {
		t.Fatal(err)
	}
	if apps != 1 {
		t.Fatalf("pg_stat_activity shows %d sessions for actor A", apps)
	}
}

func TestInFlightHeartbeatGoesStale(t *testing.T) {
	t.Parallel()
	r := enginetest.Open(t, pgtest.DSN(t), "renewal-race", enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic))
	ctx := enginetest.Ctx(t)
	if err := r.SeekTime(ctx, 1055); err != nil {
		t.Fatal(err)
	}
	v := r.View()
	if len(v.InFlight) != 1 || v.InFlight[0].Stale || v.InFlight[0].Due != 1075 || v.InFlight[0].Snapshot != lease("A", 1, 1, 1060) {
		t.Fatalf("at 1055: %+v", v.InFlight)
	}
	if err := r.SeekTime(ctx, 1060); err != nil {
		t.Fatal(err)
	}
	if v := r.View(); !v.InFlight[0].Stale || !strings.Contains(v.InFlight[0].StaleReason, "expired at 1060") {
		t.Fatalf("at 1060: %+v", v.InFlight)
	}
	if err := r.SeekTime(ctx, 1071); err != nil {
		t.Fatal(err)
	}
	if v := r.View(); !strings.Contains(v.InFlight[0].StaleReason, "B now holds fence 2") {
		t.Fatalf("at 1071: %+v", v.InFlight)
	}
	if err := r.SeekTime(ctx, 1075); err != nil {
		t.Fatal(err)
	}
	if v := r.View(); len(v.InFlight) != 0 {
		t.Fatalf("delivered heartbeat still in flight: %+v", v.InFlight)
	}
}

func TestDigestIsStableAndKnobSensitive(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	digest := func(k scenario.Knobs) transcript.Transcript {
		r := enginetest.Open(t, dsn, "renewal-race", k)
		if err := r.PlayAll(enginetest.Ctx(t)); err != nil {
			t.Fatal(err)
		}
		tr, err := r.Transcript()
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	a := digest(enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	b := digest(enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	c := digest(enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff))
	if a.Digest != b.Digest || !strings.HasPrefix(a.Digest, "sha256:") {
		t.Fatalf("same scenario and knobs, digests %s and %s", a.Digest, b.Digest)
	}
	if a.Digest == c.Digest {
		t.Fatal("different knobs, same digest")
	}
	var buf bytes.Buffer
	if err := a.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := transcript.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := back.ComputeDigest(); d != a.Digest {
		t.Fatalf("digest after a JSON round trip: %s, want %s", d, a.Digest)
	}
	back.Steps[4].Rows = 0
	if d, _ := back.ComputeDigest(); d == a.Digest {
		t.Fatal("tampered transcript keeps its digest")
	}
}

func TestTwoRunsOnOneServerDoNotCollide(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	a := enginetest.Open(t, dsn, "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	b := enginetest.Open(t, dsn, "renewal-race", enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff))
	if a.Schema() == b.Schema() {
		t.Fatal("two runs share a schema")
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, r := range []*engine.Run{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if err := r.PlayAll(context.Background()); err != nil {
					errs[i] = err
					return
				}
				if err := r.Seek(context.Background(), 0); err != nil {
					errs[i] = err
					return
				}
			}
			errs[i] = r.PlayAll(context.Background())
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if a.View().Outcome.Effects != 2 || b.View().Outcome.Effects != 1 {
		t.Fatalf("runs interfered: %d and %d effects", a.View().Outcome.Effects, b.View().Outcome.Effects)
	}
}

func TestCloseDropsTheRunsSchemas(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	sc, _ := scenario.Builtin("renewal-race")
	r, err := engine.Open(ctx, engine.Config{DSN: dsn, Scenario: sc, Knobs: enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff)})
	if err != nil {
		t.Fatal(err)
	}
	schema := r.Schema()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE $1", schema+"%").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d schemas of the run left behind", n)
	}
}

// The verdict tells a blocked holder from a safe one: under strict fencing
// B's second write, at B's own current fence, is refused, and the contract
// calls that blocked, not safe.
func TestStrictFencingBlocksTheCurrentHolder(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	for _, ren := range scenario.Renewals() {
		tr := enginetest.Played(t, dsn, "busy-holder", enginetest.Knobs(ren, scenario.FencingStrict))
		if tr.Outcome.Verdict != scenario.VerdictBlocked || tr.Outcome.Blocked != 1 {
			t.Errorf("%s/strict: outcome %+v, want blocked with one valid write refused", ren, tr.Outcome)
		}
		effects := tr.Steps[len(tr.Steps)-1].Resource.Effects
		var second *scenario.Effect
		for i := range effects {
			if effects[i].Actor == "B" && effects[i].Seq == 2 {
				second = &effects[i]
			}
		}
		if second == nil || second.Accepted || second.Judgement != scenario.JudgedBlocked || !strings.Contains(second.Why, "valid write was lost") {
			t.Errorf("%s/strict: B's second write %+v, want refused and judged blocked", ren, second)
		}
		// Monotonic fencing accepts it: the verified repair.
		mono := enginetest.Played(t, dsn, "busy-holder", enginetest.Knobs(ren, scenario.FencingMonotonic))
		if mono.Outcome.Verdict != scenario.VerdictSafe || mono.Outcome.Blocked != 0 {
			t.Errorf("%s/monotonic: %+v", ren, mono.Outcome)
		}
	}
}
