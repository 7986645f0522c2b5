package export_test

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/tui/export"
)

// One word for one thing: what a learner reads of a run, in any format
// but the JSON transcript, calls the fence a fence. "epoch" is left only
// in the JSON transcript's field names, which the HTML page's script
// carries and reads, and in "producer epoch", Kafka's own name, which
// zombie-producer names beside the fence. The resource's
// SQL, once "SET epoch = $1", says fence.
func TestExportsCallTheFenceAFence(t *testing.T) {
	script := regexp.MustCompile(`(?s)<script\b.*?</script>`)
	kafka := regexp.MustCompile(`producer epoch`)
	for _, name := range enginetest.ShippedNames(t) {
		tr := enginetest.ReadShipped(t, name)
		for _, f := range export.Formats() {
			if f == "json" {
				continue
			}
			b, err := export.Render(tr, f)
			if err != nil {
				t.Fatalf("%s as %s: %v", name, f, err)
			}
			if f == "html" {
				b = script.ReplaceAll(b, nil)
			}
			b = bytes.ToLower(kafka.ReplaceAll(b, nil))
			if i := bytes.Index(b, []byte("epoch")); i >= 0 {
				t.Errorf("%s as %s says epoch: %q", name, f, b[max(0, i-50):min(len(b), i+30)])
			}
		}
	}
}
