package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
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

// oldKey is a v3 key's name in v1 and v2.
func oldKey(now string) string {
	if now == "stored_fence" {
		return "stored_epoch"
	}
	return "epoch"
}

// newKey is a v1 or v2 key's name in v3.
func newKey(was string) string {
	if was == "stored_epoch" {
		return "stored_fence"
	}
	return "fence"
}

// oldFormat reports whether format names its fence "epoch".
func oldFormat(format string) bool { return format == FormatV1 || format == FormatV2 }

// errBothKeys marks an old file that holds a fence under v3's name.
var errBothKeys = errors.New("holds a key of a newer format")

// renameKeys rewrites the keys at the fence's places in the JSON text
// data: to v3's names when toNew, else to v1 and v2's. Only the keys'
// bytes change, so every value (a scenario's own values may hold a key
// named "epoch") keeps its exact text. Reading old text, a key already
// in v3's words at one of those places is an error: no release wrote it.
func renameKeys(data []byte, toNew bool) ([]byte, error) {
	places := fenceKeys()
	name := func(p []string) string { return p[len(p)-1] }
	if !toNew {
		// The places are written in the old names; match the new ones.
		for i, p := range places {
			places[i] = append(slices.Clone(p[:len(p)-1]), newKey(name(p)))
		}
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
	path := func(key string) []string {
		p := make([]string, 0, len(stack))
		for _, f := range stack[:len(stack)-1] {
			if f.object {
				p = append(p, f.key)
			} else {
				p = append(p, "*")
			}
		}
		return append(p, key)
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
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				stack[n-1].key, stack[n-1].wantKey = tok, false
				p := path(tok)
				for _, place := range places {
					if !slices.Equal(place, p) {
						continue
					}
					to := oldKey(tok)
					if toNew {
						to = newKey(tok)
					}
					start := prevEnd
					for start < end && bytes.IndexByte([]byte(" \t\r\n,"), data[start]) >= 0 {
						start++
					}
					out.Write(data[done:start])
					out.WriteString(`"` + to + `"`)
					done = end
					break
				}
				if toNew && (tok == "fence" || tok == "stored_fence") {
					// A v3 name where an old file has "epoch".
					was := slices.Clone(p)
					was[len(was)-1] = oldKey(tok)
					for _, place := range places {
						if slices.Equal(place, was) {
							return nil, fmt.Errorf("%w: %q where its format says %q", errBothKeys, tok, oldKey(tok))
						}
					}
				}
				break
			}
			value()
		default:
			value()
		}
		prevEnd = end
	}
	out.Write(data[done:])
	return out.Bytes(), nil
}
