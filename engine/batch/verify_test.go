package batch_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// recordTranscripts re-records assets/transcripts from live runs:
//
//	go test ./engine -run TestRecordShippedTranscripts -record-transcripts
var recordTranscripts = flag.Bool("record-transcripts", false, "re-record assets/transcripts from live runs")

// shippedDir is assets/transcripts as seen from this package's directory.
const shippedDir = "../../assets/transcripts"

// roundTrip writes a transcript and reads it back, as verify reads a file.
func roundTrip(t *testing.T, tr transcript.Transcript) transcript.Transcript {
	t.Helper()
	var b bytes.Buffer
	if err := tr.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	back, err := transcript.Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// verifyShared verifies tr on the package's shared host: these tests are
// about what verify finds, not how it connects, and a host per file costs
// the server four sessions. TestVerifyUntouchedTranscriptPasses keeps
// Verify's own host.
func verifyShared(t *testing.T, dsn string, tr transcript.Transcript) (batch.VerifyResult, error) {
	t.Helper()
	return batch.VerifyOn(enginetest.Ctx(t), enginetest.Host(t, dsn), tr)
}

func verifyReport(t *testing.T, res batch.VerifyResult) string {
	t.Helper()
	var b bytes.Buffer
	if err := res.WriteReport(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestVerifyUntouchedTranscriptPasses(t *testing.T) {
	dsn := pgtest.DSN(t)
	tr := roundTrip(t, enginetest.Played(t, dsn, "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff)))
	res, err := batch.Verify(enginetest.Ctx(t), dsn, tr)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Identical || res.Tampered() || res.Diff != nil || res.Live != tr.Digest {
		t.Fatalf("an untouched transcript should verify: %+v\n%s", res, verifyReport(t, res))
	}
	if rep := verifyReport(t, res); !strings.HasPrefix(rep, "identical: renewal-race (renewal blind, fencing off), 6 steps, "+tr.Digest) {
		t.Errorf("report: %s", rep)
	}
}

// TestVerifyPartialTranscript: the TUI exports wherever the presenter
// stands; verify replays to the same step.
func TestVerifyPartialTranscript(t *testing.T) {
	dsn := pgtest.DSN(t)
	r := enginetest.Open(t, dsn, "renewal-race", enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic))
	if err := r.Seek(enginetest.Ctx(t), 3); err != nil {
		t.Fatal(err)
	}
	tr, err := r.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	res, err := verifyShared(t, dsn, roundTrip(t, tr))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Identical || res.LiveSteps != 3 || res.Events != 6 {
		t.Fatalf("a transcript stopped after 3 steps should verify at step 3: %+v", res)
	}
	if rep := verifyReport(t, res); !strings.Contains(rep, "3 of 6 steps") {
		t.Errorf("report should say the file stops early: %s", rep)
	}
}

// TestVerifyPlayedSchedule: a transcript of moves a person chose (a
// heartbeat held and dropped, the clock moved on by hand, B's takeover and
// both effects at other times than the script's) verifies by replaying its
// own moves, not the scenario's events.
func TestVerifyPlayedSchedule(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	for _, text := range []string{
		// The shortest conflict explore --orders finds under blind/off.
		"A:send hb1@1055,clock:advance@1060,B:acquire@1060,A:deliver hb1@1060,B:effect@1060,A:effect@1060",
		// The heartbeat lost, B's takeover late, and A's last effect no
		// call at all: A's lease ran out.
		"A:send hb1@1055,A:effect@1055,A:drop hb1@1055,clock:advance@1060,clock:advance@1090,B:acquire@1090,B:effect@1090,A:effect@1091",
	} {
		log, err := scenario.ParseMoves(text)
		if err != nil {
			t.Fatal(err)
		}
		k := enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff)
		r := enginetest.Open(t, dsn, "renewal-race", k)
		for _, mv := range log {
			if _, err := r.Play(ctx, mv); err != nil {
				t.Fatalf("%s: %v", mv, err)
			}
		}
		played, err := r.Transcript()
		if err != nil {
			t.Fatal(err)
		}
		sc, _ := scenario.Builtin("renewal-race")
		if scenario.FormatMoves(sc.Log()) == text {
			t.Fatal("the schedule must differ from the scripted log")
		}
		scripted := enginetest.Played(t, dsn, "renewal-race", k)
		if played.Digest == scripted.Digest {
			t.Fatal("the played schedule and the script give the same transcript: the test proves nothing")
		}
		res, err := verifyShared(t, dsn, roundTrip(t, played))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Identical || res.Live != played.Digest || res.LiveSteps != len(log) || res.Diff != nil {
			t.Errorf("%s: a played transcript should verify by its own moves: identical %v, live %s (played %s, script %s), %d steps\n%s",
				text, res.Identical, res.Live, played.Digest, scripted.Digest, res.LiveSteps, verifyReport(t, res))
		}
	}
}

// TestVerifyTamperedRowsNamesTheStep changes one step's rows in the file,
// leaving its digest line alone, as someone editing a transcript would.
func TestVerifyTamperedRowsNamesTheStep(t *testing.T) {
	dsn := pgtest.DSN(t)
	tr := enginetest.Played(t, dsn, "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	var b bytes.Buffer
	if err := tr.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	// Edit the JSON text itself: the fifth step is A's heartbeat at 1075.
	var doc map[string]any
	dec := json.NewDecoder(&b)
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	step := doc["steps"].([]any)[4].(map[string]any)
	if step["action"] != "heartbeat.deliver" || step["rows"] != json.Number("1") {
		t.Fatalf("step 5 is not A's one-row heartbeat: %v", step)
	}
	step["rows"] = 0
	edited, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	tampered, err := transcript.Read(bytes.NewReader(edited))
	if err != nil {
		t.Fatal(err)
	}

	res, err := verifyShared(t, dsn, tampered)
	if err != nil {
		t.Fatal(err)
	}
	if res.Identical || !res.Tampered() {
		t.Fatalf("a tampered transcript must fail verify as tampered: %+v", res)
	}
	if res.Live != tr.Digest || res.Recorded != tr.Digest {
		t.Errorf("the live run should still reproduce the original digest %s: live %s, recorded %s", tr.Digest, res.Live, res.Recorded)
	}
	d := res.Diff
	if d == nil {
		t.Fatalf("no differing step named: %+v", res)
	}
	if d.Index != 4 || d.T != 1075 || d.Actor != "A" || d.Action != scenario.ActionDeliver {
		t.Errorf("first differing step: #%d t=%d %s %s, want #4 t=1075 A heartbeat.deliver", d.Index, d.T, d.Actor, d.Action)
	}
	var differ []string
	for _, f := range d.Fields {
		if f.Differs {
			differ = append(differ, f.Name)
			if f.Name == "rows" && (f.Recorded != "0" || f.Live != "1") {
				t.Errorf("rows: recorded %q, live %q; want 0 and 1", f.Recorded, f.Live)
			}
		}
	}
	if !slices.Equal(differ, []string{"rows"}) {
		t.Errorf("differing fields %v, want only rows", differ)
	}
	rep := verifyReport(t, res)
	for _, want := range []string{
		"DIFFERS: renewal-race (renewal blind, fencing off)",
		"the file was edited after it was recorded",
		"first difference: step 5 of 6 (live run: 6), t=1075, A heartbeat.deliver",
		"field",
		"recorded",
		"live",
		"UPDATE 1",
	} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
	if !sideBySide(rep, "≠ rows", "0", "1") {
		t.Errorf("report should show rows 0 against 1 side by side:\n%s", rep)
	}
}

// sideBySide reports whether some line starts with mark and holds the two
// values as its next columns.
func sideBySide(rep, mark, rec, live string) bool {
	for _, line := range strings.Split(rep, "\n") {
		f := strings.Fields(strings.TrimSpace(line))
		if strings.HasPrefix(strings.TrimSpace(line), mark) && len(f) == 4 && f[2] == rec && f[3] == live {
			return true
		}
	}
	return false
}

// TestVerifyCatchesAConsistentLie: a file whose knobs were changed and whose
// digest was recomputed is self-consistent, and only the live run shows it
// is not what those knobs do.
func TestVerifyCatchesAConsistentLie(t *testing.T) {
	dsn := pgtest.DSN(t)
	tr := enginetest.Played(t, dsn, "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	tr.Knobs = enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff)
	d, err := tr.ComputeDigest()
	if err != nil {
		t.Fatal(err)
	}
	tr.Digest = d
	res, err := verifyShared(t, dsn, roundTrip(t, tr))
	if err != nil {
		t.Fatal(err)
	}
	if res.Identical || res.Tampered() {
		t.Fatalf("want a consistent file that a live run contradicts: %+v", res)
	}
	if res.Diff == nil || res.Diff.Index != 4 {
		t.Fatalf("first difference should be A's heartbeat (step 5): %+v", res.Diff)
	}
	for _, f := range res.Diff.Fields {
		if f.Name == "tag" && (!f.Differs || f.Recorded != "UPDATE 1" || f.Live != "UPDATE 0") {
			t.Errorf("tag: %+v, want UPDATE 1 recorded against UPDATE 0 live", f)
		}
	}
}

// TestVerifyDigestLineEdited: the steps are true, only the digest line lies.
func TestVerifyDigestLineEdited(t *testing.T) {
	dsn := pgtest.DSN(t)
	tr := enginetest.Played(t, dsn, "control", enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff))
	tr.Digest = "sha256:" + strings.Repeat("0", 64)
	res, err := verifyShared(t, dsn, roundTrip(t, tr))
	if err != nil {
		t.Fatal(err)
	}
	if res.Identical || !res.Tampered() || res.Diff != nil || res.Content != res.Live {
		t.Fatalf("want only the digest line flagged: %+v", res)
	}
	if rep := verifyReport(t, res); !strings.Contains(rep, "only the digest written in it was changed") {
		t.Errorf("report:\n%s", rep)
	}
}

func TestVerifyScenarioFromFileWithTimes(t *testing.T) {
	dsn := pgtest.DSN(t)
	src, err := scenario.BuiltinSource("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "race.yaml")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Arrival before the takeover: the heartbeat is no longer late.
	early, err := sc.WithTimes(map[string]int64{"arrival": 1065})
	if err != nil {
		t.Fatal(err)
	}
	r := enginetest.OpenScenario(t, dsn, early, enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff))
	if err := r.PlayAll(enginetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	tr, err := r.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	if tr.Meta == nil || tr.Meta.Source != file || tr.Times["arrival"] != 1065 {
		t.Fatalf("transcript should name its file and times: meta %+v, times %v", tr.Meta, tr.Times)
	}
	res, err := verifyShared(t, dsn, roundTrip(t, tr))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Identical {
		t.Fatalf("a file scenario with varied times should verify:\n%s", verifyReport(t, res))
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if _, err := verifyShared(t, dsn, tr); err == nil || !strings.Contains(err.Error(), "cannot find the scenario") {
		t.Errorf("verify without the scenario file: %v", err)
	}
}

// TestShippedTranscriptsCoverEveryBuiltin needs no server: one file per
// built-in scenario and knob setting, each true to its own digest.
func TestShippedTranscriptsCoverEveryBuiltin(t *testing.T) {
	var want []string
	for _, n := range scenario.BuiltinNames() {
		for _, k := range scenario.AllKnobs() {
			want = append(want, transcript.Name(n, k))
		}
	}
	got := enginetest.ShippedNames(t)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("assets/transcripts holds %v\nwant %v\n(re-record: go test ./engine -run TestRecordShippedTranscripts -record-transcripts)", got, want)
	}
	for _, name := range got {
		tr := enginetest.ReadShipped(t, name)
		if transcript.Name(tr.Scenario, tr.Knobs) != name {
			t.Errorf("%s.json holds %s (%s)", name, tr.Scenario, tr.Knobs)
		}
		if d, err := tr.ComputeDigest(); err != nil || d != tr.Digest {
			t.Errorf("%s.json: content digest %s, file says %s (%v)", name, d, tr.Digest, err)
		}
		if tr.Meta == nil || tr.Meta.Provider == "" || tr.Meta.ServerVersion == "" || tr.Meta.RecordedAt == "" {
			t.Errorf("%s.json should say where and when it was recorded: %+v", name, tr.Meta)
		}
	}
}

// TestShippedTranscriptsReproduceOnEveryProvider is the promise behind the
// shipped transcripts: live runs reproduce each one digest for digest, on
// every PostgreSQL provider this machine offers.
func TestShippedTranscriptsReproduceOnEveryProvider(t *testing.T) {
	t.Parallel()
	names := enginetest.ShippedNames(t)
	for _, srv := range pgtest.Servers(t) {
		t.Run(srv.Provider, func(t *testing.T) {
			t.Parallel()
			// One host per provider, as leaserace verify uses for many
			// files: each file's run is a schema of its own on it.
			host := enginetest.Host(t, srv.DSN)
			for _, name := range names {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					res, err := batch.VerifyOn(enginetest.Ctx(t), host, enginetest.ReadShipped(t, name))
					if err != nil {
						t.Fatal(err)
					}
					if !res.Identical {
						t.Errorf("%s does not reproduce on %s:\n%s", name, srv.Provider, verifyReport(t, res))
					}
				})
			}
		})
	}
}

// TestRecordShippedTranscripts rewrites assets/transcripts from live runs
// when -record-transcripts is given; otherwise it is skipped.
func TestRecordShippedTranscripts(t *testing.T) {
	if !*recordTranscripts {
		t.Skip("re-record with -record-transcripts")
	}
	srv := pgtest.Servers(t)[0]
	cfg := batch.EvidenceConfig{DSN: srv.DSN, Provider: srv.Provider, ServerVersion: serverVersion(t, srv.DSN)}
	scs, err := scenario.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scs {
		ts, err := batch.RecordAll(enginetest.Ctx(t), cfg, sc)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range ts {
			data, err := transcript.Render(tr, "json")
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(shippedDir, transcript.Name(tr.Scenario, tr.Knobs)+".json")
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("recorded %s (%s)", file, tr.Digest)
		}
	}
}

func serverVersion(t *testing.T, dsn string) string {
	t.Helper()
	conn, err := pgx.Connect(enginetest.Ctx(t), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(enginetest.Ctx(t))
	var v string
	if err := conn.QueryRow(enginetest.Ctx(t), "SHOW server_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
