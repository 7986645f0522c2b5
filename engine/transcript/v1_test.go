package transcript_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// readV1 reads a transcript the previous release wrote (v1).
func readV1(t *testing.T, name string) transcript.Transcript {
	t.Helper()
	return readTranscript(t, filepath.Join("testdata", "v1", name+".json"))
}

// A v1 transcript reads back as it was written: its own digest still
// checks, so nothing of it was changed by reading.
func TestV1TranscriptsKeepTheirDigest(t *testing.T) {
	names, _ := filepath.Glob("testdata/v1/*.json")
	if len(names) == 0 {
		t.Fatal("no v1 transcripts in testdata/v1")
	}
	for _, n := range names {
		tr := readV1(t, strings.TrimSuffix(filepath.Base(n), ".json"))
		if tr.Format != transcript.FormatV1 {
			t.Errorf("%s: format %s", n, tr.Format)
		}
		d, err := tr.ComputeDigest()
		if err != nil || d != tr.Digest {
			t.Errorf("%s: digest %s, file says %s (%v)", n, d, tr.Digest, err)
		}
	}
}

// Read in v2 terms, a v1 transcript gets its moves, each write its
// judgement, and the verdict today's rule gives: busy-holder under strict
// fencing said "safe" in v1, and is blocked.
func TestV1UpgradedJudgesByTodaysRule(t *testing.T) {
	tr := readV1(t, "busy-holder--blind-strict")
	if tr.Outcome.Verdict != scenario.VerdictSafe {
		t.Fatalf("the v1 file says %s", tr.Outcome.Verdict)
	}
	up, err := tr.Upgraded()
	if err != nil {
		t.Fatal(err)
	}
	if up.Format != transcript.Format || up.Outcome.Verdict != scenario.VerdictBlocked || up.Outcome.Blocked != 1 {
		t.Errorf("upgraded: format %s, outcome %+v", up.Format, up.Outcome)
	}
	if !strings.HasPrefix(up.Moves, "A:send hb1@1055,clock:expire@1060,B:acquire@1070") {
		t.Errorf("upgraded moves %q", up.Moves)
	}
	last := up.Steps[len(up.Steps)-1].Resource.Effects
	if len(last) < 2 || last[1].Judgement != scenario.JudgedBlocked || last[1].Actor != "B" {
		t.Errorf("B's second write: %+v", last)
	}
	// A direct write's epoch, which v1 kept only as an argument, is back.
	rw, err := readV1(t, "revoked-writer--compare-strict").Upgraded()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rw.Moves, "B:write 11@1001,A:write 10@1002") || rw.Outcome.Verdict != scenario.VerdictBlocked {
		t.Errorf("revoked-writer strict: moves %q, verdict %s", rw.Moves, rw.Outcome.Verdict)
	}
	// And the v2 reading is itself a transcript leaserace reads.
	d, err := up.ComputeDigest()
	if err != nil || d != up.Digest {
		t.Errorf("the upgraded digest does not check: %s vs %s", d, up.Digest)
	}
}
