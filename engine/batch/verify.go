package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/resource"
	"github.com/leaserace/leaserace/engine/transcript"

	"github.com/leaserace/leaserace/scenario"
)

// VerifyResult is what a live re-run made of a recorded transcript.
type VerifyResult struct {
	Scenario string         `json:"scenario"`
	Knobs    scenario.Knobs `json:"knobs"`
	// Recorded is the digest the file states, Content the digest of what the
	// file actually holds and Live the digest of the run just made. A file
	// whose Content differs from Recorded was edited after it was written.
	Recorded string `json:"recorded"`
	Content  string `json:"content"`
	Live     string `json:"live"`
	// Identical is true when all three digests agree (for a v1 file: when
	// its own digest holds and every step's facts agree).
	Identical bool `json:"identical"`
	// Format is the file's transcript format.
	Format        string `json:"format"`
	RecordedSteps int    `json:"recorded_steps"`
	LiveSteps     int    `json:"live_steps"`
	// Events is how many events the scenario has; a transcript exported
	// mid-run holds fewer steps, and the live run stops where it stopped.
	Events int `json:"events"`
	// Diff is the first step where the file and the live run differ, nil
	// when every step agrees.
	Diff *StepDiff `json:"diff,omitempty"`
	// Parts names what else differs when every step agrees ("outcome").
	Parts []string `json:"parts,omitempty"`
	// Reworded is set when the file, recorded before this release renamed
	// the resource's columns (resource.Renamed) or words of the built-in
	// scenarios (scenario.Renamed), matches the live run once read with
	// today's words.
	Reworded bool `json:"reworded,omitempty"`
}

// Tampered reports whether the file's content no longer matches its own digest.
func (r VerifyResult) Tampered() bool { return r.Content != r.Recorded }

// StepDiff is one step as recorded and as run live, field by field.
type StepDiff struct {
	// Index counts from 0; people see Index+1.
	Index  int             `json:"index"`
	T      int64           `json:"t"`
	Actor  string          `json:"actor"`
	Action scenario.Action `json:"action"`
	Fields []FieldDiff     `json:"fields"`
}

// FieldDiff is one field of a step on both sides.
type FieldDiff struct {
	Name     string `json:"name"`
	Recorded string `json:"recorded"`
	Live     string `json:"live"`
	Differs  bool   `json:"differs"`
}

// noStep stands in for the side that has no step at an index.
const noStep = "(no such step)"

// Verify plays a transcript's own moves again, live on the server at dsn
// under its knobs, and compares the live run with the file: digest for
// digest, and when they differ, step by step to find the first difference.
// It also recomputes the file's own digest, so an edited file is caught
// even when its digest line still matches a live run.
//
// A v1 transcript (an earlier release's) is compared by its facts: every
// statement, argument, tag, row, call, state and message of every step,
// but not the narration, which this release words anew, nor the verdict,
// whose rule now also names a blocked holder.
func Verify(ctx context.Context, dsn string, t transcript.Transcript) (VerifyResult, error) {
	return verify(ctx, engine.Config{DSN: dsn}, t)
}

// VerifyOn is Verify with the live run on a host shared with other runs:
// verifying many files on one host connects once instead of once a file.
func VerifyOn(ctx context.Context, h *engine.Host, t transcript.Transcript) (VerifyResult, error) {
	return verify(ctx, engine.Config{Host: h}, t)
}

// verify is Verify with the run's DSN or host in on.
func verify(ctx context.Context, on engine.Config, t transcript.Transcript) (VerifyResult, error) {
	res := VerifyResult{Scenario: t.Scenario, Knobs: t.Knobs, Recorded: t.Digest, RecordedSteps: len(t.Steps), Format: t.Format}
	content, err := t.ComputeDigest()
	if err != nil {
		return res, err
	}
	res.Content = content
	sc, err := engine.ScenarioOf(t)
	if err != nil {
		return res, err
	}
	// A file recorded before this release renamed what it shows is read
	// with today's words: the resource's statements in any file, and the
	// built-in scenarios' words in theirs. A file without the old words
	// reads as it is.
	renamed := resource.Renamed()
	if t.Meta == nil || t.Meta.Source == "" || t.Meta.Source == "builtin" {
		renamed = append(renamed, scenario.Renamed()...)
	}
	read, err := t.Reworded(renamed)
	if err != nil {
		return res, err
	}
	up, err := read.Upgraded()
	if err != nil {
		return res, err
	}
	log := make([]scenario.Move, len(up.Steps))
	for i, st := range up.Steps {
		log[i] = st.Move()
	}
	on.Scenario, on.Knobs, on.Log = sc, t.Knobs, log
	run, err := engine.Open(ctx, on)
	if err != nil {
		return res, fmt.Errorf("cannot start the live run of %s (%s): %w", t.Scenario, t.Knobs, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engine.CloseTimeout)
		defer cancel()
		_ = run.Close(cctx)
	}()
	res.Events = len(sc.Events)
	if err := run.PlayAll(ctx); err != nil {
		return res, fmt.Errorf("the live run of %s (%s) stopped: %w", t.Scenario, t.Knobs, err)
	}
	live, err := run.Transcript()
	if err != nil {
		return res, err
	}
	res.LiveSteps = len(live.Steps)
	facts := t.Format == transcript.FormatV1
	switch t.Format {
	case transcript.FormatV1:
		live = live.Downgraded()
	case transcript.FormatV2:
		// The same run as v2 wrote it, so that its digest is comparable.
		if live, err = live.AsV2(); err != nil {
			return res, err
		}
	}
	res.Live = live.Digest
	res.Diff = firstStepDiff(read.Steps, live.Steps, facts)
	if facts {
		res.Identical = res.Recorded == res.Content && res.Diff == nil
		return res, nil
	}
	res.Identical = res.Recorded == res.Content && res.Content == res.Live
	if !res.Identical && res.Recorded == res.Content {
		// The file is as it was written: read with today's words, is it
		// the live run?
		if rc, err := read.ComputeDigest(); err == nil && rc == res.Live {
			res.Identical, res.Reworded = true, true
		}
	}
	if !res.Identical && res.Content != res.Live && res.Diff == nil {
		res.Parts = differingParts(read, live)
	}
	return res, nil
}

// stepField is one field of a transcript.Step: its raw value, compared as JSON, and
// how a person reads it.
type stepField struct {
	name string
	raw  func(transcript.Step) any
	show func(transcript.Step) string
}

func stepFields() []stepField {
	return []stepField{
		{"t", func(s transcript.Step) any { return s.T }, func(s transcript.Step) string { return strconv.FormatInt(s.T, 10) }},
		{"actor", func(s transcript.Step) any { return s.Actor }, func(s transcript.Step) string { return s.Actor }},
		{"action", func(s transcript.Step) any { return s.Action }, func(s transcript.Step) string { return string(s.Action) }},
		{"heartbeat", func(s transcript.Step) any { return s.Heartbeat }, func(s transcript.Step) string { return s.Heartbeat }},
		{"sql", func(s transcript.Step) any { return s.SQL }, func(s transcript.Step) string { return strings.Join(strings.Fields(s.SQL), " ") }},
		{"args", func(s transcript.Step) any { return s.Args }, func(s transcript.Step) string { return compactJSON(s.Args) }},
		{"tag", func(s transcript.Step) any { return s.Tag }, func(s transcript.Step) string { return s.Tag }},
		{"rows", func(s transcript.Step) any { return s.Rows }, func(s transcript.Step) string { return strconv.FormatInt(s.Rows, 10) }},
		{"call", func(s transcript.Step) any { return s.Call }, func(s transcript.Step) string { return callWords(s.Call) }},
		{"coordinator", func(s transcript.Step) any { return s.Coordinator }, func(s transcript.Step) string { return leaseOrNone(s.Coordinator) }},
		{"resource", func(s transcript.Step) any { return []any{s.Resource.Fence, s.Resource.Value} }, func(s transcript.Step) string {
			return fmt.Sprintf("stored fence %d, value %s", s.Resource.Fence, transcript.ValueWords(s.Resource.Value))
		}},
		{"effects", func(s transcript.Step) any { return s.Resource.Effects }, func(s transcript.Step) string { return effectsList(s.Resource.Effects) }},
		{"in_flight", func(s transcript.Step) any { return s.InFlight }, func(s transcript.Step) string { return flightList(s.InFlight) }},
		{"note", func(s transcript.Step) any { return s.Note }, func(s transcript.Step) string { return s.Note }},
	}
}

// firstStepDiff compares the steps in order and describes the first pair
// that differs, or a step only one side has.
//
// With factsOnly, the narration does not count.
func firstStepDiff(rec, live []transcript.Step, factsOnly bool) *StepDiff {
	for i := 0; i < max(len(rec), len(live)); i++ {
		var r, l *transcript.Step
		if i < len(rec) {
			r = &rec[i]
		}
		if i < len(live) {
			l = &live[i]
		}
		if r != nil && l != nil && sameStep(*r, *l, factsOnly) {
			continue
		}
		head := r
		if head == nil {
			head = l
		}
		d := &StepDiff{Index: i, T: head.T, Actor: head.Actor, Action: head.Action}
		for _, f := range stepFields() {
			fd := FieldDiff{Name: f.name, Recorded: noStep, Live: noStep}
			if r != nil {
				fd.Recorded = f.show(*r)
			}
			if l != nil {
				fd.Live = f.show(*l)
			}
			switch {
			case r == nil || l == nil:
				fd.Differs = true
			case factsOnly && f.name == "note":
			case compactJSON(f.raw(*r)) != compactJSON(f.raw(*l)):
				fd.Differs = true
				if fd.Recorded == fd.Live {
					// The words hide the difference (an effect's reason,
					// say): show the JSON itself.
					fd.Recorded, fd.Live = compactJSON(f.raw(*r)), compactJSON(f.raw(*l))
				}
			}
			d.Fields = append(d.Fields, fd)
		}
		return d
	}
	return nil
}

// sameStep compares two steps as the digest would, or by their facts.
func sameStep(a, b transcript.Step, factsOnly bool) bool {
	if factsOnly {
		a.Note, b.Note = "", ""
	}
	return compactJSON(a) == compactJSON(b)
}

// differingParts names the parts of two transcripts outside the steps that
// differ.
func differingParts(a, b transcript.Transcript) []string {
	var out []string
	for _, p := range []struct {
		name string
		a, b any
	}{
		{"format", a.Format, b.Format},
		{"scenario", a.Scenario, b.Scenario},
		{"knobs", a.Knobs, b.Knobs},
		{"times", a.Times, b.Times},
		{"initial", a.Initial, b.Initial},
		{"outcome", a.Outcome, b.Outcome},
	} {
		if compactJSON(p.a) != compactJSON(p.b) {
			out = append(out, p.name)
		}
	}
	return out
}

// compactJSON is v as the digest sees it; numbers read with UseNumber and
// numbers from a live run come out alike.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("(cannot encode: %v)", err)
	}
	return string(b)
}

func leaseOrNone(l *scenario.Lease) string {
	if l == nil {
		return "(no lease row)"
	}
	return l.String()
}

func callWords(c *transcript.Call) string {
	if c == nil {
		return "(no call)"
	}
	s := fmt.Sprintf("%s %s → %d", c.Method, c.Path, c.Status)
	if c.Accepted {
		return s + " accepted"
	}
	if c.Reason != "" {
		return s + " refused: " + c.Reason
	}
	return s + " refused"
}

func effectsList(es []scenario.Effect) string {
	if len(es) == 0 {
		return "(none)"
	}
	parts := make([]string, len(es))
	for i, e := range es {
		verb := "accepted"
		if !e.Accepted {
			verb = "refused"
		}
		parts[i] = fmt.Sprintf("%s@%d %s", e.Actor, e.Fence, verb)
	}
	return strings.Join(parts, ", ")
}

func flightList(ms []transcript.Message) string {
	if len(ms) == 0 {
		return "(none)"
	}
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%s from %s due %d", m.ID, m.From, m.Due)
		if m.Stale {
			parts[i] += " stale (" + m.StaleReason + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// reportColumn is the widest a value may be in the side-by-side table;
// longer values are cut there and printed whole below it.
const reportColumn = 44

// WriteReport writes the result for a person: one line when identical,
// otherwise the digests and the first differing step with the recorded and
// live versions side by side.
func (r VerifyResult) WriteReport(w io.Writer) error {
	var b bytes.Buffer
	what := fmt.Sprintf("%s (renewal %s, fencing %s)", r.Scenario, r.Knobs.Renewal, r.Knobs.Fencing)
	if r.Identical {
		steps := fmt.Sprintf("%d steps", r.LiveSteps)
		if r.LiveSteps < r.Events {
			steps = fmt.Sprintf("%d of %d steps", r.LiveSteps, r.Events)
		}
		if r.Format == transcript.FormatV1 {
			fmt.Fprintf(&b, "identical: %s, %s, every fact reproduced by a live run (a v1 transcript: its narration and verdict are compared no more, as this release words and judges them anew)\n", what, steps)
		} else if r.Reworded {
			fmt.Fprintf(&b, "identical: %s, %s, reproduced by a live run (%s) once read with this release's words for what an earlier release, which recorded the file, named otherwise\n", what, steps, r.Live)
		} else {
			fmt.Fprintf(&b, "identical: %s, %s, %s, reproduced by a live run\n", what, steps, r.Live)
		}
		return writeAll(w, b.Bytes())
	}
	fmt.Fprintf(&b, "DIFFERS: %s\n", what)
	fmt.Fprintf(&b, "  digest written in the file   %s\n", r.Recorded)
	fmt.Fprintf(&b, "  digest of the file's content %s", r.Content)
	if r.Tampered() {
		b.WriteString("  ← does not match: the file was edited after it was recorded")
	}
	b.WriteByte('\n')
	if r.Format == transcript.FormatV1 {
		b.WriteString("  a v1 transcript: compared with a live run fact by fact, narration aside\n")
	} else {
		fmt.Fprintf(&b, "  digest of a live run         %s\n", r.Live)
	}
	switch {
	case r.Diff != nil:
		r.writeDiff(&b)
	case len(r.Parts) > 0:
		fmt.Fprintf(&b, "\nEvery step agrees; these parts differ: %s.\n", strings.Join(r.Parts, ", "))
	case r.Tampered():
		b.WriteString("\nThe file's content matches the live run; only the digest written in it was changed.\n")
	}
	return writeAll(w, b.Bytes())
}

func (r VerifyResult) writeDiff(b *bytes.Buffer) {
	d := r.Diff
	fmt.Fprintf(b, "\nfirst difference: step %d of %d (live run: %d), t=%d, %s %s\n\n",
		d.Index+1, r.RecordedSteps, r.LiveSteps, d.T, d.Actor, d.Action)
	nameW, recW := len("field"), len("recorded")
	for _, f := range d.Fields {
		nameW = max(nameW, len(f.Name))
		recW = max(recW, min(reportColumn, utf8.RuneCountInString(f.Recorded)))
	}
	row := func(mark, name, rec, live string) {
		fmt.Fprintf(b, "  %s %-*s  %s  %s\n", mark, nameW, name, pad(clip(rec), recW), clip(live))
	}
	row(" ", "field", "recorded", "live")
	var long []FieldDiff
	for _, f := range d.Fields {
		mark := " "
		if f.Differs {
			mark = "≠"
			if utf8.RuneCountInString(f.Recorded) > reportColumn || utf8.RuneCountInString(f.Live) > reportColumn {
				long = append(long, f)
			}
		}
		row(mark, f.Name, f.Recorded, f.Live)
	}
	for _, f := range long {
		fmt.Fprintf(b, "\n  %s, recorded:\n    %s\n  %s, live:\n    %s\n", f.Name, f.Recorded, f.Name, f.Live)
	}
}

func clip(s string) string {
	if utf8.RuneCountInString(s) <= reportColumn {
		return s
	}
	r := []rune(s)
	return string(r[:reportColumn-1]) + "…"
}

func pad(s string, w int) string {
	return s + strings.Repeat(" ", max(0, w-utf8.RuneCountInString(s)))
}

func writeAll(w io.Writer, b []byte) error {
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("cannot write the verify report: %w", err)
	}
	return nil
}
