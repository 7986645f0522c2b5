package batch

import (
	"context"
	"fmt"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/resource"
	"github.com/leaserace/leaserace/engine/transcript"

	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/scenario/fixtures"
)

// CheckRow is one scenario under one knob setting, against its expectation.
type CheckRow struct {
	Scenario string             `json:"scenario"`
	Knobs    scenario.Knobs     `json:"knobs"`
	Outcome  transcript.Outcome `json:"outcome"`
	Expected string             `json:"expected"`
	Passed   bool               `json:"passed"`
	// Mismatch says what differs, empty when passed.
	Mismatch []string `json:"mismatch,omitempty"`
	Digest   string   `json:"digest"`
}

// CheckScenario plays a scenario under every knob setting on one run,
// re-running it from the start for each, and compares each outcome with the
// scenario's expectation.
func CheckScenario(ctx context.Context, dsn string, sc *scenario.Scenario) ([]CheckRow, error) {
	ts, err := RecordAll(ctx, EvidenceConfig{DSN: dsn}, sc)
	if err != nil {
		return nil, err
	}
	return CheckRows(Recording{Scenario: sc, Transcripts: ts}), nil
}

// CheckRows compares each recorded outcome with what the scenario expects
// for its knobs; it plays nothing, so a check and an evidence bundle can
// share one set of runs.
func CheckRows(rec Recording) []CheckRow {
	rows := make([]CheckRow, 0, len(rec.Transcripts))
	for _, tr := range rec.Transcripts {
		ex, ok := rec.Scenario.ExpectationFor(tr.Knobs)
		row := CheckRow{Scenario: rec.Scenario.Name, Knobs: tr.Knobs, Outcome: tr.Outcome, Digest: tr.Digest}
		if !ok {
			row.Mismatch = []string{"the scenario declares no expectation for this setting"}
		} else {
			row.Expected = DescribeExpectation(ex)
			row.Mismatch = Compare(ex, tr.Outcome)
		}
		row.Passed = len(row.Mismatch) == 0
		rows = append(rows, row)
	}
	return rows
}

// DescribeExpectation is the expectation in the table's words.
func DescribeExpectation(ex scenario.Expectation) string {
	s := fmt.Sprintf("%d effects, %s", ex.Effects, ex.Verdict)
	if c := ex.Coordinator; c != nil {
		s += fmt.Sprintf(", %s/fence %d/lease_version %d/exp %d", c.Owner, c.Fence, c.LeaseVersion, c.ExpiresAt)
	}
	if r := ex.Resource; r != nil {
		s += fmt.Sprintf(", stored fence %d", r.Fence)
	}
	return s
}

// Compare lists how an outcome differs from an expectation.
func Compare(ex scenario.Expectation, o transcript.Outcome) []string {
	var out []string
	if o.Effects != ex.Effects {
		out = append(out, fmt.Sprintf("effects: got %d, want %d", o.Effects, ex.Effects))
	}
	if o.Verdict != ex.Verdict {
		out = append(out, fmt.Sprintf("verdict: got %s, want %s", o.Verdict, ex.Verdict))
	}
	if ex.Coordinator != nil {
		switch {
		case o.Coordinator == nil:
			out = append(out, "coordinator: got no lease row")
		case *o.Coordinator != *ex.Coordinator:
			out = append(out, fmt.Sprintf("coordinator: got %s, want %s", o.Coordinator.String(), ex.Coordinator.String()))
		}
	}
	if ex.Resource != nil {
		if o.Resource.Fence != ex.Resource.Fence {
			out = append(out, fmt.Sprintf("stored fence: got %d, want %d", o.Resource.Fence, ex.Resource.Fence))
		}
		if ex.Resource.Value != nil && !scenario.JSONEqual(o.Resource.Value, ex.Resource.Value) {
			out = append(out, fmt.Sprintf("resource value: got %s, want %s", o.Resource.Value, ex.Resource.Value))
		}
	}
	return out
}

// Observation is one fixture's result under one policy, in the case's form.
type Observation struct {
	Check    string         `json:"check"`
	Actual   fixtures.Write `json:"actual"`
	Expected fixtures.Write `json:"expected"`
	Passed   bool           `json:"passed"`
}

// PolicyReport is every fixture under one fencing policy.
type PolicyReport struct {
	Observations []Observation `json:"observations"`
	Passed       bool          `json:"passed"`
}

// CaseReport is the revoked-writer case under all three policies.
type CaseReport struct {
	Case     string                  `json:"case"`
	Variant  int64                   `json:"variant,omitempty"`
	Policies map[string]PolicyReport `json:"policies"`
}

// RunCase sends each fixture's writes, in arrival order, to a real resource
// under each fencing policy and reads back [epoch, value].
func RunCase(ctx context.Context, dsn string, cases []fixtures.Fixture) (CaseReport, error) {
	rep := CaseReport{Case: "revoked-writer", Policies: map[string]PolicyReport{}}
	res, err := resource.Start(ctx, resource.Config{DSN: dsn, AppName: "leaserace check"})
	if err != nil {
		return rep, fmt.Errorf("cannot start the resource: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engine.CloseTimeout)
		defer cancel()
		_ = res.Close(cctx)
	}()
	rc := resource.NewClient(res.URL(), nil)
	for _, f := range scenario.Fencings() {
		if err := rc.SetFencing(ctx, f); err != nil {
			return rep, err
		}
		pr := PolicyReport{Passed: true, Observations: []Observation{}}
		for _, fx := range cases {
			if _, err := rc.Reset(ctx, fx.Initial.Fence, fx.Initial.Value); err != nil {
				return rep, fmt.Errorf("fixture %q: %w", fx.Check, err)
			}
			for _, w := range fx.Writes {
				if _, err := rc.Write(ctx, "writer", w.Fence, w.Value); err != nil {
					return rep, fmt.Errorf("fixture %q: %w", fx.Check, err)
				}
			}
			v, err := rc.State(ctx)
			if err != nil {
				return rep, fmt.Errorf("fixture %q: %w", fx.Check, err)
			}
			actual := fixtures.Write{Fence: v.Fence, Value: v.Value}
			ok := actual.Fence == fx.Expected.Fence && scenario.JSONEqual(actual.Value, fx.Expected.Value)
			pr.Observations = append(pr.Observations, Observation{Check: fx.Check, Actual: actual, Expected: fx.Expected, Passed: ok})
			pr.Passed = pr.Passed && ok
		}
		rep.Policies[string(f)] = pr
	}
	return rep, nil
}
