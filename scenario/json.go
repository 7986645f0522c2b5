package scenario

import (
	"bytes"
	"encoding/json"
)

// MarshalPlain is json.Marshal without HTML escaping: a value such as
// "Tom & Jerry <3>" stays readable in transcripts, tables and the TUI
// instead of turning into \u0026 and \u003c. leaserace's JSON is read by
// people and tools, never embedded in HTML.
func MarshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
