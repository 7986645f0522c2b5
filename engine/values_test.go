package engine_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// A value with &, < and > goes through the resource's HTTP API and
// PostgreSQL and comes out in the transcript and its Markdown as typed.
func TestValuesComeOutAsTyped(t *testing.T) {
	t.Parallel()
	const typed = `"Tom & Jerry <3>"`
	tr := playOneWrite(t, "amp", `null`, typed, enginetest.Knobs(scenario.RenewalBlind, scenario.FencingMonotonic))
	if got := string(tr.Outcome.Resource.Value); got != typed {
		t.Errorf("the resource stored %s, want %s", got, typed)
	}
	var js, md bytes.Buffer
	if err := tr.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := transcript.WriteMarkdown(&md, tr); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"JSON": js.String(), "Markdown": md.String()} {
		if strings.Contains(out, `\u00`) || !strings.Contains(out, typed) {
			t.Errorf("the %s transcript does not show %s as typed:\n%s", name, typed, out)
		}
	}
}

// A value as deep as a scenario allows goes through the resource and
// PostgreSQL, into a transcript and back through the reader; one level of
// nesting past what leaserace can write is refused by the reader.
func TestDeepestValueRoundTripsThroughATranscript(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"a":`, scenario.MaxValueDepth) + `"x"` + strings.Repeat("}", scenario.MaxValueDepth)
	tr := playOneWrite(t, "deep", deep, deep, enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic))
	if !scenario.JSONEqual(tr.Outcome.Resource.Value, []byte(deep)) {
		t.Fatalf("the resource stored %.80s…", tr.Outcome.Resource.Value)
	}
	var buf bytes.Buffer
	if err := tr.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := transcript.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("leaserace cannot read back its own transcript: %v", err)
	}
	d1, err1 := tr.ComputeDigest()
	d2, err2 := back.ComputeDigest()
	if err1 != nil || err2 != nil || d1 != d2 {
		t.Fatalf("digest %s → %s (%v, %v)", d1, d2, err1, err2)
	}

	// Deepen the stored value until the reader refuses: the transcript's
	// own structure plus the deepest value must stay inside its limit.
	js := buf.String()
	for extra := 1; ; extra++ {
		deeper := strings.Repeat("[", extra) + `"x"` + strings.Repeat("]", extra)
		edited := strings.Replace(js, `"x"`, deeper, 1)
		_, err := transcript.Read(strings.NewReader(edited))
		if err == nil {
			continue
		}
		if !strings.Contains(err.Error(), "not a leaserace transcript: it nests more than") {
			t.Fatalf("with %d more levels: %v", extra, err)
		}
		if extra > 16 {
			t.Fatalf("refused only %d levels past the deepest value leaserace writes", extra)
		}
		break
	}
}

// playOneWrite runs, on a real server, a scenario whose resource starts
// with initial and takes one write of value (both YAML flow values), and
// returns its transcript.
func playOneWrite(t *testing.T, name, initial, value string, k scenario.Knobs) transcript.Transcript {
	t.Helper()
	sc, err := scenario.Parse(name+".yaml", []byte(`name: `+name+`
window: {from: 0, to: 10}
ttl: 60
initial:
  resource: {epoch: 0, value: `+initial+`}
events:
  - {t: 1, actor: W, action: write, epoch: 1, value: `+value+`}
expect:
  - {renewal: "*", fencing: "*", effects: 1, verdict: safe}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := enginetest.OpenScenario(t, pgtest.DSN(t), sc, k)
	if err := r.PlayAll(enginetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	tr, err := r.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
