package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/leaserace/leaserace/assets"
	"github.com/leaserace/leaserace/scenario"
)

// Recording is a transcript a Replay can show and where it was read from.
type Recording struct {
	Transcript Transcript
	// Origin names where the transcript came from, for a person: a file
	// path, or OriginShipped for the recordings inside leaserace.
	Origin string
}

// OriginShipped is the Origin of the transcripts embedded in leaserace
// (assets/transcripts).
const OriginShipped = "shipped"

// Replay steps through recorded transcripts of one scenario without any
// database: every step shows the rows, tags and effects PostgreSQL and the
// resource produced when the transcript was recorded. It may hold one
// recording per knob setting; SetKnobs switches between them at the same
// position, the way a live Run re-runs with the new knobs.
type Replay struct {
	mu   sync.Mutex
	recs []*recording
	cur  *recording
	pos  int
	now  int64
}

// recording is a Recording with the scenario its steps are shown against.
type recording struct {
	Recording
	sc *scenario.Scenario
}

// NewReplay builds a replay from recordings of one scenario with the same
// times and different knobs. The first one is shown first, at its start.
func NewReplay(recs ...Recording) (*Replay, error) {
	if len(recs) == 0 {
		return nil, errors.New("nothing to replay: no recorded transcript was given")
	}
	r := &Replay{}
	first := recs[0].Transcript
	for _, rec := range recs {
		t := rec.Transcript
		if t.Scenario != first.Scenario {
			return nil, fmt.Errorf("cannot replay %s and %s together: one replay shows one scenario", first.Scenario, t.Scenario)
		}
		if !maps.Equal(t.Times, first.Times) {
			return nil, fmt.Errorf("the recordings of %s were made with different times (%v and %v); replay them one at a time", t.Scenario, first.Times, t.Times)
		}
		if _, err := scenario.ParseRenewal(string(t.Knobs.Renewal)); err != nil {
			return nil, fmt.Errorf("%s: %w", rec.Origin, err)
		}
		if _, err := scenario.ParseFencing(string(t.Knobs.Fencing)); err != nil {
			return nil, fmt.Errorf("%s: %w", rec.Origin, err)
		}
		if r.find(t.Knobs) != nil {
			return nil, fmt.Errorf("two recordings of %s with %s: keep one", t.Scenario, t.Knobs)
		}
		r.recs = append(r.recs, &recording{Recording: rec, sc: replayScenario(t)})
	}
	r.cur = r.recs[0]
	r.now = startTime(r.cur.sc)
	return r, nil
}

func (r *Replay) find(k scenario.Knobs) *recording {
	for _, rec := range r.recs {
		if rec.Transcript.Knobs == k {
			return rec
		}
	}
	return nil
}

// replayScenario is the scenario a transcript's steps are shown against:
// the one it was recorded from when it can still be found and its events
// are the recorded steps, else one rebuilt from the steps themselves (a
// scenario file that moved or changed must not stop a replay). Either way
// it has exactly one event per recorded step, so a transcript exported
// mid-run ends where its recording ends.
func replayScenario(t Transcript) *scenario.Scenario {
	sc, err := ScenarioOf(t)
	if err != nil || !stepsMatch(sc, t) {
		return rebuiltScenario(t)
	}
	if len(sc.Events) > len(t.Steps) {
		c := *sc
		c.Events = slices.Clip(sc.Events[:len(t.Steps)])
		sc = &c
	}
	return sc
}

func stepsMatch(sc *scenario.Scenario, t Transcript) bool {
	if len(t.Steps) > len(sc.Events) {
		return false
	}
	a, b := sc.Initial, t.Initial.Coordinator
	if (a == nil) != (b == nil) || (a != nil && *a != *b) {
		return false
	}
	for i, st := range t.Steps {
		ev := sc.Events[i]
		if ev.T != st.T || ev.Actor != st.Actor || ev.Action != st.Action || ev.Heartbeat != st.Heartbeat {
			return false
		}
	}
	return true
}

// rebuiltScenario makes a scenario from the recorded steps alone: one
// event per step, the window from the first step to the last.
func rebuiltScenario(t Transcript) *scenario.Scenario {
	sc := &scenario.Scenario{
		Name:  t.Scenario,
		Title: "recorded steps",
		Description: "A recorded run of " + t.Scenario + ". Its scenario could not be found as it was recorded, " +
			"so the timeline shows the recorded events only.",
		Lease:    "lease",
		Times:    t.Times,
		Initial:  cloneLease(t.Initial.Coordinator),
		Resource: t.Initial.Resource,
	}
	if t.Meta != nil {
		sc.Source = t.Meta.Source
	}
	for i, st := range t.Steps {
		sc.Events = append(sc.Events, scenario.Event{T: st.T, Actor: st.Actor, Action: st.Action, Heartbeat: st.Heartbeat, Index: i})
		// The lease key is the first argument of every coordinator statement.
		if sc.Lease == "lease" && st.Call == nil && len(st.Args) > 0 {
			if k, ok := st.Args[0].(string); ok && k != "" {
				sc.Lease = k
			}
		}
	}
	if n := len(t.Steps); n > 0 {
		sc.Window = scenario.Window{From: t.Steps[0].T, To: t.Steps[n-1].T}
	}
	return sc
}

// ShippedTranscript reads the transcript leaserace ships for a built-in
// scenario under knobs k.
func ShippedTranscript(scenarioName string, k scenario.Knobs) (Transcript, error) {
	name := path.Join("transcripts", TranscriptName(scenarioName, k)+".json")
	data, err := fs.ReadFile(assets.FS, name)
	if err != nil {
		return Transcript{}, fmt.Errorf("leaserace ships no recorded run of %s with %s: %w", scenarioName, k, err)
	}
	t, err := ReadTranscript(bytes.NewReader(data))
	if err != nil {
		return t, fmt.Errorf("the shipped recording %s is damaged: %w", name, err)
	}
	return t, nil
}

// ShippedRecordings lists the recordings leaserace ships for a scenario,
// one per knob setting, in scenario.AllKnobs order.
func ShippedRecordings(scenarioName string) ([]Recording, error) {
	var out []Recording
	for _, k := range scenario.AllKnobs() {
		t, err := ShippedTranscript(scenarioName, k)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Recording{Transcript: t, Origin: OriginShipped})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("leaserace ships no recorded runs of scenario %s (recordings exist only for the built-in scenarios)", scenarioName)
	}
	return out, nil
}

// ShippedReplay is a replay of the shipped recordings of a built-in
// scenario, starting with knobs k.
func ShippedReplay(scenarioName string, k scenario.Knobs) (*Replay, error) {
	recs, err := ShippedRecordings(scenarioName)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(recs, func(r Recording) bool { return r.Transcript.Knobs == k })
	if i < 0 {
		return nil, fmt.Errorf("leaserace ships no recorded run of %s with %s", scenarioName, k)
	}
	// The one asked for goes first: NewReplay starts with it.
	recs[0], recs[i] = recs[i], recs[0]
	return NewReplay(recs...)
}

// Recording is the recording on show.
func (r *Replay) Recording() Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.Recording
}

// Recordings lists every recording the replay holds, the first one given
// first.
func (r *Replay) Recordings() []Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Recording, len(r.recs))
	for i, rec := range r.recs {
		out[i] = rec.Recording
	}
	return out
}

// Next shows the next recorded step; ErrEnd after the last.
func (r *Replay) Next(context.Context) (Step, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	steps := r.cur.Transcript.Steps
	if r.pos >= len(steps) {
		return Step{}, ErrEnd
	}
	st := steps[r.pos]
	r.pos++
	r.now = st.T
	return st, nil
}

// Seek moves to just after n recorded steps.
func (r *Replay) Seek(_ context.Context, n int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	evs := r.cur.sc.Events
	r.pos = max(0, min(n, len(evs)))
	r.now = startTime(r.cur.sc)
	if r.pos > 0 {
		r.now = evs[r.pos-1].T
	}
	return nil
}

// SeekTime moves the cursor to logical time t with every recorded step at
// or before t shown, as Run.SeekTime does.
func (r *Replay) SeekTime(_ context.Context, t int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t = max(startTime(r.cur.sc), t)
	evs := r.cur.sc.Events
	n := 0
	for n < len(evs) && evs[n].T <= t {
		n++
	}
	r.pos, r.now = n, t
	return nil
}

// SetKnobs switches to the recording made with k, at the same position.
// Without one it fails with an error naming what the replay holds.
func (r *Replay) SetKnobs(_ context.Context, k scenario.Knobs) (Change, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := scenario.ParseRenewal(string(k.Renewal)); err != nil {
		return Change{}, err
	}
	if _, err := scenario.ParseFencing(string(k.Fencing)); err != nil {
		return Change{}, err
	}
	ch := Change{From: r.cur.Transcript.Knobs, To: k, Before: r.outcome()}
	next := r.find(k)
	if next == nil {
		have := make([]string, len(r.recs))
		for i, rec := range r.recs {
			have[i] = rec.Transcript.Knobs.String()
		}
		return ch, fmt.Errorf("no recorded run of %s with %s to switch to: this replay holds %s only",
			r.cur.Transcript.Scenario, k, strings.Join(have, ", "))
	}
	r.cur = next
	if n := len(next.sc.Events); r.pos > n {
		// A recording that ends earlier: show its last step.
		r.pos, r.now = n, next.sc.Events[n-1].T
	}
	ch.After = r.outcome()
	ch.Lines = diffOutcomes(ch.Before, ch.After)
	return ch, nil
}

// View is the recorded state at the cursor. Heartbeats in flight are
// marked stale at the cursor's time, exactly as a live Run marks them.
func (r *Replay) View() View {
	r.mu.Lock()
	defer r.mu.Unlock()
	coord, res, flight := r.state()
	v := View{
		Now: r.now, Pos: r.pos, Coordinator: cloneLease(coord), Resource: cloneRes(res),
		InFlight: make([]Message, 0, len(flight)), Outcome: r.outcome(), Knobs: r.cur.Transcript.Knobs,
	}
	for _, m := range flight {
		m.StaleReason = staleReason(m, coord, r.now)
		m.Stale = m.StaleReason != ""
		v.InFlight = append(v.InFlight, m)
	}
	return v
}

// state is the coordinator, resource and network after the last step
// shown, or as the transcript started.
func (r *Replay) state() (*scenario.Lease, ResourceSnap, []Message) {
	t := r.cur.Transcript
	if r.pos == 0 {
		in := t.Initial
		return in.Coordinator, ResourceSnap{Epoch: in.Resource.Epoch, Value: in.Resource.Value, Effects: []Effect{}}, nil
	}
	st := t.Steps[r.pos-1]
	return st.Coordinator, st.Resource, st.InFlight
}

// outcome sums up the recorded state at the cursor the way Run does.
func (r *Replay) outcome() Outcome {
	coord, res, _ := r.state()
	return outcomeOf(coord, res, r.cur.Transcript.Initial.Resource.Epoch)
}

// Steps returns the recorded steps shown so far.
func (r *Replay) Steps() []Step {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.cur.Transcript.Steps[:r.pos])
}

// Transcript is the recording up to the cursor, with its digest. Meta is
// the recording's own: the rows were produced there and then, not now.
// At the last step it is the recorded transcript, digest for digest.
func (r *Replay) Transcript() (Transcript, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.cur.Transcript
	t := Transcript{
		Format:   TranscriptFormat,
		Scenario: rec.Scenario,
		Knobs:    rec.Knobs,
		Times:    rec.Times,
		Initial:  rec.Initial,
		Steps:    slices.Clone(rec.Steps[:r.pos]),
		Outcome:  r.outcome(),
	}
	if rec.Meta != nil {
		m := *rec.Meta
		t.Meta = &m
	}
	if t.Steps == nil {
		t.Steps = []Step{}
	}
	d, err := t.ComputeDigest()
	if err != nil {
		return t, err
	}
	t.Digest = d
	return t, nil
}

// Start is the earliest logical time of the recording on show.
func (r *Replay) Start() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return startTime(r.cur.sc)
}

// End is the latest logical time: the window's end or the last step.
func (r *Replay) End() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	sc := r.cur.sc
	end := sc.Window.To
	if n := len(sc.Events); n > 0 && sc.Events[n-1].T > end {
		end = sc.Events[n-1].T
	}
	return end
}

// Len is how many steps the recording on show holds.
func (r *Replay) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cur.sc.Events)
}

// Pos is how many recorded steps are shown.
func (r *Replay) Pos() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pos
}

// Now is the logical time of the cursor.
func (r *Replay) Now() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

// Scenario is the scenario the recording on show is shown against, with
// one event per recorded step.
func (r *Replay) Scenario() *scenario.Scenario {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.sc
}

// Schema is "": a replay has nothing on a server.
func (r *Replay) Schema() string { return "" }

// Knobs are the settings of the recording on show.
func (r *Replay) Knobs() scenario.Knobs {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.Transcript.Knobs
}

// Reconnect does nothing: a replay reads no server.
func (r *Replay) Reconnect(context.Context) error { return nil }

// Close does nothing: a replay holds nothing open.
func (r *Replay) Close(context.Context) error { return nil }
