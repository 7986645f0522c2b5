package batch_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
)

// Transcripts recorded before the built-in scenarios' report values were
// renamed ("report v2' (A, fence 1)" is now "report #2 from A (fence 1)")
// still verify: read with today's words they are the live run, digest for
// digest, and the report says so. An edited fact in such a file is still
// found. The files in testdata/before-renames are shipped transcripts of
// the release before the rename, as they were.
func TestVerifyTranscriptsFromBeforeTheRename(t *testing.T) {
	dsn := pgtest.DSN(t)
	names, _ := filepath.Glob("testdata/before-renames/*.json")
	if len(names) < 3 {
		t.Fatalf("%d files from before the rename", len(names))
	}
	for _, n := range names {
		t.Run(filepath.Base(n), func(t *testing.T) {
			tr := readFile(t, n)
			data, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			old := false
			for _, p := range scenario.Renamed() {
				old = old || p.Was.Match(data)
			}
			if !old {
				t.Fatalf("%s holds none of the earlier words", n)
			}
			res, err := batch.Verify(enginetest.Ctx(t), dsn, tr)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Identical || !res.Reworded || res.Recorded != res.Content {
				t.Fatalf("not identical once reworded: %+v", res)
			}
			var b strings.Builder
			if err := res.WriteReport(&b); err != nil || !strings.HasPrefix(b.String(), "identical: ") || !strings.Contains(b.String(), "an earlier release, which recorded the file") {
				t.Errorf("report: %q (%v)", b.String(), err)
			}
		})
	}
	// An edited fact is found even when the file's digest was recomputed.
	tr := readFile(t, "testdata/before-renames/renewal-race--blind-off.json")
	tr.Steps[4].Rows = 0
	tr.Digest, _ = tr.ComputeDigest()
	res, err := batch.Verify(enginetest.Ctx(t), dsn, tr)
	if err != nil {
		t.Fatal(err)
	}
	if res.Identical || res.Diff == nil || res.Diff.Index != 4 {
		t.Fatalf("an edited fact in a file from before the rename went unnoticed: %+v", res)
	}
}
