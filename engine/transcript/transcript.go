// Package transcript is leaserace's record of a run: the JSON format with
// its digest, reading (v1, v2 and v3) and writing, and the Markdown and Mermaid
// renderings of it. It knows nothing of databases or terminals.
package transcript

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/leaserace/leaserace/scenario"
)

// The transcript formats: v3 is written; v1 and v2, from earlier
// releases, are still read, replayed and verified. v3 is v2 with the
// resource's fence under the screen's word, "fence", where v2 wrote
// "epoch" (see keys.go).
const (
	FormatV1 = "leaserace.transcript/v1"
	FormatV2 = "leaserace.transcript/v2"
	FormatV3 = "leaserace.transcript/v3"
	// Format is the one this release writes.
	Format = FormatV3
)

// Message is a message in flight: who sent it, when, when the network
// delivers it (-1: never, it is lost or held), and what it carries: a
// heartbeat carries the sender's cached lease, a write its fence and value.
type Message struct {
	ID       string         `json:"id"`
	From     string         `json:"from"`
	Sent     int64          `json:"sent"`
	Due      int64          `json:"due"`
	Snapshot scenario.Lease `json:"snapshot"`
	// Kind is "write" for a delayed write, "reply" for a renewal's late
	// answer, empty for a heartbeat.
	Kind  string          `json:"kind,omitempty"`
	Fence int64           `json:"fence,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
	Rows  int64           `json:"rows,omitempty"`
	// Stale is true once the snapshot's epoch is no longer current at the
	// coordinator, while the message is still travelling.
	Stale       bool   `json:"stale"`
	StaleReason string `json:"stale_reason,omitempty"`
}

// Message kinds.
const (
	KindHeartbeat = ""
	KindWrite     = "write"
	// KindReply is a renewal's answer travelling back to its sender:
	// Rows says whether the renewal changed the row, Snapshot the row
	// the sender will believe when it arrives.
	KindReply = "reply"
)

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
	Fence   int64             `json:"fence"`
	Value   json.RawMessage   `json:"value"`
	Effects []scenario.Effect `json:"effects"`
}

// Clone is a copy that shares no effects with s; no effects is an empty
// list, as the JSON writes it.
func (s ResourceSnap) Clone() ResourceSnap {
	s.Effects = slices.Clone(s.Effects)
	if s.Effects == nil {
		s.Effects = []scenario.Effect{}
	}
	return s
}

// Belief is what one actor believes after a step: the lease it last heard
// of from the coordinator (nil: it knows it holds none) and whether it is
// paused. An actor acts on its belief, which may be out of date.
type Belief struct {
	Actor  string          `json:"actor"`
	Lease  *scenario.Lease `json:"lease"`
	Paused bool            `json:"paused,omitempty"`
	// Holds is whether, by its own clock at the step's time, the actor
	// believes it holds the lease; an actor with a check pending from
	// before a pause goes by that check, as its clock stood still.
	Holds bool `json:"holds"`
}

// Step results: what a step came to, for the timeline. The words are the
// scenario's, so a question about a step's result is answered in them.
const (
	ResultDone    = scenario.ResultDone    // it ran and the server or resource said yes
	ResultRefused = scenario.ResultRefused // zero rows, or the resource answered 409
	ResultNoCall  = scenario.ResultNoCall  // the actor made no call (it knew better, or held nothing)
)

// Step is what one move did, as the transcript and the TUI show it.
type Step struct {
	T      int64           `json:"t"`
	Actor  string          `json:"actor"`
	Action scenario.Action `json:"action"`
	// Heartbeat names the message for the heartbeat and write messages.
	Heartbeat string `json:"heartbeat,omitempty"`
	// Fence is a direct write's fence.
	Fence *int64 `json:"fence,omitempty"`
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
	// Result is done, refused or no call (v2).
	Result string `json:"result,omitempty"`
	// Beliefs is what every actor believes after the step (v2).
	Beliefs []Belief `json:"beliefs,omitempty"`
}

// Move is the step's move in the log's text form.
func (s Step) Move() scenario.Move {
	return scenario.Move{T: s.T, Actor: s.Actor, Action: s.Action, Msg: s.Heartbeat, Fence: s.Fence}
}

// Outcome sums up a run at its current position.
type Outcome struct {
	// Effects counts writes the resource accepted during the run.
	Effects int `json:"effects"`
	// Rejected counts writes the resource refused.
	Rejected int `json:"rejected"`
	// Blocked counts refused writes the contract calls valid (v2).
	Blocked     int                    `json:"blocked,omitempty"`
	Verdict     string                 `json:"verdict"`
	Coordinator *scenario.Lease        `json:"coordinator"`
	Resource    scenario.ResourceState `json:"resource"`
}

// OutcomeOf sums up a state: the coordinator's row, and the resource with
// its effects, judged (in place) by scenario.Judge against the resource's
// initial epoch. Live runs, replays and every batch command use it.
func OutcomeOf(coord *scenario.Lease, res ResourceSnap, initialEpoch int64) Outcome {
	o := Outcome{Coordinator: coord, Resource: scenario.ResourceState{Fence: res.Fence, Value: res.Value}}
	o.Verdict = scenario.Judge(initialEpoch, res.Effects)
	t := scenario.TallyOf(res.Effects)
	o.Effects, o.Rejected, o.Blocked = t.Accepted, t.Refused, t.Blocked
	return o
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
	// Moves is the run's log in its text form (v2): paste it into
	// leaserace run --moves to play the same schedule again.
	Moves   string  `json:"moves,omitempty"`
	Initial Initial `json:"initial"`
	Steps   []Step  `json:"steps"`
	Outcome Outcome `json:"outcome"`
	Digest  string  `json:"digest"`
	Meta    *Meta   `json:"meta,omitempty"`
	// Presenter is what the presenter did, in order, when the transcript
	// comes from the TUI. Like Meta it is not part of the digest.
	Presenter []PresenterEntry `json:"presenter,omitempty"`
	// Asks tallies the predictions made along the way; not digested.
	Asks *AskTally `json:"asks,omitempty"`
	// Played is set for a played run: one whose moves are not all the
	// scenario's own events at their scripted times (play mode, run
	// --moves), or one a learner exported from play mode. It is derived
	// from the steps, the scenario and a search, and not digested.
	Played *Played `json:"played,omitempty"`
}

// Played is what a played run's transcript says beyond its steps.
type Played struct {
	// OffScript is set when some move was not one of the scenario's events
	// at its scripted time: then only the times the moves used are the
	// run's, and the renderings name no other.
	OffScript bool `json:"off_script"`
	// Times are the scenario's named times at which one of its own events
	// was played; the rest of Transcript.Times did not happen in this run.
	Times map[string]int64 `json:"times,omitempty"`
	// Goals are the scenario's goals under the transcript's knobs: each
	// reached or not by these steps, against par.
	Goals []GoalRecord `json:"goals,omitempty"`
	// Elsewhere are goals reached in the same session under other knobs,
	// by runs this file does not hold; their paths replay them.
	Elsewhere []GoalRecord `json:"elsewhere,omitempty"`
}

// GoalRecord is one goal of the scenario and how a run went for it.
type GoalRecord struct {
	ID    string         `json:"id"`
	Text  string         `json:"text"`
	When  string         `json:"when"`
	Knobs scenario.Knobs `json:"knobs"`
	// Reached says whether the run reached it; Moves after how many moves,
	// and Path is those moves in their text form, for run --moves.
	Reached bool   `json:"reached"`
	Moves   int    `json:"moves,omitempty"`
	Path    string `json:"path,omitempty"`
	// Par is what the search of every order of the moves found; nil when
	// no search was made.
	Par *Par `json:"par,omitempty"`
}

// Par is the fewest moves that reach a goal under one setting.
type Par struct {
	// Moves is the fewest moves (0: no order of the moves reaches it) and
	// Path one move list that takes them.
	Moves int    `json:"moves"`
	Path  string `json:"path,omitempty"`
	// Runs of Of complete runs reach the goal (exact decimal counts).
	Runs string `json:"runs"`
	Of   string `json:"of"`
	// Cut, when no order reaches the goal, names the move that cuts every
	// path to it, in the run's own words; absent in older files.
	Cut string `json:"cut,omitempty"`
}

// IsPlayed reports whether the transcript is of a played run: its
// renderings then take every time from its moves.
func (t Transcript) IsPlayed() bool { return t.Played != nil }

// AskTally counts the predict-then-reveal questions answered in a session.
type AskTally struct {
	Asked   int         `json:"asked"`
	Right   int         `json:"right"`
	Answers []AskAnswer `json:"answers,omitempty"`
}

// AskAnswer is one question, the choice made and the right answer.
type AskAnswer struct {
	T        int64  `json:"t"`
	Question string `json:"question"`
	Chose    string `json:"chose"`
	Answer   string `json:"answer"`
	Right    bool   `json:"right"`
}

// Presenter entry kinds.
const (
	PresenterStep     = "step"     // a forward step ran its statement
	PresenterBack     = "back"     // the presenter stepped or jumped back (a replay)
	PresenterSeek     = "seek"     // a jump or tick to another time
	PresenterToggle   = "toggle"   // a knob changed and the run was replayed
	PresenterScenario = "scenario" // another scenario was opened
	PresenterPlay     = "play"     // a move chosen in play mode ran
)

// PresenterEntry is one thing the presenter did and what was shown after it.
type PresenterEntry struct {
	Kind     string         `json:"kind"`
	Scenario string         `json:"scenario"`
	T        int64          `json:"t"`
	Pos      int            `json:"pos"`
	Knobs    scenario.Knobs `json:"knobs"`
	// Step is set for forward steps.
	Step *Step `json:"step,omitempty"`
	// Change says what a toggle changed ("effects 2 → 1").
	Change []string `json:"change,omitempty"`
	// Fork is, for a move played after stepping back, the move of the
	// path before that it replaced, in its text form.
	Fork string `json:"fork,omitempty"`
}

// MovesOf is the log of steps in its text form.
func MovesOf(steps []Step) string {
	moves := make([]scenario.Move, len(steps))
	for i, s := range steps {
		moves[i] = s.Move()
	}
	return scenario.FormatMoves(moves)
}

// ComputeDigest hashes the canonical transcript: everything but the digest
// itself, Meta, what the presenter did and what a played run adds, so the same run hashes alike
// anywhere.
func (t Transcript) ComputeDigest() (string, error) {
	t.Digest, t.Meta, t.Presenter, t.Asks, t.Played = "", nil, nil, nil, nil
	b, err := json.Marshal(t)
	if err != nil {
		return "", fmt.Errorf("cannot encode transcript for its digest: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Seal fills in the derived parts of a v2 transcript (the moves) and its
// digest.
func (t *Transcript) Seal() error {
	if t.Steps == nil {
		t.Steps = []Step{}
	}
	if t.Format != FormatV1 {
		t.Moves = MovesOf(t.Steps)
	}
	d, err := t.ComputeDigest()
	if err != nil {
		return err
	}
	t.Digest = d
	return nil
}

// WriteJSON writes the transcript, indented, with a trailing newline, in
// its own format's keys (MarshalJSON).
func (t Transcript) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		return fmt.Errorf("cannot write transcript: %w", err)
	}
	return nil
}

// MarshalJSON writes the transcript in its own format's keys: a v1 or v2
// transcript calls the fence "epoch", as those releases wrote it, so that
// it hashes and reads back as the file it came from.
func (t Transcript) MarshalJSON() ([]byte, error) {
	type plain Transcript // the fields, without this method
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the caller's encoder escapes, or not
	if err := enc.Encode(plain(t)); err != nil {
		return nil, err
	}
	data := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	if !oldFormat(t.Format) {
		return data, nil
	}
	return renameKeys(data, false)
}

// maxDepth leaves room for the transcript's own nesting (steps, their
// resource, its effects) around values of the deepest allowed kind.
const maxDepth = scenario.MaxValueDepth + 16

// MaxSize bounds a transcript file.
const MaxSize = 64 << 20

// ErrNotTranscript marks input that is not a leaserace transcript.
var ErrNotTranscript = errors.New("not a leaserace transcript")

// Read parses transcript JSON of either format, or the one embedded in a
// page leaserace wrote (--format html), keeping numbers exact so
// that the digest can be recomputed byte for byte. A v1 transcript comes
// back as it was written (Format v1, no judgements): its digest still
// checks, and Upgraded gives its v2 reading.
func Read(r io.Reader) (Transcript, error) {
	var t Transcript
	data, err := io.ReadAll(io.LimitReader(r, MaxSize))
	if err != nil {
		return t, fmt.Errorf("cannot read transcript: %w", err)
	}
	// A page written by --format html carries its transcript inside.
	if looksHTML(data) {
		if data, err = fromHTML(data); err != nil {
			return t, err
		}
	}
	// A transcript's own structure is a few levels deep and its values at
	// most scenario.MaxValueDepth; deeper input is not one leaserace wrote,
	// and writing it back out would grow with the square of its depth.
	if err := scenario.CheckDepth(data, maxDepth); err != nil {
		return t, fmt.Errorf("%w: it %w (its values may nest at most %d)", ErrNotTranscript, err, scenario.MaxValueDepth)
	}
	// v1 and v2 called the fence "epoch": read them in v3's keys.
	if f := formatOf(data); oldFormat(f) {
		if data, err = renameKeys(data, true); err != nil {
			return t, fmt.Errorf("%w: a %s transcript %w", ErrNotTranscript, version(f), err)
		}
	}
	// v1 called the presenter's log "session".
	var wire struct {
		Transcript
		Session []PresenterEntry `json:"session,omitempty"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&wire); err != nil {
		return t, fmt.Errorf("%w: %w", ErrNotTranscript, scenario.JSONShape(err, "want the JSON object leaserace writes"))
	}
	if _, err := dec.Token(); err != io.EOF {
		return t, fmt.Errorf("%w: unexpected data after the transcript's JSON object", ErrNotTranscript)
	}
	t = wire.Transcript
	switch t.Format {
	case FormatV1:
		if len(wire.Session) > 0 {
			t.Presenter = wire.Session
		}
	case FormatV2, FormatV3:
		if len(wire.Session) > 0 {
			return t, fmt.Errorf("%w: a %s transcript keeps the presenter's log under \"presenter\", not \"session\"", ErrNotTranscript, version(t.Format))
		}
		if got := MovesOf(t.Steps); t.Moves != got {
			return t, fmt.Errorf("%w: its moves %q do not match its steps (%q)", ErrNotTranscript, clipText(t.Moves), clipText(got))
		}
	default:
		return t, fmt.Errorf("transcript format %q: this leaserace reads %s, %s and %s", t.Format, FormatV3, FormatV2, FormatV1)
	}
	return t, nil
}

// version is a format's short name: "v2" for FormatV2.
func version(format string) string {
	_, v, _ := strings.Cut(format, "/")
	return v
}

// Upgraded is the transcript in this release's format: a v1 transcript
// gets its moves, each effect its judgement, and the outcome the verdict
// the contract gives today (a v1 file says safe where a valid write was
// blocked); a v2 transcript differs only in its keys. Its digest is
// recomputed; a v3 transcript comes back as is.
func (t Transcript) Upgraded() (Transcript, error) {
	switch t.Format {
	case FormatV3:
		return t, nil
	case FormatV2:
		u := t
		u.Format = FormatV3
		return u, u.Seal()
	}
	u := t
	u.Format = FormatV3
	u.Steps = make([]Step, len(t.Steps))
	for i, s := range t.Steps {
		s.Resource.Effects = append([]scenario.Effect(nil), s.Resource.Effects...)
		if s.Resource.Effects == nil {
			s.Resource.Effects = []scenario.Effect{}
		}
		scenario.Judge(t.Initial.Resource.Fence, s.Resource.Effects)
		if s.Action == scenario.ActionWrite && s.Fence == nil && len(s.Args) > 0 {
			// v1 kept a direct write's epoch only as its first argument.
			if e, err := strconv.ParseInt(fmt.Sprint(s.Args[0]), 10, 64); err == nil {
				s.Fence = &e
			}
		}
		u.Steps[i] = s
	}
	var last ResourceSnap
	last.Fence, last.Value = t.Initial.Resource.Fence, t.Initial.Resource.Value
	coord := t.Initial.Coordinator
	if n := len(u.Steps); n > 0 {
		last, coord = u.Steps[n-1].Resource, u.Steps[n-1].Coordinator
	}
	u.Outcome = OutcomeOf(coord, last, t.Initial.Resource.Fence)
	if err := u.Seal(); err != nil {
		return t, err
	}
	return u, nil
}

// AsV2 is a v3 transcript as v2 wrote it: the same content, with v2's
// keys in its digest and its JSON. Verify compares a live run with a v2
// file through it.
func (t Transcript) AsV2() (Transcript, error) {
	d := t
	d.Format = FormatV2
	return d, d.Seal()
}

// Downgraded is a v3 transcript as v1 wrote it: no moves, results,
// beliefs or judgements, and the old verdict (conflict or safe). Verify
// compares a live run with a v1 file through it.
func (t Transcript) Downgraded() Transcript {
	d := t
	d.Format, d.Moves = FormatV1, ""
	d.Steps = make([]Step, len(t.Steps))
	for i, s := range t.Steps {
		s.Result, s.Beliefs, s.Fence = "", nil, nil
		effects := make([]scenario.Effect, len(s.Resource.Effects))
		for j, e := range s.Resource.Effects {
			e.Judgement, e.Why = "", ""
			effects[j] = e
		}
		s.Resource.Effects = effects
		d.Steps[i] = s
	}
	d.Outcome.Blocked = 0
	if d.Outcome.Verdict == scenario.VerdictBlocked {
		d.Outcome.Verdict = scenario.VerdictSafe
	}
	d.Digest = ""
	if dg, err := d.ComputeDigest(); err == nil {
		d.Digest = dg
	}
	return d
}

func clipText(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return strings.TrimSpace(s)
}

// Reworded is the transcript with every string in it that holds words an
// earlier release wrote otherwise (scenario.Renamed) written with today's:
// values, arguments, narration and reasons alike. It reads a file recorded
// before a release renamed what a learner sees, so that a live run can be
// compared with it. Its digest field is the file's still; the content's
// digest is for the caller to compute anew. The words are matched in the
// file's JSON text, so they must not hold characters JSON escapes.
func (t Transcript) Reworded(rs []scenario.Renaming) (Transcript, error) {
	data, err := json.Marshal(t)
	if err != nil {
		return t, fmt.Errorf("cannot reword the transcript: %w", err)
	}
	for _, r := range rs {
		data = r.Was.ReplaceAll(data, []byte(r.Now))
	}
	out, err := Read(bytes.NewReader(data))
	if err != nil {
		return t, fmt.Errorf("the reworded transcript does not read back: %w", err)
	}
	return out, nil
}
