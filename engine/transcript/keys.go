package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// v1 and v2 called the resource's fence "epoch" in their JSON, though the
// screen called it fence; v3 uses the screen's word. A file's digest is
// over its own format's keys, so old files are read by renaming their keys
// and hashed and written with the old keys put back.

// fenceKeys are the places, as paths of keys ("*" for any element of an
// array), where v1 and v2 wrote "epoch" or "stored_epoch".
func fenceKeys() [][]string {
	step := [][]string{
		{"epoch"}, // a direct write's fence
		{"resource", "epoch"},
		{"resource", "effects", "*", "epoch"},
		{"resource", "effects", "*", "stored_epoch"},
		{"in_flight", "*", "epoch"}, // a delayed write's fence
	}
	paths := [][]string{
		{"initial", "resource", "epoch"},
		{"outcome", "resource", "epoch"},
	}
	// Steps stand alone and inside the presenter's log, which v1 called
	// "session".
	for _, at := range [][]string{{"steps", "*"}, {"presenter", "*", "step"}, {"session", "*", "step"}} {
		for _, p := range step {
			paths = append(paths, append(slices.Clone(at), p...))
		}
	}
	return paths
}

// oldKey is a fence key's name in v1 and v2, whichever name it has now.
func oldKey(k string) string {
	if strings.HasPrefix(k, "stored_") {
		return "stored_epoch"
	}
	return "epoch"
}

// newKey is a fence key's name in v3, whichever name it has now.
func newKey(k string) string {
	if strings.HasPrefix(k, "stored_") {
		return "stored_fence"
	}
	return "fence"
}

// oldFormat reports whether format names its fence "epoch".
func oldFormat(format string) bool { return format == FormatV1 || format == FormatV2 }

// errBothKeys marks an old file that holds a fence under v3's name.
var errBothKeys = errors.New("holds a key of a newer format")

// formatOf is the top-level "format" of transcript JSON, "" when it has
// none or is not an object. leaserace writes the format first, so this
// reads one key of a file it wrote, not the whole file.
func formatOf(data []byte) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return ""
		}
		if key == "format" {
			var f string
			_ = json.Unmarshal(v, &f)
			return f
		}
	}
	return ""
}

// renameKeys rewrites the keys at the fence's places in the JSON text
// data: to v3's names when toNew, else to v1 and v2's. Only the keys'
// bytes change, so every value (a scenario's own values may hold a key
// named "epoch") keeps its exact text. Reading old text, a key already
// in v3's words at one of those places is an error: no release wrote it.
func renameKeys(data []byte, toNew bool) ([]byte, error) {
	places := fenceKeys() // in the old names
	// at reports whether path p, its last key in the old names, is one of
	// the places.
	at := func(p []string) bool {
		return slices.ContainsFunc(places, func(q []string) bool { return slices.Equal(q, p) })
	}
	type frame struct {
		object, wantKey bool
		key             string
	}
	var (
		stack []frame
		out   bytes.Buffer
		done  int64 // data[:done] is already in out
	)
	// path is where key stands: the keys of the objects around it, "*"
	// for an array's element, and key in the old names.
	path := func(key string) []string {
		p := make([]string, 0, len(stack))
		for _, f := range stack[:len(stack)-1] {
			if f.object {
				p = append(p, f.key)
			} else {
				p = append(p, "*")
			}
		}
		return append(p, oldKey(key))
	}
	// value marks the end of a value in the frame on top.
	value := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	prevEnd := int64(0)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		end := dec.InputOffset()
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{':
				stack = append(stack, frame{object: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:len(stack)-1]
				value()
			}
		case string:
			top := len(stack) - 1
			if top < 0 || !stack[top].object || !stack[top].wantKey {
				value()
				break
			}
			stack[top].key, stack[top].wantKey = tok, false
			from, to := oldKey(tok), newKey(tok) // the names this key may have
			if !toNew {
				from, to = to, from
			}
			switch {
			case tok == to:
				// A v3 name where an old file has "epoch"?
				if toNew && at(path(tok)) {
					return nil, fmt.Errorf("%w: %q where its format says %q", errBothKeys, tok, oldKey(tok))
				}
			case tok == from && at(path(tok)):
				start := prevEnd
				for start < end && strings.IndexByte(" \t\r\n,", data[start]) >= 0 {
					start++
				}
				out.Write(data[done:start])
				out.WriteString(`"` + to + `"`)
				done = end
			}
		default:
			value()
		}
		prevEnd = end
	}
	out.Write(data[done:])
	return out.Bytes(), nil
}
