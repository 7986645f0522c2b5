package transcript_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/transcript"
)

func TestReadTranscriptRefusesWhatIsNotOne(t *testing.T) {
	min := `{"format":"leaserace.transcript/v1","scenario":"x","knobs":{"renewal":"blind","fencing":"off"},"initial":{"coordinator":null,"resource":{"epoch":0,"value":null}},"steps":[],"outcome":{"effects":0,"rejected":0,"verdict":"safe","coordinator":null,"resource":{"epoch":0,"value":null}},"digest":""}`
	if _, err := transcript.Read(strings.NewReader(min + "\n")); err != nil {
		t.Fatalf("a minimal transcript with a trailing newline: %v", err)
	}
	for name, src := range map[string]string{
		"trailing data": min + ` {"more":1}`,
		"two objects":   min + min,
		"other format":  strings.Replace(min, "transcript/v1", "transcript/v9", 1),
		"unknown field": strings.Replace(min, `"scenario":"x"`, `"scenario":"x","sql":"DROP TABLE leases"`, 1),
		"not json":      "leases",
		"empty":         "",
		"truncated":     min[:len(min)/2],
	} {
		if _, err := transcript.Read(strings.NewReader(src)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A file of the wrong shape is named in JSON's terms, never Go's types.
func TestReadTranscriptSaysWhatItFound(t *testing.T) {
	for src, want := range map[string]string{
		`[]`:           "want the JSON object leaserace writes: found a JSON array",
		`{"steps": 5}`: "steps is a JSON number",
		`{"format":"leaserace.transcript/v1","steps":[{"t":"x"}]}`: "steps.t is a JSON string",
		`{"knobs":{"renewal":7}}`:                                  "knobs.renewal is a JSON number",
		``:                                                         "the file is empty",
		`{"format":1`:                                              "the JSON ends too soon",
	} {
		_, err := transcript.Read(strings.NewReader(src))
		if !errors.Is(err, transcript.ErrNotTranscript) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrNotTranscript saying %q", src, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "Go ") {
			t.Errorf("%s: %v names Go's types", src, err)
		}
	}
}
