package batch_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// seedSummary is the first seed's evidence line, word for word.
const seedSummary = "Unsafe effects: 2. Compare-and-renew effects: 1. Resource-fenced effects after coordinator corruption: 1."

func TestEvidenceBundleFromLiveRuns(t *testing.T) {
	t.Parallel()
	ev, err := batch.BuildEvidence(enginetest.Ctx(t), batch.EvidenceConfig{DSN: pgtest.DSN(t), Provider: "test", ServerVersion: "x", Leaserace: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.Summary.String(); got != seedSummary {
		t.Errorf("summary %q\nwant     %q", got, seedSummary)
	}
	// The numbers are the live runs' own effect counts.
	for _, tr := range ev.Transcripts {
		if tr.Scenario != "renewal-race" {
			continue
		}
		want := map[scenario.Knobs]int{
			enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff):       ev.Summary.Unsafe,
			enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff):     ev.Summary.Compare,
			enginetest.Knobs(scenario.RenewalBlind, scenario.FencingMonotonic): ev.Summary.Fenced,
		}
		if n, ok := want[tr.Knobs]; ok && n != tr.Outcome.Effects {
			t.Errorf("summary counts %d for %s, the run had %d effects", n, tr.Knobs, tr.Outcome.Effects)
		}
		if tr.Meta == nil || tr.Meta.Leaserace != "dev" || tr.Meta.Provider != "test" {
			t.Errorf("transcript meta %+v", tr.Meta)
		}
	}

	n := len(scenario.BuiltinNames()) * len(scenario.AllKnobs())
	if len(ev.Transcripts) != n || len(ev.Files) != 3*n+2 {
		t.Fatalf("%d transcripts in %d files, want %d in %d", len(ev.Transcripts), len(ev.Files), n, 3*n+2)
	}
	files := map[string][]byte{}
	for _, f := range ev.Files {
		files[f.Name] = f.Data
	}
	if got := string(files[batch.SummaryFile]); got != seedSummary+"\n" {
		t.Errorf("%s: %q", batch.SummaryFile, got)
	}
	if last := ev.Files[len(ev.Files)-1].Name; last != batch.ManifestFile {
		t.Errorf("the manifest should be written last, not %s", last)
	}
	for _, name := range []string{"renewal-race--blind-off.json", "renewal-race--blind-off.md", "renewal-race--blind-off.mmd", "revoked-writer--compare-monotonic.mmd"} {
		if len(files[name]) == 0 {
			t.Errorf("bundle lacks %s", name)
		}
	}
	if !strings.HasPrefix(strings.SplitN(string(files["control--blind-off.mmd"]), "\n", 2)[1], "sequenceDiagram\n") {
		t.Errorf("control--blind-off.mmd is not a sequence diagram")
	}
	if _, err := transcript.Read(bytes.NewReader(files["busy-holder--compare-strict.json"])); err != nil {
		t.Errorf("busy-holder--compare-strict.json: %v", err)
	}

	// The manifest lists every other file once, with its sha256.
	listed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(files[batch.ManifestFile]))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("manifest line %q is not in sha256sum's format", sc.Text())
		}
		data, found := files[name]
		if !found || listed[name] {
			t.Errorf("manifest lists %s: in the bundle %v, twice %v", name, found, listed[name])
		}
		h := sha256.Sum256(data)
		if hex.EncodeToString(h[:]) != sum {
			t.Errorf("manifest hash of %s does not match the file", name)
		}
		listed[name] = true
	}
	if len(listed) != len(files)-1 || listed[batch.ManifestFile] {
		t.Errorf("manifest lists %d files, want every file but itself (%d)", len(listed), len(files)-1)
	}
}

// TestSummaryOfCountsTheRuns needs no server: the summary follows the
// transcripts it is given and refuses to invent a missing number.
func TestSummaryOfCountsTheRuns(t *testing.T) {
	tr := func(k scenario.Knobs, effects int) transcript.Transcript {
		return transcript.Transcript{Scenario: "renewal-race", Knobs: k, Outcome: transcript.Outcome{Effects: effects}}
	}
	ts := []transcript.Transcript{
		tr(enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff), 7),
		tr(enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff), 5),
		tr(enginetest.Knobs(scenario.RenewalBlind, scenario.FencingMonotonic), 3),
		{Scenario: "busy-holder", Knobs: enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff), Outcome: transcript.Outcome{Effects: 99}},
	}
	s, err := batch.SummaryOf(ts)
	if err != nil {
		t.Fatal(err)
	}
	if want := (batch.Summary{Unsafe: 7, Compare: 5, Fenced: 3}); s != want {
		t.Errorf("summary %+v, want %+v", s, want)
	}
	if _, err := batch.SummaryOf(ts[:2]); err == nil || !strings.Contains(err.Error(), "blind/monotonic") {
		t.Errorf("a missing run should be named: %v", err)
	}
}

func TestManifestIsSortedAndSkipsItself(t *testing.T) {
	got := string(batch.Manifest([]batch.EvidenceFile{
		{Name: "b.txt", Data: []byte("b")},
		{Name: batch.ManifestFile, Data: []byte("old")},
		{Name: "a.txt", Data: []byte("a")},
	}))
	want := "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  a.txt\n" +
		"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d  b.txt\n"
	if got != want {
		t.Errorf("manifest:\n%s\nwant:\n%s", got, want)
	}
}
