package transcript_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// mermaidDirEnv names a directory where `npm install mermaid jsdom` was run;
// with it set, the diagrams are checked by Mermaid's own parser.
const mermaidDirEnv = "LEASERACE_MERMAID_DIR"

// requireMermaidEnv=1 turns a missing parser into a failure instead of a
// skip: CI installs it and must not pass quietly without it.
const requireMermaidEnv = "LEASERACE_REQUIRE_MERMAID"

func mermaidOf(t *testing.T, tr transcript.Transcript) string {
	t.Helper()
	var b bytes.Buffer
	if err := transcript.WriteMermaid(&b, tr); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The goldens are drawn from the shipped transcripts: the Mermaid writer
// knows nothing of databases.
func TestMermaidGolden(t *testing.T) {
	for _, k := range []scenario.Knobs{
		enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff),
		enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff),
	} {
		name := transcript.Name("renewal-race", k)
		t.Run(name, func(t *testing.T) {
			checkGolden(t, name+".mmd", mermaidOf(t, enginetest.ReadShipped(t, name)))
		})
	}
}

// TestMermaidShowsTheRace checks the race's landmarks in the live diagrams,
// so a golden rewritten by mistake cannot lose them quietly.
func TestMermaidShowsTheRace(t *testing.T) {
	dsn := pgtest.DSN(t)
	blind := mermaidOf(t, enginetest.Played(t, dsn, "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff)))
	compare := mermaidOf(t, enginetest.Played(t, dsn, "renewal-race", enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff)))
	for _, want := range []string{
		"participant A\n    participant Coordinator as Coordinator (PostgreSQL)\n    participant B\n    participant Resource",
		"A--)Coordinator: hb1 (sent 1055, delayed)",
		"the network holds it until 1075",
		"rect rgb(",
		"1060 clock: A's lease (fence 1) expired at 1060",
		"B->>Coordinator: 1070 acquire",
		"UPDATE 1, 1 row · now B, fence 2, lease_version 2, expires 1130 (owner A → B, fence 1 → 2",
		"A->>Coordinator: 1075 hb1 arrives (sent 1055): blind overwrite",
		"fence regressed 2 → 1",
		"outcome: 2 effects / CONFLICT",
	} {
		if !strings.Contains(blind, want) {
			t.Errorf("blind/off diagram lacks %q:\n%s", want, blind)
		}
	}
	for _, want := range []string{
		"A-xCoordinator: 1075 hb1 arrives (sent 1055): compare-and-renew",
		"UPDATE 0, 0 rows · still B, fence 2",
		"A makes no call",
		"outcome: 1 effect / SAFE",
	} {
		if !strings.Contains(compare, want) {
			t.Errorf("compare/off diagram lacks %q:\n%s", want, compare)
		}
	}
	// The stale window closes on the heartbeat's arrival: A's later
	// effect is drawn after the rect's end.
	if i, j := strings.Index(blind, "    end\n"), strings.Index(blind, "A->>Resource: 1080"); i < 0 || j < i {
		t.Errorf("the stale window should end before A's effect at 1080:\n%s", blind)
	}
}

// TestMermaidRefusedWritesAndOddNames needs no server: a hand-made
// transcript with a 409, actor names Mermaid cannot take as ids, and text
// with the characters its grammar reserves.
func TestMermaidRefusedWritesAndOddNames(t *testing.T) {
	tr := oddTranscript()
	got := mermaidOf(t, tr)
	for _, want := range []string{
		"participant actor1\n",
		"participant actor2 as end",
		"participant actor3 as w-2",
		"actor1->>Resource: 1000 POST /writes fence 10",
		"actor2->>Resource: 1001 POST /writes fence 11",
		"actor3-xResource: 1002 POST /writes fence 10",
		"409 refused: epoch 10 #60; 11 #35;1#59; no",
		"Note over actor3: 1003 a #60;b#62; note",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diagram lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Coordinator") || strings.Contains(got, "rect ") {
		t.Errorf("a resource-only transcript has no coordinator and no stale window:\n%s", got)
	}
	if !strings.HasSuffix(got, "\n") || strings.HasSuffix(got, "\n\n") {
		t.Errorf("diagram should end with exactly one newline")
	}
	mermaidParse(t, map[string]string{"odd.mmd": got})
}

func oddTranscript() transcript.Transcript {
	eff := func(seq int64, actor string, epoch int64, ok bool, stored int64) scenario.Effect {
		return scenario.Effect{Seq: seq, Actor: actor, Fence: epoch, Value: json.RawMessage(`"v"`), Accepted: ok, StoredFence: stored}
	}
	// "actor1" is a plain name; the aliases for the others must avoid it.
	e0 := eff(0, "actor1", 10, true, 10)
	e1 := eff(1, "end", 11, true, 10)
	e2 := eff(2, "w-2", 10, false, 11)
	return transcript.Transcript{
		Format:   transcript.Format,
		Scenario: "odd",
		Knobs:    enginetest.Knobs(scenario.RenewalBlind, scenario.FencingMonotonic),
		Initial:  transcript.Initial{Resource: scenario.ResourceState{Fence: 10, Value: json.RawMessage(`"a"`)}},
		Steps: []transcript.Step{
			{T: 1000, Actor: "actor1", Action: scenario.ActionWrite, Call: &transcript.Call{Method: "POST", Path: "/writes", Status: 200, Accepted: true},
				Resource: transcript.ResourceSnap{Fence: 10, Value: json.RawMessage(`"v"`), Effects: []scenario.Effect{e0}}},
			{T: 1001, Actor: "end", Action: scenario.ActionWrite, Call: &transcript.Call{Method: "POST", Path: "/writes", Status: 200, Accepted: true},
				Resource: transcript.ResourceSnap{Fence: 11, Value: json.RawMessage(`"v"`), Effects: []scenario.Effect{e1}}},
			{T: 1002, Actor: "w-2", Action: scenario.ActionWrite, Call: &transcript.Call{Method: "POST", Path: "/writes", Status: 409, Reason: "epoch 10 < 11 #1; no"},
				Resource: transcript.ResourceSnap{Fence: 11, Value: json.RawMessage(`"v"`), Effects: []scenario.Effect{e1, e2}}},
			{T: 1003, Actor: "w-2", Action: scenario.ActionEffect, Note: "a <b>\nnote",
				Resource: transcript.ResourceSnap{Fence: 11, Value: json.RawMessage(`"v"`), Effects: []scenario.Effect{e1, e2}}},
		},
		Outcome: transcript.Outcome{Effects: 1, Rejected: 1, Verdict: scenario.VerdictSafe, Resource: scenario.ResourceState{Fence: 11, Value: json.RawMessage(`"v"`)}},
	}
}

// TestMermaidParses checks the goldens and the diagram of every shipped
// transcript with Mermaid's own parser (no server needed).
func TestMermaidParses(t *testing.T) {
	docs := map[string]string{}
	goldens, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.mmd"))
	if len(goldens) == 0 {
		t.Fatal("no Mermaid goldens in testdata/golden")
	}
	for _, g := range goldens {
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		docs[g] = string(b)
	}
	for _, name := range enginetest.ShippedNames(t) {
		docs[name] = mermaidOf(t, enginetest.ReadShipped(t, name))
	}
	mermaidParse(t, docs)
}

// mermaidParse runs Mermaid's parser over each document, or skips when
// LEASERACE_MERMAID_DIR does not point at an install of it (fails instead
// under LEASERACE_REQUIRE_MERMAID=1).
func mermaidParse(t *testing.T, docs map[string]string) {
	t.Helper()
	p := sharedMermaid(t, mermaidDirOrSkip(t))
	tmp := t.TempDir()
	var files []string
	for name, doc := range docs {
		f := filepath.Join(tmp, strings.NewReplacer("/", "_", "\\", "_").Replace(name))
		if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	answers, err := p.parse(files, 2*time.Minute)
	if err != nil {
		t.Fatalf("Mermaid's parser: %v", err)
	}
	var bad []string
	for i, a := range answers {
		if a != "ok "+files[i] {
			bad = append(bad, a)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("Mermaid's parser rejected %d of %d diagrams:\n%s", len(bad), len(files), strings.Join(bad, "\n"))
	}
}

// mermaidParser is one node process with Mermaid's parser loaded, shared
// by the package's tests: loading mermaid and jsdom costs node about 2 s
// of CPU, and a diagram after that about 20 ms, so a process per test
// spent most of its time starting. It reads a file name per line and
// answers each with one line.
type mermaidParser struct {
	mu    sync.Mutex
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	// stderr holds what node said on standard error, for a failure.
	stderr bytes.Buffer
}

// sharedMermaid starts the package's Mermaid parser in dir on first use.
func sharedMermaid(t *testing.T, dir string) *mermaidParser {
	t.Helper()
	return pgtest.Shared(t, "Mermaid's parser in "+dir, func(context.Context) (*mermaidParser, func(context.Context) error, error) {
		node, err := exec.LookPath("node")
		if err != nil {
			return nil, nil, fmt.Errorf("%s is set but node is not on PATH: %w", mermaidDirEnv, err)
		}
		p := &mermaidParser{lines: make(chan string)}
		// An ES module given with -e resolves its imports from the working
		// directory: the one holding node_modules/mermaid.
		p.cmd = exec.Command(node, "--input-type=module", "-e", mermaidCheckJS)
		p.cmd.Dir = dir
		p.cmd.Stderr = &p.stderr
		if p.in, err = p.cmd.StdinPipe(); err != nil {
			return nil, nil, err
		}
		out, err := p.cmd.StdoutPipe()
		if err != nil {
			return nil, nil, err
		}
		if err := p.cmd.Start(); err != nil {
			return nil, nil, err
		}
		go func() {
			defer close(p.lines)
			sc := bufio.NewScanner(out)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				p.lines <- sc.Text()
			}
		}()
		return p, p.close, nil
	})
}

// parse asks for each file in turn and returns the answers in order; it
// gives up, and stops the parser, when they take longer than limit.
func (p *mermaidParser) parse(files []string, limit time.Duration) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	timeout := time.NewTimer(limit)
	defer timeout.Stop()
	var answers []string
	for _, f := range files {
		if _, err := io.WriteString(p.in, f+"\n"); err != nil {
			return nil, p.stop(fmt.Errorf("writing to it: %w", err))
		}
		select {
		case a, ok := <-p.lines:
			if !ok {
				return nil, p.stop(errors.New("it stopped"))
			}
			answers = append(answers, a)
		case <-timeout.C:
			return nil, p.stop(fmt.Errorf("no answer after %s", limit))
		}
	}
	return answers, nil
}

// stop kills the parser after a failure and adds what node said on
// standard error, read once node is gone.
func (p *mermaidParser) stop(why error) error {
	_ = p.cmd.Process.Kill()
	p.drain()
	_ = p.cmd.Wait()
	return fmt.Errorf("%w\n%s", why, p.stderr.String())
}

// drain reads what is left of node's answers, until the reader sees the
// end of its output.
func (p *mermaidParser) drain() {
	for range p.lines {
	}
}

// close ends the parser: its input closed, node exits.
func (p *mermaidParser) close(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.in.Close()
	p.drain()
	if err := p.cmd.Wait(); err != nil && p.cmd.ProcessState == nil {
		return err
	}
	return nil
}

// mermaidDirOrSkip is the directory holding Mermaid's parser, or skips
// the test when LEASERACE_MERMAID_DIR is not set (fails instead under
// LEASERACE_REQUIRE_MERMAID=1).
func mermaidDirOrSkip(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(mermaidDirEnv)
	if dir == "" {
		msg := fmt.Sprintf("Mermaid's parser is not installed: set %s to a directory where `npm install mermaid jsdom` ran", mermaidDirEnv)
		if os.Getenv(requireMermaidEnv) == "1" {
			t.Fatalf("%s (%s=1 requires it)", msg, requireMermaidEnv)
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "mermaid", "package.json")); err != nil {
		t.Fatalf("%s=%s holds no install of Mermaid (run `npm install mermaid jsdom` there): %v", mermaidDirEnv, dir, err)
	}
	return dir
}

// mermaidCheckJS parses each file named on a line of its input with
// mermaid.parse and answers on a line: "ok FILE", or "FAIL FILE: why".
// jsdom stands in for the browser Mermaid expects.
const mermaidCheckJS = `
import { JSDOM } from 'jsdom';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import('mermaid');
mermaid.initialize({ startOnLoad: false });
for await (const f of createInterface({ input: process.stdin })) {
  try {
    const r = await mermaid.parse(readFileSync(f, 'utf8'));
    if (r.diagramType !== 'sequence') throw new Error('parsed as ' + r.diagramType + ', not a sequence diagram');
    console.log('ok ' + f);
  } catch (e) {
    console.log('FAIL ' + f + ': ' + String(e.message).replace(/\s+/g, ' '));
  }
}
`

// TestMermaidDrawsTheReelection: River's re-election is an arrow to the
// coordinator with the server's tag, like an acquire; the shipped
// recording needs no server.
func TestMermaidDrawsTheReelection(t *testing.T) {
	got := mermaidOf(t, enginetest.ReadShipped(t, "river-reelect--blind-off"))
	for _, want := range []string{
		"A->>Coordinator: 1012 reelect\n",
		"Note over Coordinator: INSERT 0 1, 1 row · now B, fence 2, lease_version 2, expires 1022 (fence 2 kept, expires 1021 → 1022)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diagram lacks %q:\n%s", want, got)
		}
	}
}
