package batch_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
)

// A v1 transcript made by the previous release verifies: a live run of its
// moves reproduces every statement, argument, tag, row, call, state and
// message. Its narration and verdict are this release's, so they are not
// compared; an edited fact still is.
func TestVerifyV1Transcripts(t *testing.T) {
	dsn := pgtest.DSN(t)
	names, _ := filepath.Glob("../transcript/testdata/v1/*.json")
	if len(names) == 0 {
		t.Fatal("no v1 transcripts")
	}
	for _, n := range names {
		t.Run(filepath.Base(n), func(t *testing.T) {
			tr := readFile(t, n)
			res, err := verifyShared(t, dsn, tr)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Identical || res.Format != transcript.FormatV1 {
				t.Fatalf("not identical: %+v", res)
			}
			var b strings.Builder
			if err := res.WriteReport(&b); err != nil || !strings.Contains(b.String(), "identical") || !strings.Contains(b.String(), "v1 transcript") {
				t.Errorf("report: %q (%v)", b.String(), err)
			}
		})
	}
	// An edited fact is found, even in a v1 file whose digest line was
	// recomputed to match.
	tr := readFile(t, "../transcript/testdata/v1/renewal-race--blind-off.json")
	tr.Steps[4].Rows = 0
	wantEditFound(t, dsn, tr, 4, "an edited v1 fact")
}

func readFile(t *testing.T, path string) transcript.Transcript {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := transcript.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
