package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode"

	"github.com/leaserace/leaserace/internal/reword"
)

// MaxValueDepth bounds how deeply a value in a scenario or fixtures file may
// nest. Real values are a few levels deep; a deeper one only makes every
// exported transcript grow with the square of its depth (each line is
// indented), until a small file exports gigabytes.
const MaxValueDepth = 64

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

// CheckDepth refuses JSON that nests arrays and objects more than limit
// levels deep. It only counts brackets outside strings, so it is linear and
// does not need the JSON to be valid; validity is checked elsewhere.
func CheckDepth(b []byte, limit int) error {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > limit {
				return fmt.Errorf("nests more than %d levels deep", limit)
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

// JSONEqual compares two JSON texts by meaning, numbers by their digits.
func JSONEqual(a, b json.RawMessage) bool {
	da, ea := decodeExact(a)
	db, eb := decodeExact(b)
	if ea != nil || eb != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	return reflect.DeepEqual(da, db)
}

func decodeExact(b json.RawMessage) (any, error) {
	if len(b) == 0 {
		b = json.RawMessage("null")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// JSONShape says what a JSON decoding error found, after want, in the
// file's terms rather than Go's: "steps is a JSON number" where the decoder
// names its own types and struct fields. The decoder's error stays
// underneath for errors.As.
func JSONShape(err error, want string) error {
	var te *json.UnmarshalTypeError
	found := err.Error()
	switch {
	case errors.Is(err, io.EOF):
		found = "the file is empty"
	case errors.Is(err, io.ErrUnexpectedEOF):
		found = "the JSON ends too soon"
	case errors.As(err, &te):
		found = "found a JSON " + te.Value
		if path := jsonPath(te.Field); path != "" {
			found = path + " is a JSON " + te.Value
		}
	}
	return reword.Error(want+": "+found, err)
}

// jsonPath is the decoder's field path without the Go names in it: the
// formats' keys are lower case, and an embedded struct's name is not.
func jsonPath(field string) string {
	var keys []string
	for _, k := range strings.Split(field, ".") {
		if k != "" && !unicode.IsUpper([]rune(k)[0]) {
			keys = append(keys, k)
		}
	}
	return strings.Join(keys, ".")
}
