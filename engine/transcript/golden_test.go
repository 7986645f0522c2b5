package transcript_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update rewrites the Markdown and Mermaid goldens from the recorded
// transcripts they are drawn from; no server is needed:
//
//	go test ./engine/transcript -run Golden -update
var update = flag.Bool("update", false, "rewrite testdata/golden from the recorded transcripts")

// checkGolden compares got with testdata/golden/name, after rewriting the
// file with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update after checking the change):\n%s", golden, got)
	}
}
