package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

func shipped(t *testing.T, name string, k scenario.Knobs) transcript.Transcript {
	t.Helper()
	tr, err := engine.ShippedTranscript(name, k)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	rpBlindOff   = scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff}
	rpCompareOff = scenario.Knobs{Renewal: scenario.RenewalCompare, Fencing: scenario.FencingOff}
)

// Every shipped transcript replays step by step to exactly itself: the
// same steps, the same outcome and, at the end, the same digest.
func TestReplayWalksEveryShippedTranscript(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, name := range scenario.BuiltinNames() {
		for _, k := range scenario.AllKnobs() {
			tr := shipped(t, name, k)
			r, err := engine.NewReplay(engine.Recording{Transcript: tr, Origin: "test"})
			if err != nil {
				t.Fatalf("%s %s: %v", name, k, err)
			}
			if r.Len() != len(tr.Steps) || r.Pos() != 0 || r.Now() != r.Start() {
				t.Fatalf("%s %s: len %d pos %d now %d, want %d steps at the start", name, k, r.Len(), r.Pos(), r.Now(), len(tr.Steps))
			}
			for i := range tr.Steps {
				st, err := r.Next(ctx)
				if err != nil {
					t.Fatalf("%s %s step %d: %v", name, k, i+1, err)
				}
				if jsonOf(t, st) != jsonOf(t, tr.Steps[i]) {
					t.Fatalf("%s %s step %d differs from the recording", name, k, i+1)
				}
				if r.View().Now != st.T {
					t.Fatalf("%s %s step %d: cursor at %d, want %d", name, k, i+1, r.View().Now, st.T)
				}
			}
			if _, err := r.Next(ctx); !errors.Is(err, engine.ErrEnd) {
				t.Fatalf("%s %s: Next past the end gave %v, want ErrEnd", name, k, err)
			}
			if got := r.View().Outcome; jsonOf(t, got) != jsonOf(t, tr.Outcome) {
				t.Errorf("%s %s: outcome %s, recorded %s", name, k, jsonOf(t, got), jsonOf(t, tr.Outcome))
			}
			back, err := r.Transcript()
			if err != nil {
				t.Fatal(err)
			}
			if back.Digest != tr.Digest {
				t.Errorf("%s %s: replayed digest %s, recorded %s", name, k, back.Digest, tr.Digest)
			}
			if back.Meta == nil || *back.Meta != *tr.Meta {
				t.Errorf("%s %s: the replay's transcript lost where it was recorded: %+v", name, k, back.Meta)
			}
		}
	}
}

// At 1075 the blind heartbeat's UPDATE 1 is on show; r (compare) switches
// to the compare recording at the same position, where it is UPDATE 0.
func TestReplayTogglesBetweenRecordings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := engine.ShippedReplay("renewal-race", rpBlindOff)
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := r.Recording()
	if !ok || len(r.Recordings()) != 6 || rec.Origin != engine.OriginShipped {
		t.Fatalf("want the six shipped recordings, got %d (%s)", len(r.Recordings()), rec.Origin)
	}
	if err := r.SeekTime(ctx, 1075); err != nil {
		t.Fatal(err)
	}
	last := func() transcript.Step {
		st := r.Steps()
		if len(st) == 0 {
			t.Fatal("no step shown")
		}
		return st[len(st)-1]
	}
	if st := last(); st.T != 1075 || st.Tag != "UPDATE 1" || r.View().Coordinator.Owner != "A" {
		t.Fatalf("blind at 1075: %d %s owner %s", st.T, st.Tag, r.View().Coordinator.Owner)
	}
	ch, err := r.SetKnobs(ctx, rpCompareOff)
	if err != nil {
		t.Fatal(err)
	}
	if r.Now() != 1075 || r.Pos() != 5 || r.Knobs() != rpCompareOff {
		t.Fatalf("after the toggle: t=%d pos %d knobs %s", r.Now(), r.Pos(), r.Knobs())
	}
	if st := last(); st.Tag != "UPDATE 0" || r.View().Coordinator.Owner != "B" {
		t.Fatalf("compare at 1075: %s owner %s", st.Tag, r.View().Coordinator.Owner)
	}
	if !strings.Contains(strings.Join(ch.Lines, "; "), "owner A → B") {
		t.Errorf("the toggle says %q, want owner A → B", ch.Lines)
	}
}

func TestReplayWithoutTheRecordingSaysWhatItHas(t *testing.T) {
	t.Parallel()
	r, err := engine.NewReplay(engine.Recording{Transcript: shipped(t, "renewal-race", rpBlindOff), Origin: "x.json"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.SetKnobs(context.Background(), rpCompareOff)
	if err == nil || !strings.Contains(err.Error(), "compare/off") || !strings.Contains(err.Error(), "blind/off only") {
		t.Fatalf("SetKnobs without a recording: %v", err)
	}
	if r.Knobs() != rpBlindOff {
		t.Errorf("a failed switch changed the knobs to %s", r.Knobs())
	}
	if _, err := r.SetKnobs(context.Background(), scenario.Knobs{Renewal: "sometimes", Fencing: "off"}); err == nil {
		t.Error("an unknown renewal was accepted")
	}
	if r.Schema() != "" || r.Reconnect(context.Background()) != nil || r.Close(context.Background()) != nil {
		t.Error("a replay has no schema and nothing to reconnect or close")
	}
}

func TestReplaySeeksLikeARun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := engine.ShippedReplay("renewal-race", rpBlindOff)
	if err != nil {
		t.Fatal(err)
	}
	if r.Start() != 1055 || r.End() != 1135 {
		t.Fatalf("window %d–%d, want 1055–1135", r.Start(), r.End())
	}
	if err := r.SeekTime(ctx, 1072); err != nil {
		t.Fatal(err)
	}
	if r.Pos() != 4 || r.Now() != 1072 {
		t.Fatalf("SeekTime 1072: pos %d t=%d", r.Pos(), r.Now())
	}
	if err := r.Seek(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if r.Pos() != 2 || r.Now() != 1060 || len(r.Steps()) != 2 {
		t.Fatalf("Seek 2: pos %d t=%d steps %d", r.Pos(), r.Now(), len(r.Steps()))
	}
	if err := r.Seek(ctx, 99); err != nil || r.Pos() != r.Len() {
		t.Fatalf("Seek past the end: pos %d err %v", r.Pos(), err)
	}
	if err := r.Seek(ctx, -1); err != nil || r.Pos() != 0 || r.Now() != r.Start() {
		t.Fatalf("Seek before the start: pos %d t=%d err %v", r.Pos(), r.Now(), err)
	}
	v := r.View()
	if v.Coordinator == nil || v.Coordinator.Owner != "A" || len(v.InFlight) != 0 || len(v.Resource.Effects) != 0 {
		t.Errorf("start state: %+v", v)
	}
}

// A transcript exported mid-run replays up to where it stops; one whose
// scenario file cannot be found is shown against its own steps.
func TestReplayOfPartialAndOrphanTranscripts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := shipped(t, "renewal-race", rpBlindOff)
	part := tr
	part.Steps = tr.Steps[:3]
	r, err := engine.NewReplay(engine.Recording{Transcript: part, Origin: "part.json"})
	if err != nil {
		t.Fatal(err)
	}
	// The log is what was recorded: the run ends where its recording
	// ends, shown against the whole scenario it came from.
	if r.Len() != 3 || len(r.Log()) != 3 || len(r.Scenario().Events) != 6 || r.Scenario().Title == "recorded steps" {
		t.Fatalf("partial: len %d, %d events, title %q", r.Len(), len(r.Scenario().Events), r.Scenario().Title)
	}
	if err := r.Seek(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(ctx); !errors.Is(err, engine.ErrEnd) {
		t.Fatalf("Next past a partial recording: %v", err)
	}

	orphan := tr
	m := *tr.Meta
	m.Source = "/nonexistent/race.yaml"
	orphan.Meta = &m
	r, err = engine.NewReplay(engine.Recording{Transcript: orphan, Origin: "orphan.json"})
	if err != nil {
		t.Fatal(err)
	}
	sc := r.Scenario()
	if sc.Title != "recorded steps" || len(sc.Events) != len(tr.Steps) || sc.Lease != "orders" {
		t.Fatalf("rebuilt scenario: title %q, %d events, lease %q", sc.Title, len(sc.Events), sc.Lease)
	}
	if err := r.Seek(ctx, len(tr.Steps)); err != nil {
		t.Fatal(err)
	}
	back, err := r.Transcript()
	if err != nil || back.Digest != tr.Digest {
		t.Fatalf("orphan replay digest %s, want %s (%v)", back.Digest, tr.Digest, err)
	}
}

func TestNewReplayRefusesMixedRecordings(t *testing.T) {
	t.Parallel()
	race := shipped(t, "renewal-race", rpBlindOff)
	other := shipped(t, "control", rpBlindOff)
	moved := shipped(t, "renewal-race", rpCompareOff)
	moved.Times = map[string]int64{"arrival": 1080}
	for name, recs := range map[string][]engine.Recording{
		"none":      nil,
		"scenarios": {{Transcript: race}, {Transcript: other}},
		"times":     {{Transcript: race}, {Transcript: moved}},
		"twice":     {{Transcript: race}, {Transcript: race}},
	} {
		if _, err := engine.NewReplay(recs...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := engine.ShippedReplay("no-such-scenario", rpBlindOff); err == nil {
		t.Error("a scenario without shipped recordings replayed")
	}
}

// What a replay shows at every position and tick is what a live run on
// PostgreSQL shows there: the same View, field for field.
func TestReplayViewMatchesALiveRun(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	for _, k := range []scenario.Knobs{rpBlindOff, rpCompareOff} {
		sc, err := scenario.Builtin("renewal-race")
		if err != nil {
			t.Fatal(err)
		}
		run, err := engine.Open(ctx, engine.Config{DSN: dsn, Scenario: sc, Knobs: k})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = run.Close(context.Background()) })
		rp, err := engine.ShippedReplay("renewal-race", k)
		if err != nil {
			t.Fatal(err)
		}
		for tt := run.Start(); tt <= run.End(); tt += 5 {
			if err := run.SeekTime(ctx, tt); err != nil {
				t.Fatal(err)
			}
			if err := rp.SeekTime(ctx, tt); err != nil {
				t.Fatal(err)
			}
			live, rec := jsonOf(t, run.View()), jsonOf(t, rp.View())
			if live != rec {
				t.Fatalf("%s at t=%d:\nlive   %s\nreplay %s", k, tt, live, rec)
			}
			if jsonOf(t, run.Steps()) != jsonOf(t, rp.Steps()) {
				t.Fatalf("%s at t=%d: the steps differ", k, tt)
			}
		}
	}
}

// A v1 transcript made by the previous release replays: every recorded
// step is shown, judged by today's rule.
func TestReplayOfAV1Transcript(t *testing.T) {
	t.Parallel()
	f, err := os.Open("transcript/testdata/v1/busy-holder--blind-strict.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := transcript.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.NewReplay(engine.Recording{Transcript: tr, Origin: "v1.json"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.PlayAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := r.View()
	if r.Pos() != len(tr.Steps) || v.Outcome.Verdict != scenario.VerdictBlocked || v.Outcome.Blocked != 1 {
		t.Fatalf("replayed v1: pos %d of %d, outcome %+v", r.Pos(), len(tr.Steps), v.Outcome)
	}
	for i, st := range r.Steps() {
		if st.Tag != tr.Steps[i].Tag || st.Note != tr.Steps[i].Note {
			t.Errorf("step %d differs from the recording: %s / %s", i+1, st.Tag, tr.Steps[i].Tag)
		}
	}
}
