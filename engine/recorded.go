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

	"github.com/leaserace/leaserace/assets"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// Recording is a transcript a replay can show and where it was read from;
// the type is transcript's, so that the renderer can hold one without the
// engine.
type Recording = transcript.Recording

// OriginShipped is the Origin of the transcripts embedded in leaserace
// (assets/transcripts).
const OriginShipped = transcript.OriginShipped

// recorded is a replay's backend: the steps PostgreSQL and the resource
// produced when the transcripts were recorded, one recording per knob
// setting, and no database at all.
type recorded struct {
	recs []Recording
	// cur is the recording on show (in its v2 reading); next is the index
	// of its next step.
	cur  int
	up   []transcript.Transcript
	next int
}

// NewReplay builds a Run that shows recordings of one scenario with the
// same times and different knobs, from the first one's start. v1
// transcripts are shown in their v2 reading.
func NewReplay(recs ...Recording) (*Run, error) {
	if len(recs) == 0 {
		return nil, errors.New("nothing to replay: no recorded transcript was given")
	}
	b := &recorded{}
	first := recs[0].Transcript
	for _, rec := range recs {
		t := rec.Transcript
		if t.Scenario != first.Scenario {
			return nil, fmt.Errorf("cannot replay %s and %s together: one replay shows one scenario", first.Scenario, t.Scenario)
		}
		if !maps.Equal(t.Times, first.Times) {
			return nil, fmt.Errorf("the recordings of %s were made with different times (%v and %v); replay them one at a time", t.Scenario, first.Times, t.Times)
		}
		if err := t.Knobs.Check(); err != nil {
			return nil, fmt.Errorf("%s: %w", rec.Origin, err)
		}
		if b.find(t.Knobs) >= 0 {
			return nil, fmt.Errorf("two recordings of %s with %s: keep one", t.Scenario, t.Knobs)
		}
		up, err := t.Upgraded()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rec.Origin, err)
		}
		b.recs = append(b.recs, rec)
		b.up = append(b.up, up)
	}
	r := &Run{be: b, sc: replayScenario(b.up[0]), knobs: first.Knobs}
	if err := r.reset(context.Background()); err != nil {
		return nil, err
	}
	return r, nil
}

func (b *recorded) find(k scenario.Knobs) int {
	return slices.IndexFunc(b.recs, func(r Recording) bool { return r.Transcript.Knobs == k })
}

func (b *recorded) reset(_ context.Context, _ *scenario.Scenario, k scenario.Knobs) ([]scenario.Move, error) {
	i := b.find(k)
	if i < 0 {
		have := make([]string, len(b.recs))
		for j, rec := range b.recs {
			have[j] = rec.Transcript.Knobs.String()
		}
		return nil, fmt.Errorf("no recorded run of %s with %s to switch to: this replay holds %s only",
			b.recs[0].Transcript.Scenario, k, strings.Join(have, ", "))
	}
	b.cur, b.next = i, 0
	steps := b.up[i].Steps
	log := make([]scenario.Move, len(steps))
	for j, st := range steps {
		log[j] = st.Move()
	}
	return log, nil
}

func (b *recorded) apply(_ context.Context, mv scenario.Move) (transcript.Step, error) {
	steps := b.up[b.cur].Steps
	if b.next >= len(steps) || !steps[b.next].Move().Same(mv) {
		return transcript.Step{}, fmt.Errorf("%w: it has no move %s here", ErrRecorded, mv)
	}
	st := steps[b.next]
	b.next++
	return st, nil
}

func (b *recorded) reconnect(context.Context, *scenario.Scenario, scenario.Knobs) error { return nil }
func (b *recorded) close(context.Context) error                                         { return nil }
func (b *recorded) settle() error                                                       { return nil }
func (b *recorded) schema() string                                                      { return "" }

// meta is the recording's own: the rows were produced there and then.
func (b *recorded) meta() *transcript.Meta {
	if m := b.recs[b.cur].Transcript.Meta; m != nil {
		c := *m
		return &c
	}
	return nil
}

// Recording is the recording on show; ok is false for a live run.
func (r *Run) Recording() (Recording, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.be.(*recorded)
	if !ok {
		return Recording{}, false
	}
	return b.recs[b.cur], true
}

// Recordings lists every recording a replay holds, the first one given
// first; nil for a live run.
func (r *Run) Recordings() []Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.be.(*recorded); ok {
		return slices.Clone(b.recs)
	}
	return nil
}

// replayScenario is the scenario a transcript's steps are shown against:
// the one it was recorded from when it can still be found, else one
// rebuilt from the transcript itself (a scenario file that moved or
// changed must not stop a replay).
func replayScenario(t transcript.Transcript) *scenario.Scenario {
	if sc, err := ScenarioOf(t); err == nil {
		return sc
	}
	return rebuiltScenario(t)
}

// rebuiltScenario makes a scenario from the recorded steps alone: one
// event per step, the window from the first step to the last.
func rebuiltScenario(t transcript.Transcript) *scenario.Scenario {
	sc := &scenario.Scenario{
		Name:  t.Scenario,
		Title: "recorded steps",
		Description: "A recorded run of " + t.Scenario + ". Its scenario could not be found as it was recorded, " +
			"so the timeline shows the recorded moves only.",
		Lease:    "lease",
		Times:    t.Times,
		Initial:  t.Initial.Coordinator.Clone(),
		Resource: t.Initial.Resource,
	}
	if t.Meta != nil {
		sc.Source = t.Meta.Source
	}
	for i, st := range t.Steps {
		sc.Events = append(sc.Events, scenario.Event{T: st.T, Actor: st.Actor, Action: st.Action, Heartbeat: st.Heartbeat, Fence: st.Fence, Index: i})
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

// ScenarioOf finds the scenario a transcript was recorded from: the
// built-in of its name, or the file Meta.Source names (relative paths are
// taken from the current directory, as they were when it was recorded),
// with the transcript's times applied.
func ScenarioOf(t transcript.Transcript) (*scenario.Scenario, error) {
	src := ""
	if t.Meta != nil {
		src = t.Meta.Source
	}
	var sc *scenario.Scenario
	var err error
	if src == "" || src == "builtin" {
		sc, err = scenario.Builtin(t.Scenario)
	} else {
		sc, err = scenario.LoadFile(src)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot find the scenario the transcript was recorded from: %w", err)
	}
	if sc.Name != t.Scenario {
		return nil, fmt.Errorf("the transcript is of scenario %q, but %s now holds scenario %q", t.Scenario, src, sc.Name)
	}
	if len(t.Times) > 0 {
		if sc, err = sc.WithTimes(t.Times); err != nil {
			return nil, fmt.Errorf("cannot apply the transcript's times: %w", err)
		}
	}
	return sc, nil
}

// ShippedTranscript reads the transcript leaserace ships for a built-in
// scenario under knobs k.
func ShippedTranscript(scenarioName string, k scenario.Knobs) (transcript.Transcript, error) {
	name := path.Join("transcripts", transcript.Name(scenarioName, k)+".json")
	data, err := fs.ReadFile(assets.FS, name)
	if err != nil {
		return transcript.Transcript{}, fmt.Errorf("leaserace ships no recorded run of %s with %s: %w", scenarioName, k, err)
	}
	t, err := transcript.Read(bytes.NewReader(data))
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
func ShippedReplay(scenarioName string, k scenario.Knobs) (*Run, error) {
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
