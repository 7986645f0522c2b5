package engine_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
)

// The built-in scenarios from real incidents, each played on a real server:
// the facts their stories stand on.

// beliefOf is an actor's belief after a step.
func beliefOf(t *testing.T, s transcript.Step, actor string) transcript.Belief {
	t.Helper()
	i := slices.IndexFunc(s.Beliefs, func(b transcript.Belief) bool { return b.Actor == actor })
	if i < 0 {
		t.Fatalf("no belief of %s after %s %s at %d", actor, s.Actor, s.Action, s.T)
	}
	return s.Beliefs[i]
}

// goalReached says whether the steps reach the scenario's goal with that id.
func goalReached(t *testing.T, sc *scenario.Scenario, steps []transcript.Step, id string) bool {
	t.Helper()
	for _, g := range world.GoalsOf(sc.Goals(), sc.Initial, steps) {
		if g.Goal.ID == id {
			return g.Reached
		}
	}
	t.Fatalf("%s has no goal %s", sc.Name, id)
	return false
}

// Kleppmann's paused client: compare-and-renew cannot help, because A
// sends no heartbeat; only fencing at the resource refuses its write.
func TestPausedHolder(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	for _, c := range []struct {
		k        scenario.Knobs
		accepted bool
		verdict  string
	}{
		{enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff), true, scenario.VerdictConflict},
		{enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff), true, scenario.VerdictConflict},
		{enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic), false, scenario.VerdictSafe},
		{enginetest.Knobs(scenario.RenewalBlind, scenario.FencingMonotonic), false, scenario.VerdictSafe},
		{enginetest.Knobs(scenario.RenewalCompare, scenario.FencingStrict), false, scenario.VerdictSafe},
	} {
		t.Run(c.k.String(), func(t *testing.T) {
			tr := enginetest.Played(t, dsn, "paused-holder", c.k)
			var acts []string
			for _, s := range tr.Steps {
				acts = append(acts, s.Actor+" "+string(s.Action)+"@"+strconv.FormatInt(s.T, 10))
			}
			want := "A pause@1050,clock expire@1060,B acquire@1070,B effect@1070,A resume@1080,A effect@1080"
			if got := strings.Join(acts, ","); got != want {
				t.Fatalf("steps\n got %s\nwant %s", got, want)
			}
			// A never asks the coordinator anything: no renewal ran for it.
			for _, s := range tr.Steps {
				if s.Actor == "A" && s.Action != scenario.ActionEffect && s.SQL != "" {
					t.Errorf("A ran %q at %d", s.SQL, s.T)
				}
			}
			acq := stepAt(t, tr.Steps, "B", scenario.ActionAcquire)
			if acq.Tag != "UPDATE 1" || *acq.Coordinator != lease("B", 34, 2, 1130) {
				t.Fatalf("B's takeover: %q %+v", acq.Tag, acq.Coordinator)
			}
			// Paused, A still goes by its check: it believes it holds the
			// lease, as B does now.
			if b := beliefOf(t, acq, "A"); !b.Paused || !b.Holds {
				t.Errorf("A should be paused and still believe it holds the lease when B takes over: %+v", b)
			}
			if b := beliefOf(t, acq, "B"); !b.Holds {
				t.Errorf("B should believe it holds the lease: %+v", b)
			}
			sc, err := scenario.Builtin("paused-holder")
			if err != nil {
				t.Fatal(err)
			}
			if !goalReached(t, sc, tr.Steps, "two-holders") {
				t.Error("A (paused, by its check) and B should both believe they hold the lease")
			}
			// Once A has acted on its check, it goes by its clock again.
			if b := beliefOf(t, tr.Steps[len(tr.Steps)-1], "A"); b.Holds {
				t.Errorf("after its write A's lease (expired at 1060) should no longer count: %+v", b)
			}
			last := tr.Steps[len(tr.Steps)-1]
			if last.Actor != "A" || last.Call == nil || last.Args[0] != int64(33) {
				t.Fatalf("A's write after resuming should carry fence 33: %+v", last)
			}
			if last.Call.Accepted != c.accepted || tr.Outcome.Verdict != c.verdict {
				t.Fatalf("A's write accepted=%v, verdict %s; want %v, %s", last.Call.Accepted, tr.Outcome.Verdict, c.accepted, c.verdict)
			}
			if !strings.Contains(stepAt(t, tr.Steps, "A", scenario.ActionResume).Note, "does not look again") {
				t.Errorf("resume narration should name the check-then-act gap")
			}
		})
	}
	// The shipped recordings have the pause and the resume too.
	for _, k := range scenario.AllKnobs() {
		tr := enginetest.ReadShipped(t, "paused-holder--"+string(k.Renewal)+"-"+string(k.Fencing))
		if !slices.ContainsFunc(tr.Steps, func(s transcript.Step) bool { return s.Action == scenario.ActionPause && s.Actor == "A" }) ||
			!slices.ContainsFunc(tr.Steps, func(s transcript.Step) bool { return s.Action == scenario.ActionResume && s.Actor == "A" }) {
			t.Errorf("shipped paused-holder %s lacks A's pause or resume", k)
		}
	}
}

// River's re-election upsert: a non-leader's statement changes the
// leader's row and answers one row, so both believe they lead, whatever
// the renewal knob says.
func TestRiverReelect(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	sc, err := scenario.Builtin("river-reelect")
	if err != nil {
		t.Fatal(err)
	}
	var sqls []string
	for _, k := range []scenario.Knobs{
		enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff),
		enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff),
		enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic),
	} {
		t.Run(k.String(), func(t *testing.T) {
			tr := enginetest.Played(t, dsn, "river-reelect", k)
			re := stepAt(t, tr.Steps, "A", scenario.ActionReelect)
			sqls = append(sqls, re.SQL)
			if re.Tag != "INSERT 0 1" || re.Rows != 1 || re.Result != transcript.ResultDone {
				t.Fatalf("A's re-election: tag %q rows %d result %s", re.Tag, re.Rows, re.Result)
			}
			if !strings.Contains(re.SQL, "ON CONFLICT (name) DO UPDATE") || !strings.Contains(re.SQL, "WHERE EXCLUDED.owner = $2") {
				t.Fatalf("not River's statement: %s", re.SQL)
			}
			// The non-leader's statement changed B's row: B still owns it,
			// but its expiry moved from B's 1021 to A's 1012 + 10.
			if *re.Coordinator != lease("B", 2, 2, 1022) {
				t.Fatalf("row after A's re-election: %+v", re.Coordinator)
			}
			a, b := beliefOf(t, re, "A"), beliefOf(t, re, "B")
			if !a.Holds || !b.Holds || a.Lease.Fence != 1 || a.Lease.ExpiresAt != 1022 || b.Lease.Fence != 2 {
				t.Fatalf("both should believe they lead: A %+v %+v, B %+v %+v", a, a.Lease, b, b.Lease)
			}
			if !strings.Contains(re.Note, "always true") || !strings.Contains(re.Note, "B believes it leads too") {
				t.Errorf("narration: %q", re.Note)
			}
			if !goalReached(t, sc, tr.Steps, "two-leaders") {
				t.Error("the two-leaders goal should be reached")
			}
			last := tr.Steps[len(tr.Steps)-1]
			wantAccepted := k.Fencing == scenario.FencingOff
			if last.Actor != "A" || last.Call == nil || last.Call.Accepted != wantAccepted {
				t.Fatalf("A's leader job under %s: %+v", k.Fencing, last)
			}
		})
	}
	if len(sqls) == 3 && (sqls[0] != sqls[1] || sqls[1] != sqls[2]) {
		t.Errorf("the renewal knob changed River's statement:\n%s", strings.Join(sqls, "\n--\n"))
	}
}

// reelect on the actor's own row, and by an actor that believes it leads
// nothing.
func TestReelectOwnRowAndNoLease(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	sc, err := scenario.Parse("reelect.yaml", []byte(`name: reelect
window: {from: 0, to: 100}
ttl: 10
initial:
  coordinator: {owner: A, fence: 1, lease_version: 1, expires_at: 20}
  resource: {epoch: 0, value: null}
events:
  - {t: 5, actor: A, action: reelect}
  - {t: 25, actor: A, action: reelect}
  - {t: 26, actor: B, action: reelect}
  - {t: 40, actor: B, action: acquire}
  - {t: 41, actor: B, action: release}
  - {t: 42, actor: A, action: reelect}
expect:
  - {renewal: "*", fencing: "*", effects: 0, verdict: safe}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := enginetest.OpenScenario(t, dsn, sc, enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic))
	if opts := r.Options(); !slices.ContainsFunc(opts, func(o world.Option) bool {
		return o.Move.Actor == "A" && o.Move.Action == scenario.ActionReelect && o.Scripted
	}) {
		t.Errorf("play mode should offer A's re-election: %+v", opts)
	}
	if err := r.PlayAll(enginetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	steps := r.Steps()
	if s := steps[0]; s.Tag != "INSERT 0 1" || *s.Coordinator != lease("A", 1, 1, 15) || !strings.Contains(s.Note, "expires 20 → 15") {
		t.Errorf("A's re-election of its own current row: %q %+v %q", s.Tag, s.Coordinator, s.Note)
	}
	// Expired and no one took it: the statement matches it anyway.
	if s := steps[1]; s.Tag != "INSERT 0 1" || *s.Coordinator != lease("A", 1, 1, 35) || !strings.Contains(s.Note, "had expired at 15") {
		t.Errorf("A's re-election of its expired row: %q %+v %q", s.Tag, s.Coordinator, s.Note)
	}
	if s := steps[2]; s.SQL != "" || s.Result != transcript.ResultNoCall || !strings.Contains(s.Note, "B does not believe it leads") {
		t.Errorf("B never led, so it should make no call: %+v", s)
	}
	// B took the lease and gave it up; A's upsert extends B's released
	// row, and only A believes it leads.
	s := steps[5]
	if s.Tag != "INSERT 0 1" || *s.Coordinator != lease("B", 2, 2, 52) || !strings.Contains(s.Note, "the row is still B's") || strings.Contains(s.Note, "B believes") {
		t.Errorf("A's re-election into B's released row: %q %+v %q", s.Tag, s.Coordinator, s.Note)
	}
	if a, b := beliefOf(t, s, "A"), beliefOf(t, s, "B"); !a.Holds || b.Holds {
		t.Errorf("only A should believe it leads: A %+v, B %+v", a, b)
	}
}

// River #216: with a TTL equal to the renewal interval, the healthy leader
// loses its lease with no fault injected.
func TestSlowRenewal(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	sc, err := scenario.Builtin("slow-renewal")
	if err != nil {
		t.Fatal(err)
	}
	// No fault in the script: no pause, no message dropped, every message
	// arrives, and the renewal leaves on schedule, one TTL after 1000.
	for _, ev := range sc.Events {
		if ev.Action == scenario.ActionPause || ev.Action == scenario.ActionDrop {
			t.Fatalf("slow-renewal injects a fault: %s", ev.Action)
		}
	}
	if send := sc.Events[slices.IndexFunc(sc.Events, func(e scenario.Event) bool { return e.Action == scenario.ActionSend })]; send.T != sc.Initial.ExpiresAt || sc.Initial.ExpiresAt != 1000+sc.TTL {
		t.Fatalf("the renewal should leave one TTL after the election, at the lease's expiry: sent %d, expires %d, ttl %d", send.T, sc.Initial.ExpiresAt, sc.TTL)
	}

	t.Run("compare: the healthy leader loses its lease", func(t *testing.T) {
		tr := enginetest.Played(t, dsn, "slow-renewal", enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff))
		hb := stepAt(t, tr.Steps, "A", scenario.ActionDeliver)
		if hb.T != 1012 || hb.Tag != "UPDATE 0" || hb.Result != transcript.ResultRefused {
			t.Fatalf("A's renewal at %d: %q %s", hb.T, hb.Tag, hb.Result)
		}
		if !strings.HasPrefix(hb.Note, "Zero rows: compare-and-renew refused A's heartbeat") || !strings.Contains(hb.Note, "hears of it only at 1013") {
			t.Errorf("narration of the refused renewal with a slow reply: %q", hb.Note)
		}
		// Until the reply arrives A acts on its old belief.
		if b := beliefOf(t, hb, "A"); b.Lease == nil || b.Lease.Fence != 1 {
			t.Errorf("A should not know yet: %+v", b)
		}
		reply := stepAt(t, tr.Steps, "A", scenario.ActionReply)
		if b := beliefOf(t, reply, "A"); b.Lease != nil || b.Holds {
			t.Errorf("after the reply A should know it lost: %+v", b)
		}
		if o := tr.Outcome; o.Coordinator.Owner != "B" || o.Verdict != scenario.VerdictSafe || o.Effects != 2 {
			t.Fatalf("outcome %+v %+v", o, o.Coordinator)
		}
		if last := tr.Steps[len(tr.Steps)-1]; last.Actor != "A" || last.Result != transcript.ResultNoCall {
			t.Errorf("A should make no call once it knows: %+v", last)
		}
		if !goalReached(t, sc, tr.Steps, "on-time-refused") || goalReached(t, sc, tr.Steps, "two-holders") {
			t.Error("compare: the refused renewal is the goal reached; no two holders")
		}
	})
	t.Run("blind: the late renewal overwrites B's lease", func(t *testing.T) {
		tr := enginetest.Played(t, dsn, "slow-renewal", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
		hb := stepAt(t, tr.Steps, "A", scenario.ActionDeliver)
		if hb.Tag != "UPDATE 1" || *hb.Coordinator != lease("A", 1, 2, 1022) {
			t.Fatalf("A's blind renewal: %q %+v", hb.Tag, hb.Coordinator)
		}
		for _, want := range []string{"owner B → A, fence 2 → 1 (regressed)", "only by coincidence", "hears of it only at 1013"} {
			if !strings.Contains(hb.Note, want) {
				t.Errorf("narration lacks %q: %q", want, hb.Note)
			}
		}
		if tr.Outcome.Verdict != scenario.VerdictConflict {
			t.Errorf("verdict %s", tr.Outcome.Verdict)
		}
		for _, id := range []string{"stale-renewal", "two-holders", "stale-write"} {
			if !goalReached(t, sc, tr.Steps, id) {
				t.Errorf("blind/off should reach %s", id)
			}
		}
	})
}

// Kafka's producer epochs: the new instance's epoch fences the zombie's
// late batch at the partition.
func TestZombieProducer(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	for _, c := range []struct {
		f                scenario.Fencing
		zombie, p2Second bool
		verdict          string
		epoch            int64
	}{
		{scenario.FencingOff, true, true, scenario.VerdictConflict, 5},
		{scenario.FencingStrict, false, false, scenario.VerdictBlocked, 6},
		{scenario.FencingMonotonic, false, true, scenario.VerdictSafe, 6},
	} {
		t.Run(string(c.f), func(t *testing.T) {
			tr := enginetest.Played(t, dsn, "zombie-producer", enginetest.Knobs(scenario.RenewalCompare, c.f))
			acq := stepAt(t, tr.Steps, "P2", scenario.ActionAcquire)
			if *acq.Coordinator != lease("P2", 6, 2, 1130) {
				t.Fatalf("the new instance should bump the epoch 5 → 6: %+v", acq.Coordinator)
			}
			z := stepAt(t, tr.Steps, "P1", scenario.ActionWriteDeliver)
			if z.Call == nil || z.Call.Accepted != c.zombie || z.Args[0] != int64(5) {
				t.Fatalf("the zombie's batch with epoch 5: %+v", z)
			}
			var p2 []transcript.Step
			for _, s := range tr.Steps {
				if s.Actor == "P2" && s.Action == scenario.ActionEffect {
					p2 = append(p2, s)
				}
			}
			if len(p2) != 2 || !p2[0].Call.Accepted || p2[1].Call.Accepted != c.p2Second {
				t.Fatalf("P2's batches: %+v", p2)
			}
			if tr.Outcome.Verdict != c.verdict || tr.Outcome.Resource.Fence != c.epoch {
				t.Fatalf("outcome %+v", tr.Outcome)
			}
		})
	}
}

// Every built-in's questions can be answered under every knob setting:
// the step's real result is one of the choices.
func TestEveryBuiltinQuestionIsAnswerable(t *testing.T) {
	t.Parallel()
	recs := builtinRecordings(t)
	for _, rec := range recs {
		// One run per scenario, played under each setting in turn as a
		// person switching settings would: opening a run costs more than
		// playing one, and the facts are the same either way.
		sc, ts := rec.Scenario, rec.Transcripts
		if len(ts) != len(scenario.AllKnobs()) {
			t.Fatalf("%s: %d settings played, want %d", sc.Name, len(ts), len(scenario.AllKnobs()))
		}
		for i, k := range scenario.AllKnobs() {
			tr := ts[i]
			if tr.Knobs != k {
				t.Fatalf("%s: setting %d played as %s, want %s", sc.Name, i, tr.Knobs, k)
			}
			if len(tr.Steps) != len(sc.Events) {
				t.Fatalf("%s %s: %d steps for %d events", sc.Name, k, len(tr.Steps), len(sc.Events))
			}
			asked := 0
			for i, ev := range sc.Events {
				if ev.Ask == nil {
					continue
				}
				asked++
				s := tr.Steps[i]
				if s.Actor != ev.Actor || s.Action != ev.Action {
					t.Fatalf("%s %s: step %d is %s %s, event is %s %s", sc.Name, k, i, s.Actor, s.Action, ev.Actor, ev.Action)
				}
				fact := world.Fact(ev.Ask.About, s, sc.Resource.Fence)
				if _, ok := ev.Ask.Right(fact); !ok {
					t.Errorf("%s %s, %s %s at %d (%s): %q is answered %q, which is not among %q", sc.Name, k, ev.Actor, ev.Action, ev.T, ev.Ask.Pos, ev.Ask.Question, fact, ev.Ask.Choices)
				}
			}
			if asked == 0 {
				t.Errorf("%s asks nothing", sc.Name)
			}
		}
	}
}
