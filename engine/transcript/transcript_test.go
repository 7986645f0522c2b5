package transcript_test

import (
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
