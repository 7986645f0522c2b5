package export

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine/transcript"
)

// fixedNow stamps export names in tests.
func fixedNow() time.Time { return time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC) }

func TestExportNameIsSanitised(t *testing.T) {
	for in, want := range map[string]string{
		"renewal-race":           "leaserace-renewal-race-20260314-150926",
		"../../etc/Passwd v2":    "leaserace-etc-passwd-v2-20260314-150926",
		"Ünïcode scenario_name!": "leaserace-n-code-scenario-name-20260314-150926",
		"":                       "leaserace-scenario-20260314-150926",
	} {
		if got := exportBase(in, fixedNow()); got != want {
			t.Errorf("exportBase(%q) = %q, want %q", in, got, want)
		}
	}
}

// Files writes one file per format, each what Render makes of the
// transcript, and a second export in the same second gets names of its
// own instead of replacing the first.
func TestFilesWritesEveryFormatAndReplacesNothing(t *testing.T) {
	tr := shippedTranscript(t, "renewal-race", blindOff())
	dir := t.TempDir()
	first, err := Files(context.Background(), tr, dir, fixedNow(), false)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "leaserace-renewal-race-20260314-150926")
	var want []string
	for _, f := range Formats() {
		want = append(want, base+transcript.Ext(f))
	}
	if !slices.Equal(first, want) {
		t.Fatalf("paths %v, want %v", first, want)
	}
	for i, f := range Formats() {
		got, err := os.ReadFile(first[i])
		if err != nil {
			t.Fatal(err)
		}
		data, err := Render(tr, f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s: the file is not what Render makes of the transcript", first[i])
		}
	}
	second, err := Files(context.Background(), tr, dir, fixedNow(), false)
	if err != nil {
		t.Fatal(err)
	}
	if second[0] != base+"-2.json" {
		t.Errorf("second export wrote %v, want %s-2.*", second, base)
	}
}
