package batch_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/assets"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
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
	eachFileFrom(t, "testdata/before-renames", func(t *testing.T, n string, tr transcript.Transcript, data []byte) {
		old := false
		for _, p := range scenario.Renamed() {
			old = old || p.Was.Match(data)
		}
		if !old {
			t.Fatalf("%s holds none of the earlier words", n)
		}
		res, err := verifyShared(t, dsn, tr)
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
	// An edited fact is found even when the file's digest was recomputed.
	tr := readFile(t, "testdata/before-renames/renewal-race--blind-off.json")
	tr.Steps[4].Rows = 0
	wantEditFound(t, dsn, tr, 4, "an edited fact in a file from before the rename")
}

// Transcripts recorded before the resource's columns were named fence and
// stored_fence (epoch and stored_epoch) still verify, whatever scenario
// they come from: the resource's statements are read with today's names,
// and the report says so. The files in testdata/before-fence-columns are
// shipped transcripts of the release before, as they were. An edited fact
// in one is still found.
func TestVerifyTranscriptsFromBeforeTheFenceColumns(t *testing.T) {
	dsn := pgtest.DSN(t)
	eachFileFrom(t, "testdata/before-fence-columns", func(t *testing.T, n string, tr transcript.Transcript, data []byte) {
		if !strings.Contains(string(data), "UPDATE resource_state SET epoch = $1") {
			t.Fatalf("%s holds no statement with the old column names", n)
		}
		// As shipped (a built-in scenario), and as recorded from a
		// scenario file of the same content.
		file := filepath.Join(t.TempDir(), tr.Scenario+".yaml")
		yaml, err := assets.FS.ReadFile("scenarios/" + tr.Scenario + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, yaml, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, source := range []string{"builtin", file} {
			tr.Meta.Source = source
			res, err := verifyShared(t, dsn, tr)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Identical || !res.Reworded || res.Recorded != res.Content || res.Content == res.Live {
				t.Fatalf("source %s: not identical once read with the new column names: %+v", source, res)
			}
			var b strings.Builder
			if err := res.WriteReport(&b); err != nil || !strings.Contains(b.String(), "an earlier release, which recorded the file") {
				t.Errorf("source %s: report %q (%v)", source, b.String(), err)
			}
		}
	})
	// An edited statement is found: the old names are read as today's only
	// where the statement is the resource's own, word for word.
	tr := readFile(t, "testdata/before-fence-columns/busy-holder--blind-strict.json")
	for i, st := range tr.Steps {
		if strings.Contains(st.SQL, "AND epoch < $1") {
			tr.Steps[i].SQL = strings.Replace(st.SQL, "AND epoch < $1", "AND epoch <= $1", 1)
			wantEditFound(t, dsn, tr, i, fmt.Sprintf("an edited statement at step %d", i))
			return
		}
	}
	t.Fatal("no strict write in busy-holder--blind-strict.json")
}

// eachFileFrom runs fn, as a subtest, on each of at least three
// transcripts in dir: its path, the transcript and the file's bytes.
func eachFileFrom(t *testing.T, dir string, fn func(t *testing.T, path string, tr transcript.Transcript, data []byte)) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(names) < 3 {
		t.Fatalf("%d files in %s", len(names), dir)
	}
	for _, n := range names {
		t.Run(filepath.Base(n), func(t *testing.T) {
			data, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			fn(t, n, readFile(t, n), data)
		})
	}
}

// wantEditFound recomputes the digest of tr, whose step index was edited,
// so that only a live run can tell, and wants verify to find that step.
func wantEditFound(t *testing.T, dsn string, tr transcript.Transcript, index int, what string) {
	t.Helper()
	tr.Digest, _ = tr.ComputeDigest()
	res, err := verifyShared(t, dsn, tr)
	if err != nil {
		t.Fatal(err)
	}
	if res.Identical || res.Diff == nil || res.Diff.Index != index {
		t.Fatalf("%s went unnoticed: %+v", what, res)
	}
}
