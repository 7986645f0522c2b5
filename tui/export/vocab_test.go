package export_test

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/tui/export"
)

// One word for one thing: what a learner reads of a run, in every format,
// the JSON transcript and the HTML page's script and the data it carries
// included, calls the fence a fence. "epoch" is left only in "producer
// epoch", Kafka's own name, which zombie-producer names beside the fence.
// The resource's SQL, once "SET epoch = $1", and the JSON's keys, once
// "epoch" and "stored_epoch", say fence.
func TestExportsCallTheFenceAFence(t *testing.T) {
	kafka := regexp.MustCompile(`producer epoch`)
	for _, name := range enginetest.ShippedNames(t) {
		tr := enginetest.ReadShipped(t, name)
		for _, f := range export.Formats() {
			b, err := export.Render(tr, f)
			if err != nil {
				t.Fatalf("%s as %s: %v", name, f, err)
			}
			b = bytes.ToLower(kafka.ReplaceAll(b, nil))
			if i := bytes.Index(b, []byte("epoch")); i >= 0 {
				t.Errorf("%s as %s says epoch: %q", name, f, b[max(0, i-50):min(len(b), i+30)])
			}
		}
	}
}

// An older file converted (replay --format) is written in this release's
// format: its JSON is v3, in v3's keys, the same run as the file's.
func TestRenderWritesAnOlderFileInTodaysFormat(t *testing.T) {
	now := enginetest.ReadShipped(t, "zombie-producer--blind-off")
	old, err := now.AsV2()
	if err != nil {
		t.Fatal(err)
	}
	if old.Digest == now.Digest {
		t.Fatal("v2's digest is v3's: the test proves nothing")
	}
	b, err := export.Render(old, "json")
	if err != nil {
		t.Fatal(err)
	}
	back, err := transcript.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if back.Format != transcript.Format || back.Digest != now.Digest || bytes.Contains(b, []byte(`epoch":`)) {
		t.Errorf("a v2 file converted: format %s, digest %s (want %s, %s), a key named epoch: %v", back.Format, back.Digest, transcript.Format, now.Digest, bytes.Contains(b, []byte(`epoch":`)))
	}
	for _, f := range export.Formats() {
		a, errA := export.Render(old, f)
		c, errC := export.Render(now, f)
		if errA != nil || errC != nil || !bytes.Equal(a, c) {
			t.Errorf("%s: a v2 file renders otherwise than the same run in v3 (%v, %v)", f, errA, errC)
		}
	}
}
