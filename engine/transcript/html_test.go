package transcript_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/transcript"
)

// embedPage is a page around the embedded transcript, as a browser would
// get it.
func embedPage(t *testing.T, tr transcript.Transcript) string {
	t.Helper()
	var b bytes.Buffer
	if err := transcript.WriteHTMLEmbed(&b, tr); err != nil {
		t.Fatal(err)
	}
	return "<!DOCTYPE html>\n<html><head><title>x</title></head><body><p>run</p>" + b.String() + "<script>1</script></body></html>\n"
}

// A page's transcript reads back as the same transcript, digest and all,
// even when its values hold markup that would end a script element.
func TestHTMLEmbedReadsBack(t *testing.T) {
	tr := oddTranscript()
	tr.Steps[3].Note = `</script><script>alert(1)</script> & <!-- "quoted" -->`
	tr.Steps[0].Args = []any{"</SCRIPT>", json.Number("10")}
	if err := tr.Seal(); err != nil {
		t.Fatal(err)
	}
	page := embedPage(t, tr)
	if strings.Contains(page, "alert(1)</script>") || strings.Count(strings.ToLower(page), "</script>") != 2 {
		t.Fatalf("the note's markup escaped the data element:\n%s", page)
	}
	back, err := transcript.Read(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(tr)
	got, _ := json.Marshal(back)
	if !bytes.Equal(want, got) {
		t.Errorf("read back\n%s\nwant\n%s", got, want)
	}
	if d, err := back.ComputeDigest(); err != nil || d != tr.Digest {
		t.Errorf("digest %s (%v), want %s", d, err, tr.Digest)
	}
}

// Markup that does not carry exactly one whole transcript is refused as
// not a transcript, saying what is missing.
func TestHTMLWithoutATranscriptIsRefused(t *testing.T) {
	tr := oddTranscript()
	if err := tr.Seal(); err != nil {
		t.Fatal(err)
	}
	page := embedPage(t, tr)
	open := `<script type="application/json" id="` + transcript.HTMLScriptID + `">`
	i := strings.Index(page, open)
	for name, c := range map[string]struct{ src, says string }{
		"no transcript":  {"<!DOCTYPE html><html><body><p>hello</p></body></html>", "carries no run"},
		"leading space":  {"\n  <html><body></body></html>", "carries no run"},
		"cut short":      {page[:i+len(open)+40], "never ends"},
		"two runs":       {page + page, "more than one"},
		"broken json":    {strings.Replace(page, `"steps":`, `"steps":{`, 1), "not a leaserace transcript"},
		"other element":  {strings.Replace(page, transcript.HTMLScriptID, "something-else", 1), "carries no run"},
		"tampered moves": {strings.Replace(page, `"moves":"`, `"moves":"A:drop hb9@1,`, 1), "do not match its steps"},
	} {
		_, err := transcript.Read(strings.NewReader(c.src))
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if !errors.Is(err, transcript.ErrNotTranscript) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want ErrNotTranscript saying %q", name, err, c.says)
		}
	}
}
