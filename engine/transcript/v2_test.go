package transcript_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/transcript"
)

// v2Files are transcripts the previous release wrote: a delayed write in
// flight (zombie-producer), direct writes (revoked-writer) and a
// presenter's log with its steps (the session).
func v2Files(t *testing.T) []string {
	t.Helper()
	names, _ := filepath.Glob("testdata/v2/*.json")
	if len(names) < 3 {
		t.Fatalf("want the three v2 transcripts in testdata/v2, found %v", names)
	}
	return names
}

// A v2 file, which calls the fence "epoch", reads and writes back byte for
// byte, and its digest still checks: v3's word changed nothing in it.
func TestV2TranscriptsReadAndWriteAsTheyWere(t *testing.T) {
	for _, n := range v2Files(t) {
		raw, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(raw, []byte(`"epoch"`)) || !bytes.Contains(raw, []byte(`"stored_epoch"`)) {
			t.Fatalf("%s holds no fence under its old name", n)
		}
		tr := readTranscript(t, n)
		if tr.Format != transcript.FormatV2 {
			t.Errorf("%s: format %s", n, tr.Format)
		}
		if d, err := tr.ComputeDigest(); err != nil || d != tr.Digest {
			t.Errorf("%s: digest %s, file says %s (%v)", n, d, tr.Digest, err)
		}
		var out bytes.Buffer
		if err := tr.WriteJSON(&out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), raw) {
			t.Errorf("%s does not write back as it was:\n%s", n, firstDifference(raw, out.Bytes()))
		}
	}
}

// Upgraded, a v2 file is the same tree with the fence under its one name:
// no "epoch" is left, and nothing else moved.
func TestV2UpgradedCallsTheFenceAFence(t *testing.T) {
	for _, n := range v2Files(t) {
		raw, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		up, err := readTranscript(t, n).Upgraded()
		if err != nil {
			t.Fatal(err)
		}
		if up.Format != transcript.FormatV3 {
			t.Errorf("%s: upgraded to %s", n, up.Format)
		}
		var out bytes.Buffer
		if err := up.WriteJSON(&out); err != nil {
			t.Fatal(err)
		}
		// (Its narration may say Kafka's "producer epoch"; no key is
		// named so.)
		if bytes.Contains(out.Bytes(), []byte(`epoch":`)) {
			t.Errorf("%s upgraded still has a key named epoch", n)
		}
		was, now := tree(t, raw), tree(t, out.Bytes())
		renameEveryKey(was, map[string]string{"epoch": "fence", "stored_epoch": "stored_fence"})
		for _, k := range []string{"format", "digest"} {
			delete(was.(map[string]any), k)
			delete(now.(map[string]any), k)
		}
		if !reflect.DeepEqual(was, now) {
			t.Errorf("%s: upgraded, more than the keys changed:\n%s", n, firstDifference(mustMarshal(t, was), mustMarshal(t, now)))
		}
		// And it reads back as v3, digest and all.
		back, err := transcript.Read(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("%s upgraded does not read back: %v", n, err)
		}
		if d, err := back.ComputeDigest(); err != nil || d != up.Digest || back.Digest != up.Digest {
			t.Errorf("%s upgraded: digest %s, written %s, want %s (%v)", n, d, back.Digest, up.Digest, err)
		}
	}
}

// Only the transcript's own keys are renamed: a scenario's value may hold
// a key named "epoch" (or "fence"), and keeps it, in v2 and in v3.
func TestFenceKeysLeaveValuesAlone(t *testing.T) {
	for _, format := range []string{transcript.FormatV2, transcript.FormatV3} {
		tr := readTranscript(t, "testdata/v2/zombie-producer--blind-off.json")
		tr.Format = format
		value := json.RawMessage(`{"epoch":7,"fence":8,"stored_epoch":[{"epoch":1}]}`)
		last := len(tr.Steps) - 1
		tr.Steps[last].Resource.Value = value
		tr.Steps[last].Resource.Effects[0].Value = value
		tr.Steps[last].Args = []any{map[string]any{"epoch": json.Number("3")}}
		if err := tr.Seal(); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := tr.WriteJSON(&out); err != nil {
			t.Fatal(err)
		}
		back, err := transcript.Read(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v\n%s", format, err, out.Bytes())
		}
		s := back.Steps[last]
		if compact(t, s.Resource.Value) != string(value) || compact(t, s.Resource.Effects[0].Value) != string(value) {
			t.Errorf("%s: values read back as %s and %s, want %s", format, s.Resource.Value, s.Resource.Effects[0].Value, value)
		}
		if got := mustMarshal(t, s.Args); string(got) != `[{"epoch":3}]` {
			t.Errorf("%s: args read back as %s", format, got)
		}
		if d, err := back.ComputeDigest(); err != nil || d != tr.Digest {
			t.Errorf("%s: digest %s, want %s (%v)", format, d, tr.Digest, err)
		}
	}
}

// Each format has one name for the fence: a v2 file with v3's name, or a
// v3 file with v2's, is not one leaserace wrote, and the error says why.
func TestEachFormatHasOneNameForTheFence(t *testing.T) {
	raw, err := os.ReadFile("testdata/v2/revoked-writer--compare-strict.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, from, to, want string
	}{
		{"v2 with fence", `"stored_epoch"`, `"stored_fence"`, `a v2 transcript holds a key of a newer format: "stored_fence" where its format says "stored_epoch"`},
		{"v3 with epoch", `"leaserace.transcript/v2"`, `"leaserace.transcript/v3"`, `unknown field "epoch"`},
	} {
		data := bytes.Replace(raw, []byte(c.from), []byte(c.to), 1)
		_, err := transcript.Read(bytes.NewReader(data))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "not a leaserace transcript") {
			t.Errorf("%s: %v, want it to say %q", c.name, err, c.want)
		}
	}
}

func tree(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// renameEveryKey renames keys at every level: the testdata's values hold
// no key of these names.
func renameEveryKey(v any, names map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			renameEveryKey(x, names)
			if to, ok := names[k]; ok {
				delete(v, k)
				v[to] = x
			}
		}
	case []any:
		for _, x := range v {
			renameEveryKey(x, names)
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// firstDifference shows where two texts part.
func firstDifference(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-80)
	return "want …" + string(a[from:min(len(a), i+80)]) + "…\n got …" + string(b[from:min(len(b), i+80)]) + "…"
}
