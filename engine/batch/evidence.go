package batch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/transcript"

	"github.com/leaserace/leaserace/scenario"
)

// Names of the evidence bundle's own files.
const (
	SummaryFile  = "SUMMARY.txt"
	ManifestFile = "MANIFEST.sha256"
)

// Summary is the first seed's three numbers, counted from runs of
// renewal-race: effects with a blind heartbeat and no fencing (unsafe), with
// compare-and-renew and no fencing, and with a blind heartbeat corrupting
// the coordinator but monotonic fencing at the resource.
type Summary struct {
	Unsafe  int `json:"unsafe"`
	Compare int `json:"compare"`
	Fenced  int `json:"fenced"`
}

// summaryScenario is the scenario whose runs the summary counts.
const summaryScenario = "renewal-race"

// String is the summary in the first seed's words.
func (s Summary) String() string {
	return fmt.Sprintf("Unsafe effects: %d. Compare-and-renew effects: %d. Resource-fenced effects after coordinator corruption: %d.",
		s.Unsafe, s.Compare, s.Fenced)
}

// SummaryOf counts the summary from transcripts; it needs renewal-race
// under blind/off, compare/off and blind/monotonic among them.
func SummaryOf(ts []transcript.Transcript) (Summary, error) {
	effects := func(r scenario.Renewal, f scenario.Fencing) (int, error) {
		k := scenario.Knobs{Renewal: r, Fencing: f}
		for _, t := range ts {
			if t.Scenario == summaryScenario && t.Knobs == k {
				return t.Outcome.Effects, nil
			}
		}
		return 0, fmt.Errorf("no run of %s with %s to count the summary from", summaryScenario, k)
	}
	var s Summary
	var err error
	if s.Unsafe, err = effects(scenario.RenewalBlind, scenario.FencingOff); err != nil {
		return s, err
	}
	if s.Compare, err = effects(scenario.RenewalCompare, scenario.FencingOff); err != nil {
		return s, err
	}
	s.Fenced, err = effects(scenario.RenewalBlind, scenario.FencingMonotonic)
	return s, err
}

// EvidenceConfig says where the evidence runs and how its transcripts are
// labelled.
type EvidenceConfig struct {
	// DSN reaches the PostgreSQL server. It may hold a password.
	DSN           string
	Provider      string
	ServerVersion string
	// Leaserace is the version that made the bundle.
	Leaserace string
}

// EvidenceFile is one file of an evidence bundle.
type EvidenceFile struct {
	Name string
	Data []byte
}

// SHA256 is the file's hash in hex, as sha256sum prints it.
func (f EvidenceFile) SHA256() string {
	sum := sha256.Sum256(f.Data)
	return hex.EncodeToString(sum[:])
}

// Evidence is a bundle anyone can check: every built-in scenario under every
// knob setting as JSON, Markdown and Mermaid, the summary, and a manifest.
type Evidence struct {
	Transcripts []transcript.Transcript
	Summary     Summary
	// Files are in the order to write them; the manifest comes last, so a
	// bundle with a manifest is complete.
	Files []EvidenceFile
}

// BuildEvidence runs every built-in scenario under every knob setting live
// and renders the bundle in memory; nothing is written until it is whole.
func BuildEvidence(ctx context.Context, cfg EvidenceConfig) (Evidence, error) {
	scs, err := scenario.Builtins()
	if err != nil {
		return Evidence{}, err
	}
	recs, err := RecordScenarios(ctx, cfg, scs)
	if err != nil {
		return Evidence{}, err
	}
	return EvidenceOf(Transcripts(recs))
}

// EvidenceOf renders the bundle from transcripts already played: every
// transcript as JSON, Markdown and Mermaid, the summary and the manifest.
func EvidenceOf(ts []transcript.Transcript) (Evidence, error) {
	ev := Evidence{Transcripts: ts}
	var err error
	if ev.Summary, err = SummaryOf(ev.Transcripts); err != nil {
		return ev, err
	}
	for _, t := range ev.Transcripts {
		for _, f := range transcript.Formats() {
			data, err := transcript.Render(t, f)
			if err != nil {
				return ev, fmt.Errorf("cannot render %s (%s) as %s: %w", t.Scenario, t.Knobs, f, err)
			}
			ev.Files = append(ev.Files, EvidenceFile{Name: transcript.Name(t.Scenario, t.Knobs) + transcript.Ext(f), Data: data})
		}
	}
	ev.Files = append(ev.Files, EvidenceFile{Name: SummaryFile, Data: []byte(ev.Summary.String() + "\n")})
	ev.Files = append(ev.Files, EvidenceFile{Name: ManifestFile, Data: Manifest(ev.Files)})
	return ev, nil
}

// Recording is one scenario played under every knob setting.
type Recording struct {
	Scenario *scenario.Scenario
	// Transcripts are in scenario.AllKnobs order.
	Transcripts []transcript.Transcript
}

// Transcripts lists every recording's transcripts, in order.
func Transcripts(recs []Recording) []transcript.Transcript {
	var out []transcript.Transcript
	for _, r := range recs {
		out = append(out, r.Transcripts...)
	}
	return out
}

// RecordScenarios plays each scenario under every knob setting once, all
// on one host (one pool and one resource service): each scenario in a run
// of its own, side by side. Check and evidence both read the result, so
// neither plays a run the other already played.
func RecordScenarios(ctx context.Context, cfg EvidenceConfig, scs []*scenario.Scenario) (_ []Recording, err error) {
	// As many connections as a run of its own per scenario would have.
	host, err := engine.OpenHost(ctx, engine.HostConfig{DSN: cfg.DSN, MaxConns: int32(2 * max(1, len(scs)))})
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engine.CloseTimeout)
		defer cancel()
		if cerr := host.Close(cctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	recs := make([]Recording, len(scs))
	errs := make([]error, len(scs))
	var wg sync.WaitGroup
	for i, sc := range scs {
		wg.Go(func() {
			defer engine.CatchPanic(&errs[i])
			recs[i].Scenario = sc
			recs[i].Transcripts, errs[i] = record(ctx, cfg, host, sc)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return recs, nil
}

// RecordAll plays a scenario under every knob setting on one run,
// resetting between settings, and returns a transcript of each.
func RecordAll(ctx context.Context, cfg EvidenceConfig, sc *scenario.Scenario) ([]transcript.Transcript, error) {
	return record(ctx, cfg, nil, sc)
}

// record is RecordAll on host (nil: the run makes a host of its own).
func record(ctx context.Context, cfg EvidenceConfig, host *engine.Host, sc *scenario.Scenario) ([]transcript.Transcript, error) {
	all := scenario.AllKnobs()
	run, err := engine.Open(ctx, engine.Config{DSN: cfg.DSN, Host: host, Scenario: sc, Knobs: all[0], Provider: cfg.Provider, ServerVersion: cfg.ServerVersion})
	if err != nil {
		return nil, fmt.Errorf("cannot start the runs of %s: %w", sc.Name, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engine.CloseTimeout)
		defer cancel()
		_ = run.Close(cctx)
	}()
	var out []transcript.Transcript
	for i, k := range all {
		// Open already reset the run with the first setting.
		if i > 0 {
			if _, err := run.SetKnobs(ctx, k); err != nil {
				return nil, fmt.Errorf("%s (%s): %w", sc.Name, k, err)
			}
		}
		if err := run.PlayAll(ctx); err != nil {
			return nil, fmt.Errorf("%s (%s) stopped: %w", sc.Name, k, err)
		}
		t, err := run.Transcript()
		if err != nil {
			return nil, err
		}
		if t.Meta != nil {
			t.Meta.Leaserace = cfg.Leaserace
		}
		out = append(out, t)
	}
	return out, nil
}

// Manifest lists each file's sha256 in sha256sum's format, sorted by
// name, so `sha256sum -c MANIFEST.sha256` checks a bundle.
func Manifest(files []EvidenceFile) []byte {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b EvidenceFile) int { return strings.Compare(a.Name, b.Name) })
	var b bytes.Buffer
	for _, f := range sorted {
		if f.Name == ManifestFile {
			continue
		}
		fmt.Fprintf(&b, "%s  %s\n", f.SHA256(), f.Name)
	}
	return b.Bytes()
}
