package transcript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// mdRun opens a run of a built-in scenario on a real server.
func mdRun(t *testing.T, dsn, name string, k scenario.Knobs) *engine.Run {
	t.Helper()
	sc, err := scenario.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := engine.Open(ctx, engine.Config{DSN: dsn, Scenario: sc, Knobs: k, Provider: "local", ServerVersion: "15.0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return r
}

// mdFixMeta replaces what differs between machines and runs, so a golden
// made here matches a run anywhere.
func mdFixMeta(tr *transcript.Transcript) {
	tr.Meta = &transcript.Meta{Provider: "local", ServerVersion: "15.0 (golden)", RecordedAt: "2026-01-01T00:00:00Z", Leaserace: "0.1.0-test", Source: "builtin"}
}

func mdOf(t *testing.T, tr transcript.Transcript) string {
	t.Helper()
	var b bytes.Buffer
	if err := transcript.WriteMarkdown(&b, tr); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// mdLive plays a built-in scenario to the end and renders it.
func mdLive(t *testing.T, dsn, name string, k scenario.Knobs) (transcript.Transcript, string) {
	t.Helper()
	r := mdRun(t, dsn, name, k)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.PlayAll(ctx); err != nil {
		t.Fatal(err)
	}
	tr, err := r.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	mdFixMeta(&tr)
	return tr, mdOf(t, tr)
}

// mdSession steps through renewal-race the way a presenter would (to the
// late heartbeat, toggle renewal, back one step, on to the end) and returns
// the transcript with that session attached.
func mdSession(t *testing.T, dsn string) transcript.Transcript {
	t.Helper()
	k := scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff}
	r := mdRun(t, dsn, "renewal-race", k)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var session []transcript.PresenterEntry
	entry := func(kind string, st *transcript.Step, change []string) {
		session = append(session, transcript.PresenterEntry{Kind: kind, Scenario: "renewal-race", T: r.Now(), Pos: r.Pos(), Knobs: r.Knobs(), Step: st, Change: change})
	}
	for range 5 {
		st, err := r.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		entry(transcript.PresenterStep, &st, nil)
	}
	ch, err := r.SetKnobs(ctx, scenario.Knobs{Renewal: scenario.RenewalCompare, Fencing: scenario.FencingOff})
	if err != nil {
		t.Fatal(err)
	}
	entry(transcript.PresenterToggle, nil, ch.Lines)
	if err := r.Seek(ctx, r.Pos()-1); err != nil {
		t.Fatal(err)
	}
	entry(transcript.PresenterBack, nil, nil)
	if err := r.PlayAll(ctx); err != nil {
		t.Fatal(err)
	}
	entry(transcript.PresenterSeek, nil, nil)
	tr, err := r.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	mdFixMeta(&tr)
	tr.Presenter = session
	return tr
}

// sessionFixture is a presenter's session through renewal-race, recorded
// from a live run by mdSession; TestSessionFixtureIsLive keeps it true.
var sessionFixture = filepath.Join("testdata", "renewal-race-session.json")

// readTranscript reads a transcript file of testdata.
func readTranscript(t *testing.T, path string) transcript.Transcript {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := transcript.Read(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tr
}

// The goldens are drawn from recorded transcripts (the shipped ones and a
// recorded session): the Markdown writer knows nothing of databases.
func TestMarkdownGolden(t *testing.T) {
	cases := map[string]func() transcript.Transcript{}
	for _, c := range []struct {
		name string
		k    scenario.Knobs
	}{
		{"renewal-race", scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff}},
		{"renewal-race", scenario.Knobs{Renewal: scenario.RenewalCompare, Fencing: scenario.FencingOff}},
		{"busy-holder", scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingStrict}},
	} {
		cases[c.name+"-"+string(c.k.Renewal)+"-"+string(c.k.Fencing)] = func() transcript.Transcript {
			tr := enginetest.ReadShipped(t, transcript.Name(c.name, c.k))
			mdFixMeta(&tr)
			return tr
		}
	}
	cases["renewal-race-session"] = func() transcript.Transcript { return readTranscript(t, sessionFixture) }

	for name, make := range cases {
		t.Run(name, func(t *testing.T) {
			got := mdOf(t, make())
			checkGolden(t, name+".md", got)
			mdCheckTables(t, got)
		})
	}
}

// TestSessionFixtureIsLive steps the session again on a real server: the
// recorded fixture must be what a live run records. With -update it is
// rewritten from the live run.
func TestSessionFixtureIsLive(t *testing.T) {
	live := mdSession(t, pgtest.DSN(t))
	if *update {
		var b bytes.Buffer
		if err := live.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sessionFixture, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := mdOf(t, live), mdOf(t, readTranscript(t, sessionFixture)); got != want {
		t.Errorf("a live session renders otherwise than %s (run with -update after checking the change):\n%s", sessionFixture, got)
	}
}

// TestMarkdownShowsTheRace pins the facts the blind/off transcript must
// show, so a golden rewritten by mistake cannot lose them quietly.
func TestMarkdownShowsTheRace(t *testing.T) {
	dsn := pgtest.DSN(t)
	tr, md := mdLive(t, dsn, "renewal-race", scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff})
	for _, want := range []string{
		"# leaserace transcript: renewal-race, renewal blind, fencing off\n",
		"| Renewal | **blind** (blind overwrite)",
		"| Fencing | **off** — the resource accepts every write",
		"| Provider | local |",
		"| PostgreSQL | 15.0 (golden) |",
		// The late heartbeat's row: one row, the lease resurrected to A.
		"| 5 | 1075 | A | heartbeat.deliver hb1 | done | `UPDATE 1` | **A** · **fence 1** · lease_version 2 · **expires 1135** (fence regressed 2 → 1) |",
		"### 5 · t=1075 · A · heartbeat.deliver hb1 → `UPDATE 1`",
		"```sql\nUPDATE leases\nSET owner = $2, fence = $3",
		"Arguments: `$1` = `\"orders\"`, `$2` = `\"A\"`, `$3` = `1`, `$4` = `1`, `$5` = `1075`, `$6` = `60`.",
		"**CONFLICT**: 2 effects accepted.",
		// The move log, to play the same schedule again.
		"`A:send hb1@1055,clock:expire@1060,B:acquire@1070,B:effect@1070,A:deliver hb1@1075,A:effect@1080`",
		// Each effect with the contract's judgement.
		"| 2 | A | 1 | `\"report #2 from A (fence 1)\"` | 2 | accepted | **conflict**: fence 1 &lt; the resource's highest fence accepted 2, yet accepted: a stale write reached the resource |",
		"`" + tr.Digest + "`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	// Every statement that ran appears verbatim in a sql block.
	for _, s := range tr.Steps {
		if s.SQL != "" && !strings.Contains(md, "```sql\n"+s.SQL+"\n```") {
			t.Errorf("statement of step t=%d not verbatim:\n%s", s.T, s.SQL)
		}
	}
	// The digest line does not depend on where the run was recorded.
	tr2 := tr
	tr2.Meta = &transcript.Meta{Provider: "container", ServerVersion: "16.4"}
	if d, _ := tr2.ComputeDigest(); d != tr.Digest || !strings.Contains(mdOf(t, tr2), "`"+tr.Digest+"`") {
		t.Errorf("digest should not depend on Meta")
	}
}

func TestMarkdownSessionSection(t *testing.T) {
	dsn := pgtest.DSN(t)
	md := mdOf(t, mdSession(t, dsn))
	for _, want := range []string{
		"## What the presenter did\n",
		"1. **step** `A:send hb1@1055` at t=1055 (blind/off)\n",
		"5. **step** `A:deliver hb1@1075` at t=1075 (blind/off) → `UPDATE 1`\n",
		"6. **toggled** the knobs to compare/off at t=1075: ",
		"owner A → B, fence 1 → 2",
		"7. **back** to step 4 at t=1070 (compare/off)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the presenter section lacks %q:\n%s", want, md)
		}
	}
	_, plain := mdLive(t, dsn, "control", scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff})
	if strings.Contains(plain, "## What the presenter did") {
		t.Errorf("a transcript without a presenter's log should have no section for it")
	}
}

// TestMarkdownEscapes feeds names and values that would break a table or
// turn into markup.
func TestMarkdownEscapes(t *testing.T) {
	val := json.RawMessage(`"a|b` + "`" + `<script>x</script>"`)
	eff := scenario.Effect{Seq: 1, Actor: "w|1", Fence: 3, Value: val, Accepted: false, Reason: "epoch 3 | stored 4", StoredFence: 4}
	tr := transcript.Transcript{
		Format:   transcript.Format,
		Scenario: "odd|name",
		Knobs:    scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingStrict},
		Initial:  transcript.Initial{Resource: scenario.ResourceState{Fence: 4, Value: val}},
		Steps: []transcript.Step{{
			T: 7, Actor: "w|1", Action: scenario.ActionWrite,
			SQL:  "SELECT '```' | 1 AS x\n-- a | b",
			Args: []any{int64(3), json.RawMessage(`"x|y"`)},
			Tag:  "UPDATE 0", Call: &transcript.Call{Method: "POST", Path: "/writes", Status: 409, Reason: "epoch 3 | stored 4"},
			Resource: transcript.ResourceSnap{Fence: 4, Value: val, Effects: []scenario.Effect{eff}},
			Note:     "a *bold* <b>claim</b>\nwith | pipes and [a](link)",
		}},
		Outcome: transcript.Outcome{Rejected: 1, Verdict: scenario.VerdictSafe, Resource: scenario.ResourceState{Fence: 4, Value: val}},
		Meta:    &transcript.Meta{Provider: "dsn|x", ServerVersion: "<16>"},
	}
	md := mdOf(t, tr)
	mdCheckTables(t, md)
	prose := mdProse(md)
	for _, bad := range []string{"<script>", "<b>", "*bold*", "[a](link)", "<16>"} {
		if strings.Contains(prose, bad) {
			t.Errorf("Markdown lets %q through:\n%s", bad, md)
		}
	}
	// The statement keeps its text verbatim in a fence it cannot close.
	if !strings.Contains(md, "````sql\nSELECT '```' | 1 AS x\n-- a | b\n````") {
		t.Errorf("statement not verbatim in a longer fence:\n%s", md)
	}
}

// mdProse is md without code blocks and code spans, whose contents are
// shown literally: what is left is what a renderer interprets.
func mdProse(md string) string {
	var out strings.Builder
	inBlock := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			continue
		}
		for line != "" {
			i := strings.IndexByte(line, '`')
			if i < 0 {
				out.WriteString(line)
				break
			}
			out.WriteString(line[:i])
			n := len(line[i:]) - len(strings.TrimLeft(line[i:], "`"))
			fence := line[i : i+n]
			rest := line[i+n:]
			j := strings.Index(rest, fence)
			if j < 0 {
				out.WriteString(line[i:])
				break
			}
			line = rest[j+n:]
		}
		out.WriteByte('\n')
	}
	return out.String()
}

// mdCheckTables checks that every table row has as many cells as its
// header: no value, name or note split a row with a stray |.
func mdCheckTables(t *testing.T, md string) {
	t.Helper()
	unescaped := regexp.MustCompile(`(^|[^\\])\|`)
	cells := func(line string) int { return len(unescaped.FindAllString(line, -1)) }
	want := -1
	inCode := false
	for i, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "|") {
			want = -1
			continue
		}
		if want < 0 {
			want = cells(line)
			continue
		}
		if got := cells(line); got != want {
			t.Errorf("line %d has %d cell separators, its table's header %d: %s", i+1, got, want, line)
		}
	}
}

// TestMarkdownNamesMessagesByKind: a reply in flight says what the renewal
// did, and a delayed write its fence and value; neither shows as a lease
// snapshot it does not carry.
func TestMarkdownNamesMessagesByKind(t *testing.T) {
	dsn := pgtest.DSN(t)
	_, md := mdLive(t, dsn, "slow-renewal", scenario.Knobs{Renewal: scenario.RenewalCompare, Fencing: scenario.FencingOff})
	if want := "- reply to A's hb1, sent 1012, due 1013: zero rows, so A will know it lost the lease\n"; !strings.Contains(md, want) {
		t.Errorf("Markdown lacks %q:\n%s", want, md)
	}
	_, md = mdLive(t, dsn, "slow-renewal", scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff})
	if want := "- reply to A's hb1, sent 1012, due 1013: one row, so A will believe A · fence 1 · lease_version 2 · expires 1022\n"; !strings.Contains(md, want) {
		t.Errorf("Markdown lacks %q:\n%s", want, md)
	}
	_, md = mdLive(t, dsn, "zombie-producer", scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingMonotonic})
	if want := "- write batch2 from P1, sent 1055, due 1075, with fence 5 and value `\"batch 2 (P1, fence 5)\"` — **stale**: P2 now holds fence 6\n"; !strings.Contains(md, want) {
		t.Errorf("Markdown lacks %q:\n%s", want, md)
	}
	if strings.Contains(md, "carrying  ·") || strings.Contains(md, "fence 0 · v0") {
		t.Errorf("a message shows an empty snapshot:\n%s", md)
	}
}
