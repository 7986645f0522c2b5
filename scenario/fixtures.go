package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Write is one [epoch, value] pair sent to the resource.
type Write struct {
	Epoch int64
	Value json.RawMessage
}

// MarshalJSON writes the pair form [epoch, value].
func (w Write) MarshalJSON() ([]byte, error) {
	v := w.Value
	if len(v) == 0 {
		v = json.RawMessage("null")
	}
	return MarshalPlain([]any{w.Epoch, v})
}

// Fixture is one check of the revoked-writer case: the resource starts at
// Initial, processes Writes in arrival order and should end at Expected.
type Fixture struct {
	Check    string  `json:"check"`
	Initial  Write   `json:"initial"`
	Writes   []Write `json:"writes"`
	Expected Write   `json:"expected"`
}

// MaxFixtures bounds a fixtures file.
const MaxFixtures = 10000

// MaxVariant keeps e = 10·N well inside int64.
const MaxVariant = math.MaxInt64 / 100

// RevokedWriterFixtures returns the six checks of the revoked-writer case for
// variant n (e = 10·n), exactly as the case contract states them.
func RevokedWriterFixtures(n int64) ([]Fixture, error) {
	if n < 1 || n > MaxVariant {
		return nil, fmt.Errorf("variant %d: want a whole number from 1 to %d (e = 10·N must keep e-1 nonnegative)", n, int64(MaxVariant))
	}
	e := 10 * n
	s := func(v string) json.RawMessage { b, _ := MarshalPlain(v); return b }
	w := func(epoch int64, v json.RawMessage) Write { return Write{Epoch: epoch, Value: v} }
	num := json.RawMessage(strconv.FormatInt(n, 10))
	null := json.RawMessage("null")
	return []Fixture{
		{"late revoked writer", w(e, s("current")), []Write{w(e-1, s("stale"))}, w(e, s("current"))},
		{"same holder writes twice", w(e, s("a")), []Write{w(e, s("b")), w(e, s("c"))}, w(e, s("c"))},
		{"new holder then old arrival", w(e, s("a")), []Write{w(e+1, s("new")), w(e, s("old"))}, w(e+1, s("new"))},
		{"multiple handoffs", w(e, s("a")), []Write{w(e+2, s("b")), w(e+1, s("c")), w(e+3, s("d"))}, w(e+3, s("d"))},
		{"idle resource", w(e, s("kept")), []Write{}, w(e, s("kept"))},
		{"initial epoch may be zero", w(0, null), []Write{w(0, num)}, w(0, num)},
	}, nil
}

// ParseFixtures reads a JSON list of fixtures and validates every one; an
// error names the fixture by index and check.
func ParseFixtures(name string, data []byte) ([]Fixture, error) {
	var raw []json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: %w", name, JSONShape(err, `want a JSON list of fixtures {"check","initial","writes","expected"}`))
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: unexpected data after the list of fixtures", name)
	}
	if len(raw) == 0 {
		// Every policy would pass an empty list, which proves nothing.
		return nil, fmt.Errorf("%s: no fixtures: want a JSON list of at least one", name)
	}
	if len(raw) > MaxFixtures {
		return nil, fmt.Errorf("%s: %d fixtures; at most %d", name, len(raw), MaxFixtures)
	}
	out := make([]Fixture, 0, len(raw))
	seen := map[string]int{}
	for i, r := range raw {
		f, err := parseFixture(r)
		if err != nil {
			label := fmt.Sprintf("fixture %d", i)
			if f.Check != "" {
				label += fmt.Sprintf(" (%q)", f.Check)
			}
			return nil, fmt.Errorf("%s: %s: %w", name, label, err)
		}
		if j, dup := seen[f.Check]; dup {
			return nil, fmt.Errorf("%s: fixture %d (%q): same check name as fixture %d", name, i, f.Check, j)
		}
		seen[f.Check] = i
		out = append(out, f)
	}
	return out, nil
}

func parseFixture(r json.RawMessage) (Fixture, error) {
	var f Fixture
	var raw struct {
		Check    *string           `json:"check"`
		Initial  json.RawMessage   `json:"initial"`
		Writes   []json.RawMessage `json:"writes"`
		Expected json.RawMessage   `json:"expected"`
	}
	dec := json.NewDecoder(bytes.NewReader(r))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return f, JSONShape(err, "want an object with check, initial, writes and expected")
	}
	if raw.Check == nil || *raw.Check == "" {
		return f, fmt.Errorf("missing check (a name for the fixture)")
	}
	f.Check = *raw.Check
	var err error
	if f.Initial, err = ParsePair(raw.Initial); err != nil {
		return f, fmt.Errorf("initial: %w", err)
	}
	if raw.Writes == nil {
		return f, fmt.Errorf("missing writes (use [] for none)")
	}
	for j, w := range raw.Writes {
		p, err := ParsePair(w)
		if err != nil {
			return f, fmt.Errorf("writes[%d]: %w", j, err)
		}
		f.Writes = append(f.Writes, p)
	}
	if f.Writes == nil {
		f.Writes = []Write{}
	}
	if f.Expected, err = ParsePair(raw.Expected); err != nil {
		return f, fmt.Errorf("expected: %w", err)
	}
	return f, nil
}

// ParsePair reads [epoch, value]: epoch a nonnegative int64, value any JSON.
func ParsePair(r json.RawMessage) (Write, error) {
	if len(r) == 0 {
		return Write{}, fmt.Errorf("missing: want [epoch, value]")
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(r, &parts); err != nil || len(parts) != 2 {
		return Write{}, fmt.Errorf("%s: want [epoch, value]", clip(r))
	}
	ep, err := ParseEpoch(parts[0])
	if err != nil {
		return Write{}, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, parts[1]); err != nil {
		return Write{}, fmt.Errorf("value: %w", err)
	}
	if err := CheckDepth(buf.Bytes(), MaxValueDepth); err != nil {
		return Write{}, fmt.Errorf("value %s", err)
	}
	return Write{Epoch: ep, Value: buf.Bytes()}, nil
}

// ParseEpoch accepts only a JSON integer literal in 0..MaxInt64, so that
// 9007199254740993 stays exact and 1.5, 1e3, "7" and -1 are refused.
func ParseEpoch(r json.RawMessage) (int64, error) {
	s := string(bytes.TrimSpace(r))
	if s == "" || s == "null" {
		return 0, fmt.Errorf("epoch is missing")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if len(s) > 0 && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) {
			if _, ferr := strconv.ParseFloat(s, 64); ferr == nil {
				if bytes.ContainsAny([]byte(s), ".eE") {
					return 0, fmt.Errorf("epoch %s is not a whole number", clip(r))
				}
				return 0, fmt.Errorf("epoch %s does not fit in a signed 64-bit integer", clip(r))
			}
		}
		return 0, fmt.Errorf("epoch %s is not an integer", clip(r))
	}
	if n < 0 {
		return 0, fmt.Errorf("epoch %d is negative; epochs are nonnegative", n)
	}
	return n, nil
}

func clip(r []byte) string {
	if len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return string(r)
}
