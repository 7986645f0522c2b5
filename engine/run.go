// Package engine plays leaserace's runs: a scenario (window, TTL, initial
// rows) plus an ordered log of moves, each move real SQL on PostgreSQL or
// a real HTTP write to the resource. A Run is a cursor over its log: it
// steps, steps back, seeks and switches knobs by replaying a prefix of the
// log, live on a server or from recorded transcripts.
package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
)

// ErrEnd is returned by Next when every move of the log has run.
var ErrEnd = errors.New("the run has no more moves")

// ErrRecorded is returned by what only a live run can do (play a new
// move, switch scenario) when the run shows recordings.
var ErrRecorded = errors.New("a recorded run can only show what was recorded")

// Config says what a live Run plays and where.
type Config struct {
	// DSN reaches the PostgreSQL server. It may hold a password.
	DSN      string
	Scenario *scenario.Scenario
	Knobs    scenario.Knobs
	// Log is the run's moves; nil means the scenario's events.
	Log []scenario.Move
	// Host is shared with other runs (a room); nil means the run makes
	// a host of its own on DSN and closes it with the run.
	Host *Host
	// Who names the attendee in pg_stat_activity ("" outside a room).
	Who string
	// Provider and ServerVersion only label transcripts.
	Provider      string
	ServerVersion string
}

// backend turns moves into steps: live on a server, or from recordings.
type backend interface {
	// reset returns to the initial state with knobs k; a recording
	// returns the log it holds for k (nil: the run's log stands).
	reset(ctx context.Context, sc *scenario.Scenario, k scenario.Knobs) ([]scenario.Move, error)
	// apply makes one move and returns its step.
	apply(ctx context.Context, mv scenario.Move) (transcript.Step, error)
	// settle waits for whatever reset may still be under way after
	// reset, and reports how it went.
	settle() error
	reconnect(ctx context.Context, sc *scenario.Scenario, k scenario.Knobs) error
	close(ctx context.Context) error
	schema() string
	meta() *transcript.Meta
}

// Run is a scenario and a log of moves, with a cursor: how many moves have
// run and the logical time on show. Live runs and recorded replays are both
// Runs; only how a move becomes a step differs. A Run serialises its own
// calls, so a UI may call it from background commands.
type Run struct {
	mu    sync.Mutex
	be    backend
	sc    *scenario.Scenario
	knobs scenario.Knobs
	// log is every move, played or not; steps are those of log[:len(steps)].
	log   []scenario.Move
	steps []transcript.Step
	// states, for a live run, are the world after each step, kept while
	// steps is: a step back restores one instead of replaying.
	states []world.State
	now    int64
}

// restorer is a backend that can put the server back into a state it was
// in after some step, in a constant number of round trips.
type restorer interface {
	// state is a copy of the world after the last move.
	state() world.State
	// restore puts the server and the backend into to.
	restore(ctx context.Context, to world.State) error
}

// Open creates the run's schema on the server, readies its state at the
// resource and resets both to the scenario's initial state.
func Open(ctx context.Context, cfg Config) (_ *Run, err error) {
	if cfg.Scenario == nil {
		return nil, errors.New("no scenario to run")
	}
	if err := cfg.Knobs.Check(); err != nil {
		return nil, err
	}
	l := &live{host: cfg.Host, who: cfg.Who, provider: cfg.Provider, version: cfg.ServerVersion}
	if l.schemaName, err = randomSchema("lr_"); err != nil {
		return nil, err
	}
	if l.host == nil {
		if l.host, err = OpenHost(ctx, HostConfig{DSN: cfg.DSN, MaxConns: 2}); err != nil {
			return nil, err
		}
		l.ownHost = true
	}
	r := &Run{be: l, sc: cfg.Scenario, knobs: cfg.Knobs, log: cfg.Log}
	if r.log == nil {
		r.log = cfg.Scenario.Log()
	}
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CloseTimeout)
			defer cancel()
			_ = r.Close(cctx)
		}
	}()
	if err := l.attach(ctx, cfg.Knobs.Fencing); err != nil {
		return nil, err
	}
	if err := r.reset(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Close drops the run's schema and its state at the resource, and stops
// the host if the run made it.
func (r *Run) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.be.close(ctx)
}

// Reconnect connects again and replays to the same position: the way back
// after PostgreSQL restarted or a connection was reset.
func (r *Run) Reconnect(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.be.reconnect(ctx, r.sc, r.knobs); err != nil {
		return err
	}
	// Reset and replay from the start rather than trust what the server
	// kept: a restarted server may have lost the last commits
	// (synchronous_commit is off on the local cluster), and a step that
	// failed midway may have changed rows the engine never read back.
	pos, now := len(r.steps), r.now
	if err := r.rewind(ctx); err != nil {
		return err
	}
	return r.replay(ctx, pos, now)
}

// Replace switches a live run to another scenario (typically the same one
// with other times) and its default log, with knobs k, reusing its schema
// and its state at the resource, and resets. Explore sweeps hundreds of
// variants this way.
func (r *Run) Replace(ctx context.Context, sc *scenario.Scenario, k scenario.Knobs) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.be.(*live); !ok {
		return ErrRecorded
	}
	if sc == nil {
		return errors.New("no scenario to run")
	}
	if err := k.Check(); err != nil {
		return err
	}
	r.sc, r.knobs, r.log = sc, k, sc.Log()
	return r.reset(ctx)
}

// Reset returns to the initial state at the start time.
func (r *Run) Reset(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reset(ctx)
}

func (r *Run) reset(ctx context.Context) error {
	if err := r.rewind(ctx); err != nil {
		return err
	}
	return r.be.settle()
}

// rewind is reset, but part of the reset may still be under way when it
// returns: a replay that follows lets its first moves overlap it.
func (r *Run) rewind(ctx context.Context) error {
	log, err := r.be.reset(ctx, r.sc, r.knobs)
	if err != nil {
		return err
	}
	if log != nil {
		r.log = log
	}
	r.steps, r.states, r.now = nil, nil, r.start()
	return nil
}

// Next runs the next move of the log and returns its step; ErrEnd after
// the last.
func (r *Run) Next(ctx context.Context) (transcript.Step, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.steps) >= len(r.log) {
		return transcript.Step{}, ErrEnd
	}
	return r.next(ctx)
}

func (r *Run) next(ctx context.Context) (transcript.Step, error) {
	pos := len(r.steps)
	mv := r.log[pos]
	st, err := r.be.apply(ctx, mv)
	if err != nil {
		var ne *world.NotEnabledError
		if errors.As(err, &ne) {
			return transcript.Step{}, fmt.Errorf("step %d: %w", pos+1, err)
		}
		return transcript.Step{}, fmt.Errorf("step %d (t=%d, %s %s): %w", pos+1, mv.T, mv.Actor, mv.Action, explainFault(err))
	}
	r.steps = append(r.steps, st)
	if rs, ok := r.be.(restorer); ok && len(r.states) == len(r.steps)-1 {
		r.states = append(r.states, rs.state())
	}
	r.now = mv.T
	if l, ok := r.be.(*live); ok && len(r.steps) == len(r.log) {
		l.tracePlayed(r.sc.Name, r.knobs)
	}
	return st, nil
}

// Play makes mv the next move: the log is cut at the cursor (a path not
// taken is forgotten) and mv runs now. A move that is not possible here
// fails with *world.NotEnabledError and leaves the log as it was.
func (r *Run) Play(ctx context.Context, mv scenario.Move) (transcript.Step, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.be.(*live); !ok {
		return transcript.Step{}, ErrRecorded
	}
	pos := len(r.steps)
	if mv.T < r.now {
		return transcript.Step{}, &world.NotEnabledError{Move: mv, Why: fmt.Sprintf("the cursor is at t=%d, and time does not run backwards", r.now)}
	}
	old := r.log
	r.log = append(slices.Clip(r.log[:pos]), mv)
	st, err := r.next(ctx)
	if err != nil {
		r.log = old
		return st, err
	}
	return st, nil
}

// Seek moves to just after n moves: forward by running them, backward by
// resetting and replaying.
func (r *Run) Seek(ctx context.Context, n int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n = max(0, min(n, len(r.log)))
	now := r.start()
	if n > 0 {
		now = r.log[n-1].T
	}
	return r.replay(ctx, n, now)
}

// SeekTime moves the cursor to logical time t, with every move at or
// before t made.
func (r *Run) SeekTime(ctx context.Context, t int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t = max(r.start(), t)
	n := 0
	for n < len(r.log) && r.log[n].T <= t {
		n++
	}
	return r.replay(ctx, n, t)
}

// SeekView brings the run back to a view it showed: pos moves made with
// the cursor at now, by move when now is that move's time (or the start),
// by time when the cursor had been ticked past it.
func (r *Run) SeekView(ctx context.Context, pos int, now int64) error {
	log := r.Log()
	if (pos == 0 && now <= r.Start()) || (pos > 0 && pos <= len(log) && log[pos-1].T == now) {
		return r.Seek(ctx, pos)
	}
	return r.SeekTime(ctx, now)
}

// replay brings the run to n moves made and the cursor at now. Going back,
// a live run restores the state after move n (the coordinator's row and the
// resource, one round trip each, at once), whatever n is; otherwise it
// resets and replays the first n moves.
func (r *Run) replay(ctx context.Context, n int, now int64) (err error) {
	if n < len(r.steps) {
		rs, ok := r.be.(restorer)
		if ok && n > 0 && len(r.states) == len(r.steps) {
			to := r.states[n-1]
			// Whatever happens, the states after n no longer match the
			// server; a failed restore leaves none to restore from.
			r.states = slices.Clip(r.states[:n])
			if err := rs.restore(ctx, to); err != nil {
				r.states = nil
				return err
			}
			r.steps = slices.Clip(r.steps[:n])
			r.now = now
			return nil
		}
		if err := r.rewind(ctx); err != nil {
			return err
		}
	}
	defer func() {
		if serr := r.be.settle(); err == nil {
			err = serr
		}
	}()
	n = min(n, len(r.log))
	for len(r.steps) < n {
		if _, err := r.next(ctx); err != nil {
			return err
		}
	}
	r.now = now
	return nil
}

// PlayAll runs every remaining move.
func (r *Run) PlayAll(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replay(ctx, len(r.log), r.endOfLog())
}

func (r *Run) endOfLog() int64 {
	if n := len(r.log); n > 0 {
		return r.log[n-1].T
	}
	return r.start()
}

// Change is what a knob toggle did to the run at the cursor; the type is
// world's, so that the renderer can hold one without the engine.
type Change = world.Change

// SetKnobs changes the settings and replays the log up to the same
// position and time: on the server for a live run, from the recording
// made with k for a replay (one that ends earlier shows its last step).
func (r *Run) SetKnobs(ctx context.Context, k scenario.Knobs) (Change, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := k.Check(); err != nil {
		return Change{}, err
	}
	ch := Change{From: r.knobs, To: k, Before: r.outcome()}
	pos, now := len(r.steps), r.now
	old := r.knobs
	r.knobs = k
	if err := r.rewind(ctx); err != nil {
		r.knobs = old
		return ch, err
	}
	if pos > len(r.log) {
		pos = len(r.log)
		now = r.endOfLog()
	}
	if err := r.replay(ctx, pos, now); err != nil {
		return ch, err
	}
	ch.After = r.outcome()
	ch.Lines = diffOutcomes(ch.Before, ch.After)
	return ch, nil
}

// diffOutcomes says in words what a knob toggle changed.
func diffOutcomes(a, b transcript.Outcome) []string {
	var out []string
	if a.Effects != b.Effects {
		out = append(out, fmt.Sprintf("effects %d → %d", a.Effects, b.Effects))
	}
	if a.Verdict != b.Verdict {
		out = append(out, fmt.Sprintf("verdict %s → %s", a.Verdict, b.Verdict))
	}
	ca, cb := a.Coordinator, b.Coordinator
	switch {
	case ca != nil && cb != nil:
		if ca.Owner != cb.Owner {
			out = append(out, fmt.Sprintf("owner %s → %s", ca.Owner, cb.Owner))
		}
		if ca.Fence != cb.Fence {
			out = append(out, fmt.Sprintf("fence %d → %d", ca.Fence, cb.Fence))
		}
		if ca.ExpiresAt != cb.ExpiresAt {
			out = append(out, fmt.Sprintf("expires %d → %d", ca.ExpiresAt, cb.ExpiresAt))
		}
	case ca == nil && cb != nil:
		out = append(out, "lease row appears")
	case ca != nil && cb == nil:
		out = append(out, "lease row gone")
	}
	if a.Resource.Fence != b.Resource.Fence {
		out = append(out, fmt.Sprintf("stored fence %d → %d", a.Resource.Fence, b.Resource.Fence))
	}
	if len(out) == 0 {
		out = append(out, "no change at this step")
	}
	return out
}

// View is the state at the cursor, for rendering; the type is world's, so
// that the renderer can hold one without the engine.
type View = world.View

// View reports the state at the cursor. Messages in flight are marked
// stale at the cursor's time, which may be past the last move.
func (r *Run) View() View {
	r.mu.Lock()
	defer r.mu.Unlock()
	coord, res, flight, beliefs := r.state()
	return View{
		Now: r.now, Pos: len(r.steps), Coordinator: coord.Clone(), Resource: res,
		InFlight: world.MarkStale(flight, coord, r.now), Beliefs: slices.Clone(beliefs),
		Outcome: r.outcome(), Knobs: r.knobs,
	}
}

// state is the coordinator, resource, network and beliefs after the last
// step, or as the scenario starts.
func (r *Run) state() (*scenario.Lease, transcript.ResourceSnap, []transcript.Message, []transcript.Belief) {
	if n := len(r.steps); n > 0 {
		st := r.steps[n-1]
		return st.Coordinator, st.Resource.Clone(), st.InFlight, st.Beliefs
	}
	res := transcript.ResourceSnap{Fence: r.sc.Resource.Fence, Value: r.sc.Resource.Value, Effects: []scenario.Effect{}}
	w := world.New(r.sc, r.knobs, res)
	return r.sc.Initial, res, nil, w.Beliefs(r.now)
}

// outcome sums up the state at the cursor with the one verdict rule.
func (r *Run) outcome() transcript.Outcome {
	coord, res, _, _ := r.state()
	return transcript.OutcomeOf(coord.Clone(), res, r.sc.Resource.Fence)
}

// Transcript is the run so far, with its digest and its log.
func (r *Run) Transcript() (transcript.Transcript, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return TranscriptOf(r.sc, r.knobs, slices.Clone(r.steps), r.be.meta())
}

// TranscriptOf is the transcript of steps played from sc's start under k,
// sealed with its digest: a run's, or a schedule's played on a Machine.
// A run that left the script gets its Played section: which named times
// its moves played.
func TranscriptOf(sc *scenario.Scenario, k scenario.Knobs, steps []transcript.Step, meta *transcript.Meta) (transcript.Transcript, error) {
	t := transcript.Transcript{
		Format:   transcript.Format,
		Scenario: sc.Name,
		Knobs:    k,
		Initial:  transcript.Initial{Coordinator: sc.Initial.Clone(), Resource: sc.Resource},
		Steps:    steps,
		Meta:     meta,
	}
	res := transcript.ResourceSnap{Fence: sc.Resource.Fence, Value: sc.Resource.Value, Effects: []scenario.Effect{}}
	coord := sc.Initial.Clone()
	if n := len(steps); n > 0 {
		coord, res = steps[n-1].Coordinator.Clone(), steps[n-1].Resource.Clone()
	}
	t.Outcome = transcript.OutcomeOf(coord, res, sc.Resource.Fence)
	if len(sc.Times) > 0 {
		t.Times = sc.Times
	}
	log := make([]scenario.Move, len(steps))
	for i, st := range steps {
		log[i] = st.Move()
	}
	if !world.OnScript(sc, log) {
		PlayedOf(sc, &t)
		world.Renarrate(sc, t.Steps)
	}
	err := t.Seal()
	return t, err
}

// PlayedOf returns t's Played section, making it from sc and t's moves
// when t has none: a run played in play mode or from --moves is a played
// run even where its moves follow the script, and names only the named
// times its moves played.
func PlayedOf(sc *scenario.Scenario, t *transcript.Transcript) *transcript.Played {
	if t.Played == nil {
		log := make([]scenario.Move, len(t.Steps))
		for i, st := range t.Steps {
			log[i] = st.Move()
		}
		t.Played = &transcript.Played{OffScript: !world.OnScript(sc, log), Times: world.TimesPlayed(sc, log)}
	}
	return t.Played
}

// Steps are the steps taken so far: the run's own slice, capped at its
// length. The run never changes a step once taken (it appends, and a step
// back cuts its slice to a new capacity), so a caller may keep them, and
// may know a step by its address, but must not change them.
func (r *Run) Steps() []transcript.Step {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.steps[:len(r.steps):len(r.steps)]
}

// Log is every move of the run, played or not.
func (r *Run) Log() []scenario.Move {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

// Scenario is what this run plays.
func (r *Run) Scenario() *scenario.Scenario {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sc
}

// Schema is the run's own schema on the server; "" for a replay.
func (r *Run) Schema() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.be.schema()
}

// Knobs are the settings in force.
func (r *Run) Knobs() scenario.Knobs {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.knobs
}

// Pos is how many moves have run.
func (r *Run) Pos() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.steps)
}

// Len is how many moves the log holds.
func (r *Run) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.log)
}

// Now is the logical time of the cursor.
func (r *Run) Now() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

// Start is the earliest logical time: the window's start or the first
// move, whichever is earlier.
func (r *Run) Start() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.start()
}

func (r *Run) start() int64 {
	s := r.sc.Start()
	if len(r.log) > 0 && r.log[0].T < s {
		s = r.log[0].T
	}
	return s
}

// End is the latest logical time: the window's end or the last move.
func (r *Run) End() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(r.sc.Window.To, r.endOfLog())
}

// Live reports whether the run plays on a server (false: a replay).
func (r *Run) Live() bool {
	_, ok := r.be.(*live)
	return ok
}

// CloseTimeout bounds cleaning up after a run, a host, a search or a
// server leaserace started: long enough for a busy server to drop schemas
// or a container to terminate, short enough that a dead one cannot hang
// the way out.
const CloseTimeout = 30 * time.Second
