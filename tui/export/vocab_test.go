package export_test

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/leaserace/leaserace/engine/enginetest"
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
