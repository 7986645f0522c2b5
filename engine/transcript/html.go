package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// HTMLScriptID is the id of the element in which a page leaserace writes
// (--format html) carries its run's transcript, digest and all, so that
// verify and replay read the page as they read the JSON.
const HTMLScriptID = "leaserace-transcript"

// htmlOpen and htmlClose delimit the embedded transcript exactly as
// WriteHTMLEmbed writes it; the reader looks for the same bytes.
const (
	htmlOpen  = `<script type="application/json" id="` + HTMLScriptID + `">`
	htmlClose = `</script>`
)

// WriteHTMLEmbed writes the transcript as the page's data element. The
// JSON escapes <, > and &, so nothing in a value (a "</script>" in a
// scenario's text) can end the element early; it reads back as the same
// JSON, and so the same digest.
func WriteHTMLEmbed(w io.Writer, t Transcript) error {
	var b bytes.Buffer
	b.WriteString(htmlOpen)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(true)
	if err := enc.Encode(t); err != nil {
		return fmt.Errorf("cannot write the transcript into the page: %w", err)
	}
	b.WriteString(htmlClose)
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("cannot write the transcript into the page: %w", err)
	}
	return nil
}

// looksHTML reports whether data is markup rather than JSON: a JSON
// transcript starts with "{", a page with "<".
func looksHTML(data []byte) bool {
	d := bytes.TrimLeft(data, " \t\r\n\ufeff")
	return len(d) > 0 && d[0] == '<'
}

// fromHTML is the transcript JSON a page carries. A page without one, or
// with more than one, is not a transcript: the error says what to do.
func fromHTML(data []byte) ([]byte, error) {
	open := []byte(htmlOpen)
	i := bytes.Index(data, open)
	if i < 0 {
		return nil, fmt.Errorf("%w: an HTML page, but it carries no run (no <script id=%q> element); only pages written by leaserace --format html can be verified or replayed", ErrNotTranscript, HTMLScriptID)
	}
	body := data[i+len(open):]
	j := bytes.Index(body, []byte(htmlClose))
	if j < 0 {
		return nil, fmt.Errorf("%w: the page's <script id=%q> element never ends; the file is cut short", ErrNotTranscript, HTMLScriptID)
	}
	if bytes.Contains(body[j:], open) {
		return nil, fmt.Errorf("%w: the page carries more than one <script id=%q> element, so which run it shows is unclear", ErrNotTranscript, HTMLScriptID)
	}
	return body[:j], nil
}
