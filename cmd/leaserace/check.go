package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine/batch"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/scenario/fixtures"
	"github.com/spf13/cobra"
)

// maxFixturesFile bounds a --fixtures file read into memory.
const maxFixturesFile = 16 << 20

type checkFlags struct {
	json     bool
	kase     string
	variant  int64
	fixtures string
	evidence evidenceFlags
	pg       cli.PGFlags
}

func newCheckCmd(a *app) *cobra.Command {
	var f checkFlags
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Play every built-in scenario under every knob setting and compare with its expectations",
		Long: `Check plays each built-in scenario under all six knob settings (renewal
blind/compare × fencing off/strict/monotonic) against a real PostgreSQL
server and compares each outcome with what the scenario promises. It prints a
table (or JSON with --json) and exits 1 if any outcome differs.

With --case revoked-writer it instead sends the revoked-writer case's six
fixtures (variant N, e = 10·N, or your own --fixtures file) to a real
resource under each fencing policy and reports every observation. off and
strict are expected to fail some fixtures: that is the lesson, reported as
data, not as an error. The exit code is 0 when monotonic (the verified
repair) passes every fixture and 1 when it does not.

A --fixtures file is a JSON list of one or more
  {"check": NAME, "initial": [fence, value], "writes": [[fence, value], ...], "expected": [fence, value]}
with nonnegative integer fences (the seed's epochs); an invalid fixture is named in the error (exit 2).

Exit codes: 0 all as expected, 1 a mismatch (or monotonic failing a
fixture), 2 bad flags or fixtures, 3 no PostgreSQL server could start.`,
		Example: `  # Every built-in scenario × every knob setting, as a table
  leaserace check

  # The same as JSON, for tools
  leaserace check --json

  # An evidence bundle: every transcript, a manifest and the seed's summary
  leaserace check --evidence ./evidence

  # The revoked-writer case, variant 2 (e = 20), as the case's JSON
  leaserace check --case revoked-writer --variant 2 --json

  # Your own fixtures
  leaserace check --case revoked-writer --fixtures my-fixtures.json`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.evidence.check(cmd); err != nil {
				return err
			}
			if cmd.Flags().Changed("case") {
				return a.checkCase(cmd.Context(), cmd, f)
			}
			if cmd.Flags().Changed("variant") || cmd.Flags().Changed("fixtures") {
				return cli.UsageErr("--variant and --fixtures go with --case revoked-writer")
			}
			return a.checkAll(cmd.Context(), f)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&f.json, "json", false, "print JSON instead of a table")
	fs.StringVar(&f.kase, "case", "", "run a case's fixtures instead: revoked-writer")
	fs.Int64Var(&f.variant, "variant", 1, "the case's variant N (e = 10·N), from 1")
	fs.StringVar(&f.fixtures, "fixtures", "", "a JSON file of fixtures to run instead of the case's own")
	f.evidence.register(fs)
	f.pg.Register(fs, a.Getenv)
	return cmd
}

// checkAll is every built-in scenario under every knob setting. With
// --evidence the bundle is made from the same runs: each is played once.
func (a *app) checkAll(ctx context.Context, f checkFlags) error {
	scs, err := scenario.Builtins()
	if err != nil {
		return err
	}
	srv, err := a.StartPG(ctx, &f.pg)
	if err != nil {
		return err
	}
	defer a.CloseServer(srv)

	recs, err := batch.RecordScenarios(ctx, batch.EvidenceConfig{
		DSN: srv.DSN, Provider: srv.Provider, ServerVersion: srv.Version, Leaserace: version(),
	}, scs)
	if err != nil {
		return fmt.Errorf("checking the built-in scenarios: %w", err)
	}
	var all []batch.CheckRow
	for _, rec := range recs {
		all = append(all, batch.CheckRows(rec)...)
	}

	failed := 0
	for _, r := range all {
		if !r.Passed {
			failed++
		}
	}
	if f.json {
		if err := cli.WriteJSON(a.Stdout, struct {
			Passed bool             `json:"passed"`
			Rows   []batch.CheckRow `json:"rows"`
		}{failed == 0, all}); err != nil {
			return err
		}
	} else if err := writeCheckTable(a.Stdout, all); err != nil {
		return err
	}
	if err := a.writeEvidence(ctx, batch.Transcripts(recs), f.evidence, f.json); err != nil {
		return err
	}
	if failed > 0 {
		return cli.WithCode(cli.ExitFailure, fmt.Errorf("%d of %d outcomes differ from their scenario's expectation", failed, len(all)))
	}
	return nil
}

func writeCheckTable(w io.Writer, rows []batch.CheckRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tRENEWAL\tFENCING\tEFFECTS\tVERDICT\tEXPECTED\tRESULT")
	for _, r := range rows {
		res := "PASS"
		if !r.Passed {
			res = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.Scenario, r.Knobs.Renewal, r.Knobs.Fencing,
			r.Outcome.Effects, r.Outcome.Verdict, r.Expected, res)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("cannot write the table: %w", err)
	}
	for _, r := range rows {
		if !r.Passed {
			fmt.Fprintf(w, "FAIL %s %s: %s\n", r.Scenario, r.Knobs, strings.Join(r.Mismatch, "; "))
		}
	}
	return nil
}

// checkCase runs the revoked-writer case's fixtures against a real resource.
func (a *app) checkCase(ctx context.Context, cmd *cobra.Command, f checkFlags) error {
	if f.kase != "revoked-writer" {
		return cli.UsageErr("--case %q: the only case is revoked-writer", f.kase)
	}
	var cases []fixtures.Fixture
	variant := int64(0)
	switch {
	case cmd.Flags().Changed("fixtures") && cmd.Flags().Changed("variant"):
		return cli.UsageErr("--variant and --fixtures cannot be combined: a fixtures file brings its own fences")
	case cmd.Flags().Changed("fixtures"):
		data, err := cli.ReadLimited(f.fixtures, maxFixturesFile)
		if err != nil {
			return cli.UsageErr("--fixtures: %w", err)
		}
		cases, err = fixtures.ParseFixtures(f.fixtures, data)
		if err != nil {
			return cli.WithCode(cli.ExitUsage, err)
		}
	default:
		var err error
		cases, err = fixtures.RevokedWriterFixtures(f.variant)
		if err != nil {
			return cli.UsageErr("--variant: %w", err)
		}
		variant = f.variant
	}
	srv, err := a.StartPG(ctx, &f.pg)
	if err != nil {
		return err
	}
	defer a.CloseServer(srv)

	rep, err := batch.RunCase(ctx, srv.DSN, cases)
	if err != nil {
		return fmt.Errorf("revoked-writer case: %w", err)
	}
	rep.Variant = variant
	if f.json {
		err = cli.WriteJSON(a.Stdout, caseJSON{Case: rep.Case, Variant: rep.Variant, Policies: orderedPolicies(rep.Policies)})
	} else {
		err = writeCaseText(a.Stdout, rep, len(cases))
	}
	if err != nil {
		return err
	}
	if m, ok := rep.Policies[string(scenario.FencingMonotonic)]; !ok || !m.Passed {
		return cli.WithCode(cli.ExitFailure, fmt.Errorf("monotonic fencing, the verified repair, failed %d of %d fixtures", failedCount(m), len(cases)))
	}
	return nil
}

// caseJSON is the case report with its policies in the case's own order
// (off, strict, monotonic) rather than a map's alphabetical one.
type caseJSON struct {
	Case     string          `json:"case"`
	Variant  int64           `json:"variant,omitempty"`
	Policies orderedPolicies `json:"policies"`
}

type orderedPolicies map[string]batch.PolicyReport

func (p orderedPolicies) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, name := range policyOrder(p) {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := scenario.MarshalPlain(name)
		v, err := scenario.MarshalPlain(p[name])
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// policyOrder is off, strict, monotonic, then anything else by name.
func policyOrder(p map[string]batch.PolicyReport) []string {
	var names []string
	for _, f := range scenario.Fencings() {
		if _, ok := p[string(f)]; ok {
			names = append(names, string(f))
		}
	}
	var rest []string
	for n := range p {
		if _, err := scenario.ParseFencing(n); err != nil {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(names, rest...)
}

func failedCount(p batch.PolicyReport) int {
	n := 0
	for _, o := range p.Observations {
		if !o.Passed {
			n++
		}
	}
	return n
}

func writeCaseText(w io.Writer, rep batch.CaseReport, n int) error {
	head := "revoked-writer case, your fixtures"
	if rep.Variant > 0 {
		head = fmt.Sprintf("revoked-writer case, variant %d (e = %d)", rep.Variant, 10*rep.Variant)
	}
	fmt.Fprintf(w, "%s: %d fixtures per policy\n", head, n)
	if rep.Variant > 0 {
		// The one place a learner meets the seed's word for the fence.
		fmt.Fprintln(w, "Each pair is [fence, value]. The checks keep the second seed's names, which call the fence an epoch.")
	} else {
		fmt.Fprintln(w, "Each pair is [fence, value].")
	}
	for _, name := range policyOrder(rep.Policies) {
		p := rep.Policies[name]
		verdict := "passed all"
		if !p.Passed {
			verdict = fmt.Sprintf("failed %d of %d", failedCount(p), len(p.Observations))
		}
		fmt.Fprintf(w, "\n%s: %s\n", scenario.Fencing(name).Describe(), verdict)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  CHECK\tACTUAL\tEXPECTED\tOUTCOME")
		for _, o := range p.Observations {
			act, _ := scenario.MarshalPlain(o.Actual)
			exp, _ := scenario.MarshalPlain(o.Expected)
			out := "passed"
			if !o.Passed {
				out = "FAILED"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", o.Check, act, exp, out)
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("cannot write the table: %w", err)
		}
	}
	if m, ok := rep.Policies[string(scenario.FencingMonotonic)]; ok && m.Passed {
		fmt.Fprintln(w, "\nmonotonic, the verified repair, passed every fixture; where off and strict fail, that is the case's lesson, not an error.")
	}
	return nil
}
