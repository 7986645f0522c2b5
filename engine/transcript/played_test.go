package transcript_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/search/searchtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
)

// randomSchedules is how many seeded random schedules the Mermaid test
// plays, spread over every built-in scenario and setting.
const randomSchedules = 240

// TestMermaidEverySchedule draws every shortest move list the search of
// every order finds (to a conflict, to a blocked write and each goal's
// par) for every built-in scenario under all six settings, as
// engine/search/searchtest records them (engine/search's
// TestRecordedSearchesMatchLiveOnes keeps the recording true), plus seeded
// random schedules walked through the move graph with play mode's moves,
// and has Mermaid's own parser check every diagram. Each schedule plays on
// one shared machine on the server. Each diagram and Markdown must also
// name no scripted time its moves did not use.
func TestMermaidEverySchedule(t *testing.T) {
	mermaidDirOrSkip(t)
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	h, err := engine.OpenHost(ctx, engine.HostConfig{DSN: dsn, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	scs, err := scenario.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.OpenMachine(ctx, h, scs[0], scenario.AllKnobs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())

	docs := map[string]string{}
	draw := func(name string, sc *scenario.Scenario, k scenario.Knobs, moves []scenario.Move) {
		t.Helper()
		steps, err := playOn(ctx, m, sc, k, moves)
		if err != nil {
			t.Fatalf("%s: %s: %v", name, scenario.FormatMoves(moves), err)
		}
		tr, err := engine.TranscriptOf(sc, k, steps, nil)
		if err != nil {
			t.Fatal(err)
		}
		mmd := mermaidOf(t, tr)
		checkPlayedTimes(t, name+" (Mermaid)", mmd, sc, tr)
		checkPlayedTimes(t, name+" (Markdown)", mdOf(t, tr), sc, tr)
		docs[name] = mmd
	}

	start := time.Now()
	lists := 0
	for _, sc := range scs {
		for _, r := range searchtest.Results(t, sc) {
			named := map[string][]scenario.Move{"conflict": r.ShortestConflict, "blocked": r.ShortestBlocked}
			for _, g := range r.Goals {
				named["goal-"+g.Goal.ID] = g.Moves
			}
			for what, moves := range named {
				if len(moves) > 0 {
					draw(fmt.Sprintf("%s--%s--%s--%s", sc.Name, r.Knobs.Renewal, r.Knobs.Fencing, what), sc, r.Knobs, moves)
					lists++
				}
			}
		}
	}
	shortest := time.Since(start)

	rng := rand.New(rand.NewPCG(21, 2026))
	for i := range randomSchedules {
		sc := scs[i%len(scs)]
		k := scenario.AllKnobs()[(i/len(scs))%len(scenario.AllKnobs())]
		moves, err := randomWalk(ctx, m, sc, k, rng)
		if err != nil {
			t.Fatalf("random schedule %d of %s under %s: %v", i, sc.Name, k, err)
		}
		draw(fmt.Sprintf("random-%03d-%s", i, sc.Name), sc, k, moves)
	}
	if lists < 2*len(scs) {
		t.Errorf("only %d shortest lists over %d scenarios: the search should find more", lists, len(scs))
	}
	random := time.Since(start) - shortest
	mermaidParse(t, docs)
	t.Logf("%d shortest lists (played in %v) and %d random schedules (played in %v), %d diagrams parsed in %v",
		lists, shortest.Round(time.Millisecond), randomSchedules, random.Round(time.Millisecond), len(docs), (time.Since(start) - shortest - random).Round(time.Millisecond))
}

// playOn plays moves from sc's start under k on the machine.
func playOn(ctx context.Context, m *engine.Machine, sc *scenario.Scenario, k scenario.Knobs, moves []scenario.Move) ([]transcript.Step, error) {
	if err := m.Reset(ctx, sc, k); err != nil {
		return nil, err
	}
	steps := make([]transcript.Step, 0, len(moves))
	for _, mv := range moves {
		st, err := m.Apply(ctx, mv)
		if err != nil {
			return nil, fmt.Errorf("move %s: %w", mv, err)
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// randomWalk is a schedule made by picking, at every state, one of the
// moves play mode offers there (free moves included), until no actor has
// a move left or the walk is 14 moves long.
func randomWalk(ctx context.Context, m *engine.Machine, sc *scenario.Scenario, k scenario.Knobs, rng *rand.Rand) ([]scenario.Move, error) {
	if err := m.Reset(ctx, sc, k); err != nil {
		return nil, err
	}
	var moves []scenario.Move
	for len(moves) < 14 {
		s := m.State()
		opts := s.Options(s.Now(), true)
		if !slices.ContainsFunc(opts, func(o world.Option) bool { return o.Move.Actor != scenario.ClockActor }) {
			break
		}
		mv := opts[rng.IntN(len(opts))].Move
		if _, err := m.Apply(ctx, mv); err != nil {
			return nil, fmt.Errorf("move %s after %s: %w", mv, scenario.FormatMoves(moves), err)
		}
		moves = append(moves, mv)
	}
	return moves, nil
}

var (
	quoted = regexp.MustCompile(`"[^"\n]*"`)
	number = regexp.MustCompile(`\b\d+\b`)
)

// checkPlayedTimes fails when doc names a scripted time of sc (a named
// time or an event's time) that the run did not use: no move was made
// at it, no message was sent at it and no lease in any state expires at
// it. Values are the scenario's data and are left out.
func checkPlayedTimes(t *testing.T, name, doc string, sc *scenario.Scenario, tr transcript.Transcript) {
	t.Helper()
	used := map[int64]bool{}
	lease := func(l *scenario.Lease) {
		if l != nil {
			used[l.ExpiresAt] = true
		}
	}
	lease(tr.Initial.Coordinator)
	for _, st := range tr.Steps {
		used[st.T] = true
		lease(st.Coordinator)
		for _, b := range st.Beliefs {
			lease(b.Lease)
		}
		for _, f := range st.InFlight {
			used[f.Sent] = true
			lease(&f.Snapshot)
		}
	}
	if tr.Played != nil {
		for _, v := range tr.Played.Times {
			used[v] = true
		}
	} else {
		// On script: every scripted time may be named.
		return
	}
	scripted := map[int64]bool{}
	for _, v := range sc.Times {
		scripted[v] = true
	}
	for _, ev := range sc.Events {
		scripted[ev.T] = true
	}
	for _, n := range number.FindAllString(quoted.ReplaceAllString(doc, ""), -1) {
		v, err := strconv.ParseInt(n, 10, 64)
		if err == nil && scripted[v] && !used[v] {
			i := strings.Index(doc, n)
			t.Errorf("%s names scripted time %d, which its moves did not use (moves %s):\n…%s…", name, v, tr.Moves, doc[max(0, i-200):min(len(doc), i+100)])
			return
		}
	}
}

// TestMermaidPlayedMustShow is the issue's own schedule: the README's
// shortest list to a conflict, starting with the clock's move, which
// Mermaid rejected when its note had no participant.
func TestMermaidPlayedMustShow(t *testing.T) {
	dsn := pgtest.DSN(t)
	sc, err := scenario.Builtin("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	moves, err := scenario.ParseMoves("clock:advance@1060,A:send hb1@1060,B:acquire@1060,A:deliver hb1@1060,B:effect@1060,A:effect@1060")
	if err != nil {
		t.Fatal(err)
	}
	k := enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff)
	r, err := engine.Open(enginetest.Ctx(t), engine.Config{DSN: dsn, Scenario: sc, Knobs: k, Log: moves})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	if err := r.PlayAll(enginetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	tr, err := r.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	mmd := mermaidOf(t, tr)
	if strings.Contains(mmd, "Note over :") || !strings.Contains(mmd, "Note over A,Resource: 1060 clock moves on: A's lease (fence 1) expired at 1060") {
		t.Errorf("the clock's move should be a note over every participant:\n%s", mmd)
	}
	for _, line := range strings.Split(mmd, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "Note over "); ok && strings.HasPrefix(rest, ":") {
			t.Errorf("a note without a participant: %q", line)
		}
	}
	md := mdOf(t, tr)
	checkPlayedTimes(t, "must-show (Markdown)", md, sc, tr)
	checkPlayedTimes(t, "must-show (Mermaid)", mmd, sc, tr)
	for _, want := range []string{
		"# leaserace played run: renewal-race, renewal blind, fencing off\n",
		"hb1 from A, sent 1060, delivered at 1060 (step 4), carrying",
		"The moves chose every time",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "## Goals") {
		t.Errorf("a transcript without goals should have no Goals section")
	}
	mermaidParse(t, map[string]string{"must-show.mmd": mmd})
}

// A played run that starts on script and then leaves it: the send was
// narrated live with the script's delivery at 1075, but the moves delivered
// hb1 at 1060, so the transcript, made from the whole log, says neither
// 1075 nor anything else the moves did not do. The scripted run keeps its
// narration, and so its digest.
func TestPlayedNarrationAfterAScriptedStart(t *testing.T) {
	dsn := pgtest.DSN(t)
	sc, err := scenario.Builtin("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	moves, err := scenario.ParseMoves("A:send hb1@1055,clock:advance@1060,B:acquire@1060,A:deliver hb1@1060")
	if err != nil {
		t.Fatal(err)
	}
	k := enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff)
	r, err := engine.Open(enginetest.Ctx(t), engine.Config{DSN: dsn, Scenario: sc, Knobs: k, Log: moves})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	if err := r.PlayAll(enginetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	live := r.Steps()[0].Note
	if !strings.Contains(live, "the network holds it until 1075") {
		t.Fatalf("on script so far, the live narration names the script's delivery: %q", live)
	}
	tr, err := r.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Steps[0].Note; got != "A sends heartbeat hb1 carrying its cached lease (A, fence 1, lease_version 1, expires 1060); the network holds it." {
		t.Errorf("the transcript's narration of the send: %q", got)
	}
	if tr.Played == nil || tr.Played.Times["send"] != 1055 || len(tr.Played.Times) != 1 {
		t.Errorf("only the send was played at its named time: %+v", tr.Played)
	}
	md := mdOf(t, tr)
	checkPlayedTimes(t, "scripted start (Markdown)", md, sc, tr)
	checkPlayedTimes(t, "scripted start (Mermaid)", mermaidOf(t, tr), sc, tr)
	if !strings.Contains(md, "Named times played as scripted: send 1055.") {
		t.Errorf("Markdown should name the one time played as scripted:\n%s", md)
	}
	shipped := enginetest.ReadShipped(t, transcript.Name("renewal-race", k))
	if played := enginetest.Played(t, dsn, "renewal-race", k); played.Digest != shipped.Digest || played.Played != nil {
		t.Errorf("the scripted run's digest %s differs from the shipped %s (or it counts as played)", played.Digest, shipped.Digest)
	}
}
