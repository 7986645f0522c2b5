package transcript_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// A par record's cut is optional: a played run's file from before it
// reads as it did, and one with it shows the cut in the Markdown and
// keeps it through a write and a read. The digest does not cover it.
func TestParCutIsOptional(t *testing.T) {
	tr := enginetest.ReadShipped(t, "renewal-race--compare-monotonic")
	k := tr.Knobs
	const cut = "every delivery of hb1 once its lease was no longer current (B now holds fence 2) got UPDATE 0, so A never wrote with a stale fence (its write made no call)"
	tr.Played = &transcript.Played{Goals: []transcript.GoalRecord{
		{ID: "stale-write", Text: "The resource accepts a stale write", When: string(scenario.GoalConflict), Knobs: k, Par: &transcript.Par{Runs: "0", Of: "14391", Cut: cut}},
	}}
	var md bytes.Buffer
	if err := transcript.WriteMarkdown(&md, tr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "no order of the moves reaches it (0 of 14391 runs); what cuts every path: "+cut) {
		t.Errorf("the Markdown does not show the cut:\n%s", md.String())
	}
	data, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	back, err := transcript.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Played.Goals[0].Par.Cut; got != cut {
		t.Errorf("the cut read back as %q", got)
	}
	// An older file: the same record without the field.
	old := bytes.Replace(data, []byte(`,"cut":`+mustJSON(t, cut)), nil, 1)
	if bytes.Contains(old, []byte(`"cut"`)) {
		t.Fatal("could not take the cut out")
	}
	back, err = transcript.Read(bytes.NewReader(old))
	if err != nil {
		t.Fatalf("a played file without a cut: %v", err)
	}
	if p := back.Played.Goals[0].Par; p == nil || p.Cut != "" || p.Of != "14391" {
		t.Errorf("a par without a cut read as %+v", p)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
