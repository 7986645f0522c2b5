package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"github.com/leaserace/leaserace/scenario"
)

// TranscriptFormat names the transcript JSON layout; bump it on any change
// that alters what a digest covers.
const TranscriptFormat = "leaserace.transcript/v1"

// Message is a heartbeat in flight: who sent it, when, when the network
// delivers it, and the lease snapshot it carries.
type Message struct {
	ID       string         `json:"id"`
	From     string         `json:"from"`
	Sent     int64          `json:"sent"`
	Due      int64          `json:"due"`
	Snapshot scenario.Lease `json:"snapshot"`
	// Stale is true once the snapshot's epoch is no longer current at the
	// coordinator, while the message is still travelling.
	Stale       bool   `json:"stale"`
	StaleReason string `json:"stale_reason,omitempty"`
}

// Call is the HTTP request a step made to the resource.
type Call struct {
	Method   string `json:"method"`
	Path     string `json:"path"`
	Status   int    `json:"status"`
	Accepted bool   `json:"accepted"`
	Reason   string `json:"reason,omitempty"`
}

// ResourceSnap is the resource as a step left it.
type ResourceSnap struct {
	Epoch   int64           `json:"epoch"`
	Value   json.RawMessage `json:"value"`
	Effects []Effect        `json:"effects"`
}

// Step is what one event did, as the transcript and the TUI show it.
type Step struct {
	T      int64           `json:"t"`
	Actor  string          `json:"actor"`
	Action scenario.Action `json:"action"`
	// Heartbeat names the message for heartbeat.send and heartbeat.deliver.
	Heartbeat string `json:"heartbeat,omitempty"`
	// SQL is the statement this step ran ("" when it ran none) with its
	// arguments, the server's command tag and the rows it affected.
	SQL  string `json:"sql"`
	Args []any  `json:"args"`
	Tag  string `json:"tag"`
	Rows int64  `json:"rows"`
	// Call is set when the step spoke to the resource over HTTP.
	Call        *Call           `json:"call,omitempty"`
	Coordinator *scenario.Lease `json:"coordinator"`
	Resource    ResourceSnap    `json:"resource"`
	InFlight    []Message       `json:"in_flight"`
	Note        string          `json:"note"`
}

// Outcome sums up a run at its current position.
type Outcome struct {
	// Effects counts writes the resource accepted during the run.
	Effects int `json:"effects"`
	// Rejected counts writes the resource refused.
	Rejected    int                    `json:"rejected"`
	Verdict     string                 `json:"verdict"`
	Coordinator *scenario.Lease        `json:"coordinator"`
	Resource    scenario.ResourceState `json:"resource"`
}

// Initial is the state before the first step.
type Initial struct {
	Coordinator *scenario.Lease        `json:"coordinator"`
	Resource    scenario.ResourceState `json:"resource"`
}

// Meta holds what differs between machines and runs; the digest skips it.
type Meta struct {
	Provider      string `json:"provider,omitempty"`
	ServerVersion string `json:"server_version,omitempty"`
	RecordedAt    string `json:"recorded_at,omitempty"`
	Leaserace     string `json:"leaserace,omitempty"`
	Source        string `json:"source,omitempty"`
}

// Transcript is a whole run: stable JSON for tools.
type Transcript struct {
	Format   string           `json:"format"`
	Scenario string           `json:"scenario"`
	Knobs    scenario.Knobs   `json:"knobs"`
	Times    map[string]int64 `json:"times,omitempty"`
	Initial  Initial          `json:"initial"`
	Steps    []Step           `json:"steps"`
	Outcome  Outcome          `json:"outcome"`
	Digest   string           `json:"digest"`
	Meta     *Meta            `json:"meta,omitempty"`
	// Session is what a presenter did, in order, when the transcript comes
	// from the TUI. Like Meta it is not part of the digest.
	Session []SessionEntry `json:"session,omitempty"`
}

// Session entry kinds.
const (
	SessionStep     = "step"     // a forward step ran its statement
	SessionBack     = "back"     // the presenter stepped or jumped back (a replay)
	SessionSeek     = "seek"     // a jump or tick to another time
	SessionToggle   = "toggle"   // a knob changed and the run was replayed
	SessionScenario = "scenario" // another scenario was opened
)

// SessionEntry is one thing the presenter did and what was shown after it.
type SessionEntry struct {
	Kind     string         `json:"kind"`
	Scenario string         `json:"scenario"`
	T        int64          `json:"t"`
	Pos      int            `json:"pos"`
	Knobs    scenario.Knobs `json:"knobs"`
	// Step is set for forward steps.
	Step *Step `json:"step,omitempty"`
	// Change says what a toggle changed ("effects 2 → 1").
	Change []string `json:"change,omitempty"`
}

// ComputeDigest hashes the canonical transcript: everything but the digest
// itself and Meta, so the same scenario and knobs hash alike anywhere.
func (t Transcript) ComputeDigest() (string, error) {
	t.Digest, t.Meta, t.Session = "", nil, nil
	b, err := json.Marshal(t)
	if err != nil {
		return "", fmt.Errorf("cannot encode transcript for its digest: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// WriteJSON writes the transcript, indented, with a trailing newline.
func (t Transcript) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		return fmt.Errorf("cannot write transcript: %w", err)
	}
	return nil
}

// transcriptMaxDepth leaves room for the transcript's own nesting (steps,
// their resource, its effects) around values of the deepest allowed kind.
const transcriptMaxDepth = scenario.MaxValueDepth + 16

// ReadTranscript parses transcript JSON, keeping numbers exact so that the
// digest can be recomputed byte for byte.
func ReadTranscript(r io.Reader) (Transcript, error) {
	var t Transcript
	data, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return t, fmt.Errorf("cannot read transcript: %w", err)
	}
	// A transcript's own structure is a few levels deep and its values at
	// most scenario.MaxValueDepth; deeper input is not one leaserace wrote,
	// and writing it back out would grow with the square of its depth.
	if err := scenario.CheckDepth(data, transcriptMaxDepth); err != nil {
		return t, fmt.Errorf("not a leaserace transcript: it %w (its values may nest at most %d)", err, scenario.MaxValueDepth)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return t, fmt.Errorf("not a leaserace transcript: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return t, fmt.Errorf("not a leaserace transcript: unexpected data after the transcript's JSON object")
	}
	if t.Format != TranscriptFormat {
		return t, fmt.Errorf("transcript format %q: this leaserace reads %q", t.Format, TranscriptFormat)
	}
	return t, nil
}
