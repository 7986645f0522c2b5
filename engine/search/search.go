// Package search explores every schedule of a scenario on the server: the
// move graph from the initial state, each move its real SQL or HTTP write,
// played on an engine.Machine. It counts the complete runs by verdict and
// by goal, finds the shortest move lists to a conflict, a blocked write and
// each goal (a goal's par), and keeps the answers in memory.
package search

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
	"golang.org/x/sync/errgroup"
)

// A state (world.State) is what decides what every later move does and how
// the run is judged: the clock, the events not played, the messages in
// flight, the coordinator's row and the resource's epoch and value (what
// the server holds), each actor's belief, pause and pending check, and what
// the verdict needs (the highest epoch accepted, whether a write conflicted
// or was blocked). Equal states are one node. A run is complete when only
// the clock could move.
//
// To expand a state the server must hold it. The search walks depth first,
// so the server is usually in the state it expands next already; when it
// is not, the machine puts the part a move is about to use back with real
// SQL, just before the move's own statement: the coordinator's row cleared
// and seeded, or the resource reset to the state's epoch and value, one
// round trip each. The effects and their judgements live in the state.
// Replaying the state's path from the start instead costs a reset plus
// every move of the path; BenchmarkSearch measures both, and restoring was
// 1.2-1.4 times faster on renewal-race.

// Result is every schedule of a scenario's moves under one knob setting,
// explored on the server; GoalReach is what the search found about one
// goal. The types are world's, so that the renderer can hold them without
// the engine.
type (
	Result    = world.SearchResult
	GoalReach = world.GoalReach
)

// Config says where searches play.
type Config struct {
	// Host is a host the caller keeps open; the searches open runs (schemas
	// and resource state) of their own on it.
	Host *engine.Host
	// DSN is used when Host is nil: the first search that needs the server
	// opens a host on it, kept until Close.
	DSN string
	// Lanes is how many settings are searched at once, each on a run of
	// its own; default min(4, GOMAXPROCS), at most the host's connections.
	Lanes int
}

// MaxStates bounds one search, so a scenario file with many events
// cannot take the machine's memory.
const MaxStates = 100000

// ErrTooManyStates is a search that stopped at MaxStates.
var ErrTooManyStates = fmt.Errorf("more than %d states: too many to explore; try a scenario with fewer events", MaxStates)

// ErrClosed is a search started after Close.
var ErrClosed = errors.New("the search was closed")

// Searcher explores scenarios' move graphs on one server and remembers the
// answers in memory, per scenario (its name, times and content) and knob
// setting. It is safe for concurrent use: a search asked for while the same
// one runs waits for it. Close it when its searches have returned.
type Searcher struct {
	cfg Config
	// replay, for measuring, puts the server into a state by replaying
	// the state's path from the start instead of restoring it with SQL.
	replay bool

	mu      sync.Mutex
	host    *engine.Host
	ownHost bool
	closed  bool
	cache   map[searchKey]*searchFound
	running map[searchKey]chan struct{}
}

type searchKey struct {
	scenario string
	knobs    scenario.Knobs
}

// New returns a search on cfg's host or DSN with an empty cache.
func New(cfg Config) *Searcher {
	if cfg.Lanes <= 0 {
		cfg.Lanes = min(4, runtime.GOMAXPROCS(0))
	}
	return &Searcher{cfg: cfg, host: cfg.Host, cache: map[searchKey]*searchFound{}, running: map[searchKey]chan struct{}{}}
}

// Close closes the host the search opened, if it did. Cached results stay
// readable through Cached; new searches fail with ErrClosed.
func (o *Searcher) Close(ctx context.Context) error {
	o.mu.Lock()
	h, own := o.host, o.ownHost
	o.closed, o.host, o.ownHost = true, nil, false
	o.mu.Unlock()
	if own {
		return h.Close(ctx)
	}
	return nil
}

// Cached returns the result for sc under k if a search made it already.
func (o *Searcher) Cached(sc *scenario.Scenario, k scenario.Knobs) (Result, bool) {
	o.mu.Lock()
	f := o.cache[searchKey{fingerprint(sc), k}]
	o.mu.Unlock()
	if f == nil {
		return Result{}, false
	}
	return f.result(sc, true), true
}

// Search explores sc's move graph under k on the server, or answers from
// the cache. progress, if set, is told how many states the search has
// found so far; calls never overlap.
func (o *Searcher) Search(ctx context.Context, sc *scenario.Scenario, k scenario.Knobs, progress func(states int)) (Result, error) {
	rs, err := o.search(ctx, sc, []scenario.Knobs{k}, progress)
	if err != nil {
		return Result{}, err
	}
	return rs[0], nil
}

// SearchAll explores sc under all six knob settings, in the order of
// scenario.AllKnobs, several settings at once. progress is told the
// states found so far over all settings.
func (o *Searcher) SearchAll(ctx context.Context, sc *scenario.Scenario, progress func(states int)) ([]Result, error) {
	return o.search(ctx, sc, scenario.AllKnobs(), progress)
}

func (o *Searcher) search(ctx context.Context, sc *scenario.Scenario, ks []scenario.Knobs, progress func(states int)) ([]Result, error) {
	if sc == nil {
		return nil, errors.New("no scenario to explore")
	}
	for _, k := range ks {
		if err := k.Check(); err != nil {
			return nil, err
		}
	}
	fp := fingerprint(sc)
	out := make([]Result, len(ks))
	// Each setting is answered from the cache, waited for when another
	// call is searching it, or searched here.
	var mine, waits []int
	o.mu.Lock()
	for i, k := range ks {
		key := searchKey{fp, k}
		switch {
		case o.cache[key] != nil:
			out[i] = o.cache[key].result(sc, true)
		case o.running[key] != nil:
			waits = append(waits, i)
		default:
			o.running[key] = make(chan struct{})
			mine = append(mine, i)
		}
	}
	o.mu.Unlock()
	if len(mine) > 0 {
		err := o.searchOn(ctx, sc, fp, ks, mine, out, progress)
		// Done, well or not: whoever waits may look in the cache now. Not
		// deferred, so two calls that wait for each other's settings
		// cannot wait forever.
		o.mu.Lock()
		for _, i := range mine {
			key := searchKey{fp, ks[i]}
			close(o.running[key])
			delete(o.running, key)
		}
		o.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	for _, i := range waits {
		o.mu.Lock()
		ch := o.running[searchKey{fp, ks[i]}]
		o.mu.Unlock()
		if ch != nil {
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		// The other search may have failed: then search here.
		r, err := o.Search(ctx, sc, ks[i], progress)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// searchOn searches the settings ks[i] for i in todo, in lanes, and caches
// each result.
func (o *Searcher) searchOn(ctx context.Context, sc *scenario.Scenario, fp string, ks []scenario.Knobs, todo []int, out []Result, progress func(states int)) error {
	h, err := o.hostFor(ctx)
	if err != nil {
		return err
	}
	var (
		mu          sync.Mutex
		next, total int
	)
	count := func(n int) {
		mu.Lock()
		defer mu.Unlock()
		total += n
		if progress != nil {
			progress(total)
		}
	}
	lanes := min(o.cfg.Lanes, len(todo), max(1, h.RunConns()))
	g, gctx := errgroup.WithContext(ctx)
	for range lanes {
		g.Go(func() (err error) {
			defer engine.CatchPanic(&err)
			var ln *lane
			defer func() {
				if ln != nil {
					cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engine.CloseTimeout)
					defer cancel()
					err = errors.Join(err, ln.m.Close(cctx))
				}
			}()
			for {
				mu.Lock()
				j := next
				next++
				mu.Unlock()
				if j >= len(todo) {
					return nil
				}
				i := todo[j]
				if ln == nil {
					if ln, err = openLane(gctx, h, sc, ks[i], o.replay); err != nil {
						return err
					}
				}
				f, err := ln.explore(gctx, sc, ks[i], count)
				if err != nil {
					return fmt.Errorf("exploring %s under %s: %w", sc.Name, ks[i], err)
				}
				o.mu.Lock()
				o.cache[searchKey{fp, ks[i]}] = f
				o.mu.Unlock()
				out[i] = f.result(sc, false)
			}
		})
	}
	return g.Wait()
}

// hostFor is the host searches play on, opened on first use from the DSN.
func (o *Searcher) hostFor(ctx context.Context) (*engine.Host, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, ErrClosed
	}
	if o.host != nil {
		return o.host, nil
	}
	if o.cfg.DSN == "" {
		return nil, errors.New("no server to explore on: give a host or a DSN")
	}
	h, err := engine.OpenHost(ctx, engine.HostConfig{DSN: o.cfg.DSN, MaxConns: int32(o.cfg.Lanes)})
	if err != nil {
		return nil, err
	}
	o.host, o.ownHost = h, true
	return h, nil
}

// fingerprint names a scenario for the cache: its name, its times and
// everything a move's result depends on, so an edited file with the same
// name is not answered from an older search.
func fingerprint(sc *scenario.Scenario) string {
	type ev struct {
		T         int64
		Actor     string
		Action    scenario.Action
		Heartbeat string
		Snapshot  *scenario.Lease
		Fence     *int64
		Value     json.RawMessage
	}
	body := struct {
		Lease    string
		Window   scenario.Window
		TTL      int64
		Initial  *scenario.Lease
		Resource scenario.ResourceState
		Events   []ev
	}{sc.Lease, sc.Window, sc.TTL, sc.Initial, sc.Resource, nil}
	for _, e := range sc.Events {
		body.Events = append(body.Events, ev{e.T, e.Actor, e.Action, e.Heartbeat, e.Snapshot, e.Fence, e.Value})
	}
	b, err := json.Marshal(body)
	if err != nil {
		// Every field is plain data; should it ever fail, no two
		// scenarios share a key.
		b = fmt.Appendf(nil, "%p", sc)
	}
	sum := sha256.Sum256(b)
	var names []string
	for _, n := range sc.TimeNames() {
		names = append(names, n+"="+strconv.FormatInt(sc.Times[n], 10))
	}
	return sc.Name + " " + strings.Join(names, ",") + " " + hex.EncodeToString(sum[:12])
}

// lane is one machine the search plays moves on.
type lane struct {
	m *engine.Machine
	// g and at are the search and the node being expanded.
	g  *graph
	at int
}

func openLane(ctx context.Context, h *engine.Host, sc *scenario.Scenario, k scenario.Knobs, replay bool) (*lane, error) {
	m, err := engine.OpenMachine(ctx, h, sc, k)
	if err != nil {
		return nil, err
	}
	ln := &lane{m: m}
	if replay {
		m.ReplayInstead(func() []scenario.Move { return ln.g.path(ln.at) })
	}
	return ln, nil
}

// stateNode is one state of the move graph.
type stateNode struct {
	s        world.State
	edges    []moveEdge
	terminal bool
	verdict  string
	// parent and via are how the search first reached the node, for
	// replaying its path.
	parent int
	via    scenario.Move
}

// moveEdge is one move from a state: where it leads and which goal
// predicates hold after it (bit i: scenario.Predicates()[i]).
type moveEdge struct {
	mv    scenario.Move
	to    int
	goals uint32
}

// searchFound is a finished search, as the cache keeps it.
type searchFound struct {
	scenario                  string
	knobs                     scenario.Knobs
	states, moves, restores   int
	runs, conflict, blocked   *big.Int
	safe                      *big.Int
	shortConflict, shortBlock []scenario.Move
	// per predicate, in scenario.Predicates() order
	reach []predicateReach
	took  time.Duration
}

type predicateReach struct {
	runs  *big.Int
	moves []scenario.Move
	cut   string
}

func (f *searchFound) result(sc *scenario.Scenario, cached bool) Result {
	r := Result{
		Scenario: f.scenario, Knobs: f.knobs, States: f.states, Moves: f.moves, Restores: f.restores,
		Runs: new(big.Int).Set(f.runs), Conflict: new(big.Int).Set(f.conflict),
		Blocked: new(big.Int).Set(f.blocked), Safe: new(big.Int).Set(f.safe),
		ShortestConflict: slices.Clone(f.shortConflict), ShortestBlocked: slices.Clone(f.shortBlock),
		Took: f.took, Cached: cached,
	}
	for _, g := range sc.Goals() {
		i := slices.Index(scenario.Predicates(), g.When)
		gr := GoalReach{Goal: g, Runs: new(big.Int)}
		if i >= 0 {
			gr.Runs.Set(f.reach[i].runs)
			gr.Par, gr.Moves = len(f.reach[i].moves), slices.Clone(f.reach[i].moves)
			gr.Cut = f.reach[i].cut
		}
		r.Goals = append(r.Goals, gr)
	}
	return r
}

// graph is one search in progress.
type graph struct {
	nodes   []stateNode
	index   map[string]int
	onStack []bool
	moves   int
	count   func(int)
	// cuts gathers what the moves answered, for naming what cuts the
	// path to a goal no run reaches.
	cuts world.Cuts
	// key is room for the key of the state just reached.
	key []byte
}

// explore searches the move graph of sc under k on the lane's machine.
func (ln *lane) explore(ctx context.Context, sc *scenario.Scenario, k scenario.Knobs, count func(int)) (*searchFound, error) {
	start := time.Now()
	if err := ln.m.Reset(ctx, sc, k); err != nil {
		return nil, err
	}
	restores := ln.m.Restores()
	g := &graph{index: map[string]int{}, count: count}
	ln.g = g
	root := ln.m.State()
	g.key = root.AppendKey(g.key[:0])
	g.add(string(g.key), root, -1, scenario.Move{})
	count(1)
	if err := ln.expand(ctx, g, 0); err != nil {
		return nil, err
	}
	f := g.summarise(sc, k)
	f.restores = ln.m.Restores() - restores
	f.took = time.Since(start)
	return f, nil
}

// add makes s, with its key, a node reached from parent by via.
func (g *graph) add(key string, s world.State, parent int, via scenario.Move) int {
	i := len(g.nodes)
	g.nodes = append(g.nodes, stateNode{s: s, parent: parent, via: via})
	g.onStack = append(g.onStack, false)
	g.index[key] = i
	return i
}

// expand makes every move enabled in node i, each on the server, and
// expands each new state it leads to, depth first.
func (ln *lane) expand(ctx context.Context, g *graph, i int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.onStack[i] = true
	defer func() { g.onStack[i] = false }()
	n := &g.nodes[i]
	opts := n.s.Options(n.s.Now(), false)
	if !slices.ContainsFunc(opts, func(o world.Option) bool { return o.Move.Actor != scenario.ClockActor }) {
		n.terminal = true
		n.verdict = n.s.Verdict()
		return nil
	}
	preds := scenario.Predicates()
	for _, o := range opts {
		ln.m.SetState(g.nodes[i].s)
		ln.at = i
		st, err := ln.m.Apply(ctx, o.Move)
		if err != nil {
			return fmt.Errorf("move %s after %s: %w", o.Move, scenario.FormatMoves(g.path(i)), err)
		}
		g.moves++
		from := &g.nodes[i].s // expanding the moves before may have moved g.nodes
		g.cuts.Observe(from, st)
		var bits uint32
		for b, p := range preds {
			if from.Reached(p, st) {
				bits |= 1 << b
			}
		}
		next := ln.m.State()
		g.key = next.AppendKey(g.key[:0])
		to, seen := g.index[string(g.key)]
		if seen && g.onStack[to] {
			return fmt.Errorf("move %s after %s leads back to a state on the path: the moves never end", o.Move, scenario.FormatMoves(g.path(i)))
		}
		if !seen {
			if len(g.nodes) >= MaxStates {
				return ErrTooManyStates
			}
			to = g.add(string(g.key), next, i, o.Move)
			g.count(1)
		}
		g.nodes[i].edges = append(g.nodes[i].edges, moveEdge{mv: o.Move, to: to, goals: bits})
		if !seen {
			if err := ln.expand(ctx, g, to); err != nil {
				return err
			}
		}
	}
	return nil
}

// path is the moves by which the search first reached node i.
func (g *graph) path(i int) []scenario.Move {
	var out []scenario.Move
	for ; i > 0; i = g.nodes[i].parent {
		out = append(out, g.nodes[i].via)
	}
	slices.Reverse(out)
	return out
}

// summarise counts the complete runs from each state, by verdict and by
// goal, and finds the shortest move lists, all in memory.
func (g *graph) summarise(sc *scenario.Scenario, k scenario.Knobs) *searchFound {
	n := len(g.nodes)
	preds := scenario.Predicates()
	order := g.postOrder()
	runs := make([]*big.Int, n)
	byVerdict := map[string][]*big.Int{}
	for _, v := range scenario.Verdicts() {
		byVerdict[v] = make([]*big.Int, n)
	}
	// avoid[p][i] counts the complete runs from i on which p never holds.
	avoid := make([][]*big.Int, len(preds))
	for p := range avoid {
		avoid[p] = make([]*big.Int, n)
	}
	for _, i := range order {
		nd := &g.nodes[i]
		runs[i] = new(big.Int)
		for _, v := range scenario.Verdicts() {
			byVerdict[v][i] = new(big.Int)
		}
		for p := range preds {
			avoid[p][i] = new(big.Int)
		}
		if nd.terminal {
			runs[i].SetInt64(1)
			byVerdict[nd.verdict][i].SetInt64(1)
			for p := range preds {
				avoid[p][i].SetInt64(1)
			}
			continue
		}
		for _, e := range nd.edges {
			runs[i].Add(runs[i], runs[e.to])
			for _, v := range scenario.Verdicts() {
				byVerdict[v][i].Add(byVerdict[v][i], byVerdict[v][e.to])
			}
			for p := range preds {
				if e.goals&(1<<p) == 0 {
					avoid[p][i].Add(avoid[p][i], avoid[p][e.to])
				}
			}
		}
	}
	f := &searchFound{
		scenario: sc.Name, knobs: k, states: n, moves: g.moves,
		runs: runs[0], conflict: byVerdict[scenario.VerdictConflict][0],
		blocked: byVerdict[scenario.VerdictBlocked][0], safe: byVerdict[scenario.VerdictSafe][0],
	}

	// Breadth first from the initial state: the fewest moves to each
	// state, and a move list that takes them.
	dist := make([]int, n)
	parent := make([]int, n)
	via := make([]scenario.Move, n)
	for i := range dist {
		dist[i] = -1
	}
	dist[0] = 0
	queue := []int{0}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, e := range g.nodes[i].edges {
			if dist[e.to] < 0 {
				dist[e.to], parent[e.to], via[e.to] = dist[i]+1, i, e.mv
				queue = append(queue, e.to)
			}
		}
	}
	pathTo := func(i int) []scenario.Move {
		out := []scenario.Move{}
		for ; i != 0; i = parent[i] {
			out = append(out, via[i])
		}
		slices.Reverse(out)
		return out
	}
	// The shortest prefix whose run so far has the verdict.
	shortest := func(verdict string) []scenario.Move {
		best := -1
		for i := range g.nodes {
			if dist[i] >= 0 && g.nodes[i].s.Verdict() == verdict && (best < 0 || dist[i] < dist[best]) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		return pathTo(best)
	}
	f.shortConflict = shortest(scenario.VerdictConflict)
	f.shortBlock = shortest(scenario.VerdictBlocked)
	f.reach = make([]predicateReach, len(preds))
	for p := range preds {
		r := predicateReach{runs: new(big.Int).Sub(runs[0], avoid[p][0])}
		bestFrom, bestLen := -1, 0
		var bestMove scenario.Move
		for i := range g.nodes {
			if dist[i] < 0 {
				continue
			}
			for _, e := range g.nodes[i].edges {
				if e.goals&(1<<p) != 0 && (bestFrom < 0 || dist[i]+1 < bestLen) {
					bestFrom, bestLen, bestMove = i, dist[i]+1, e.mv
				}
			}
		}
		if bestFrom >= 0 {
			r.moves = append(pathTo(bestFrom), bestMove)
		} else {
			r.cut = g.cuts.Cut(preds[p])
		}
		f.reach[p] = r
	}
	return f
}

// postOrder lists the nodes children first, so every count a node needs is
// made before it.
func (g *graph) postOrder() []int {
	done := make([]bool, len(g.nodes))
	out := make([]int, 0, len(g.nodes))
	type frame struct{ i, e int }
	stack := []frame{{0, 0}}
	done[0] = true
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		edges := g.nodes[top.i].edges
		if top.e < len(edges) {
			to := edges[top.e].to
			top.e++
			if !done[to] {
				done[to] = true
				stack = append(stack, frame{to, 0})
			}
			continue
		}
		out = append(out, top.i)
		stack = stack[:len(stack)-1]
	}
	return out
}

// WithPar adds to each goal record of r's scenario and knobs the par the
// search found; records of other knobs or goals are left as they are. A
// function, not a method: Result is world's type.
func WithPar(r Result, recs []transcript.GoalRecord) []transcript.GoalRecord {
	out := slices.Clone(recs)
	for i := range out {
		if out[i].Knobs != r.Knobs {
			continue
		}
		for _, g := range r.Goals {
			if g.Goal.ID == out[i].ID {
				out[i].Par = &transcript.Par{Moves: g.Par, Path: scenario.FormatMoves(g.Moves), Runs: g.Runs.String(), Of: r.Runs.String(), Cut: g.Cut}
			}
		}
	}
	return out
}
