package engine_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
)

// A value with &, < and > goes through the resource's HTTP API and
// PostgreSQL and comes out in the transcript and its Markdown as typed.
func TestValuesComeOutAsTyped(t *testing.T) {
	const typed = `"Tom & Jerry <3>"`
	sc, err := scenario.Parse("amp.yaml", []byte(`name: amp
window: {from: 0, to: 10}
ttl: 60
initial:
  resource: {epoch: 0, value: null}
events:
  - {t: 1, actor: W, action: write, epoch: 1, value: "Tom & Jerry <3>"}
expect:
  - {renewal: "*", fencing: "*", effects: 1, verdict: safe}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := openScenario(t, pgtest.DSN(t), sc, knobs(scenario.RenewalBlind, scenario.FencingMonotonic))
	if err := r.PlayAll(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	tr, err := r.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(tr.Outcome.Resource.Value); got != typed {
		t.Errorf("the resource stored %s, want %s", got, typed)
	}
	var js, md bytes.Buffer
	if err := tr.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := engine.WriteMarkdown(&md, tr); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"JSON": js.String(), "Markdown": md.String()} {
		if strings.Contains(out, `\u00`) || !strings.Contains(out, typed) {
			t.Errorf("the %s transcript does not show %s as typed:\n%s", name, typed, out)
		}
	}
}
