package scenario

import (
	"errors"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/parser"
)

// Parse refuses tags before decoding, so the decoder's crash on a tagged
// mapping where the event list belongs no longer reaches it. This feeds
// that tree to the decoder directly: the crash must come back as a refusal
// of the file, with its position, not as a panic.
func TestDecoderCrashBecomesARefusal(t *testing.T) {
	src := "name: x\nwindow: {from: 1, to: 5}\nttl: 3\nevents: !x {t: 1, actor: A, action: write, epoch: 1}\n"
	tree, err := parser.ParseBytes([]byte(src), 0)
	if err != nil {
		t.Fatal(err)
	}
	var raw file
	err = decodeYAML("x.yaml", tree.Docs[0].Body, &raw)
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("got %T %v, want a *scenario.Error", err, err)
	}
	if se.File != "x.yaml" || se.Line != 1 || !strings.Contains(se.Msg, "YAML decoder failed") {
		t.Fatalf("refusal %#v", se)
	}
}
