package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/scenario"
)

// ErrEnd is returned by Next when every event has run.
var ErrEnd = errors.New("the scenario has no more events")

// Config says what a Run plays and where.
type Config struct {
	// DSN reaches the PostgreSQL server. It may hold a password.
	DSN      string
	Scenario *scenario.Scenario
	Knobs    scenario.Knobs
	// Provider and ServerVersion only label transcripts.
	Provider      string
	ServerVersion string
}

// Run plays one scenario against PostgreSQL and the resource. Its own schema
// keeps it apart from every other run on the same server. Every forward step
// executes its SQL when it is taken; stepping back resets and replays.
// A Run serialises its own calls, so a UI may call it from commands.
type Run struct {
	mu  sync.Mutex
	cfg Config
	sc  *scenario.Scenario
	sql coordinatorSQL

	knobs  scenario.Knobs
	schema string
	admin  *pgx.Conn
	conns  map[string]*pgx.Conn
	res    *Resource
	rc     *ResourceClient
	hc     *http.Client
	// fencingSet is the policy the resource was last told to use.
	fencingSet scenario.Fencing

	pos   int
	now   int64
	steps []Step
	st    state
	// faults is used only by builds made for fault-injection tests.
	faults faultState //lint:ignore U1000 used by builds with the leaserace_faults tag
}

// faultStage is where in a step a test build may inject a fault.
type faultStage int

const (
	beforeStepSQL faultStage = iota
	afterStepSQL
)

// state is what the engine knows between steps, all of it read from the
// server or the resource except the actors' beliefs and the network.
type state struct {
	coord  *scenario.Lease
	res    ResourceSnap
	caches map[string]*scenario.Lease
	flight []Message
}

// Open creates the run's schema, connects one session per actor, starts the
// resource and resets to the initial state.
func Open(ctx context.Context, cfg Config) (_ *Run, err error) {
	if cfg.Scenario == nil {
		return nil, errors.New("no scenario to run")
	}
	if _, err := scenario.ParseRenewal(string(cfg.Knobs.Renewal)); err != nil {
		return nil, err
	}
	if _, err := scenario.ParseFencing(string(cfg.Knobs.Fencing)); err != nil {
		return nil, err
	}
	sqls, err := loadCoordinatorSQL()
	if err != nil {
		return nil, err
	}
	r := &Run{cfg: cfg, sc: cfg.Scenario, sql: sqls, knobs: cfg.Knobs, conns: map[string]*pgx.Conn{}}
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("cannot make a run id: %w", err)
	}
	r.schema = "lr_" + hex.EncodeToString(b[:])
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = r.Close(cctx)
		}
	}()
	if err := r.connect(ctx); err != nil {
		return nil, err
	}
	if err := r.reset(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Run) connect(ctx context.Context) error {
	var err error
	r.admin, err = r.dial(ctx, "setup")
	if err != nil {
		return err
	}
	if _, err := r.admin.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{r.schema}.Sanitize()); err != nil {
		return fmt.Errorf("cannot create the run's schema: %w", err)
	}
	if _, err := r.admin.Exec(ctx, r.sql.schema); err != nil {
		return fmt.Errorf("cannot create the leases table: %w", err)
	}
	for _, a := range r.sc.Actors() {
		c, err := r.dial(ctx, a)
		if err != nil {
			return err
		}
		r.conns[a] = c
	}
	if r.res == nil {
		r.res, err = StartResource(ctx, ResourceConfig{
			DSN:     r.cfg.DSN,
			Schema:  r.resourceSchema(),
			Fencing: r.knobs.Fencing,
			AppName: "leaserace resource " + r.schema,
		})
		if err != nil {
			return fmt.Errorf("cannot start the resource: %w", err)
		}
		r.fencingSet = r.knobs.Fencing
	}
	if r.hc == nil {
		r.hc = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
	}
	r.rc = NewResourceClient(r.res.URL(), r.hc)
	return nil
}

func (r *Run) resourceSchema() string { return r.schema + "_res" }

// dial opens one session whose application_name names the actor, so
// pg_stat_activity shows who is who, with search_path on the run's schema.
func (r *Run) dial(ctx context.Context, actor string) (*pgx.Conn, error) {
	return dialSession(ctx, r.cfg.DSN, r.schema, "leaserace "+actor+" "+r.schema, actor)
}

// dialSession connects with an application_name and the search_path set
// once, for every session a run or a stress rig opens.
func dialSession(ctx context.Context, dsn, schema, appName, who string) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("cannot read the connection string: %s", RedactDSN(err.Error()))
	}
	cc.RuntimeParams["application_name"] = appName
	cc.RuntimeParams["search_path"] = schema
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to PostgreSQL for %s: %w", who, err)
	}
	return c, nil
}

// Close drops the run's schemas, stops the resource and disconnects.
func (r *Run) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, c := range r.conns {
		_ = c.Close(ctx)
	}
	r.conns = map[string]*pgx.Conn{}
	if r.res != nil {
		errs = append(errs, r.res.Close(ctx))
		r.res = nil
	}
	if r.hc != nil {
		r.hc.CloseIdleConnections()
	}
	errs = append(errs, r.dropSchemas(ctx))
	if r.admin != nil {
		_ = r.admin.Close(ctx)
		r.admin = nil
	}
	return errors.Join(errs...)
}

// dropSchemas drops the run's two schemas (the resource keeps a schema it
// was given by name). After a fault the setup session may be dead while the
// server is back, so a lost session gets one fresh one before giving up:
// otherwise the schemas would stay on the server.
func (r *Run) dropSchemas(ctx context.Context) error {
	drop := func(c *pgx.Conn) error {
		if c == nil || c.IsClosed() {
			return errNotConnected
		}
		for _, s := range []string{r.schema, r.resourceSchema()} {
			if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s}.Sanitize()+" CASCADE"); err != nil {
				return fmt.Errorf("cannot drop the run's schema %s: %w", s, err)
			}
		}
		return nil
	}
	err := drop(r.admin)
	if err == nil || !IsServerGone(err) {
		return err
	}
	c, dialErr := r.dial(ctx, "cleanup")
	if dialErr != nil {
		return fmt.Errorf("cannot drop the run's schemas %s and %s: %w", r.schema, r.resourceSchema(), dialErr)
	}
	defer c.Close(ctx)
	return drop(c)
}

// Reconnect drops every session and the resource's connections, connects
// again and replays to the same position: the way back after PostgreSQL
// restarted or a connection was reset.
func (r *Run) Reconnect(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for a, c := range r.conns {
		_ = c.Close(ctx)
		delete(r.conns, a)
	}
	if r.admin != nil {
		_ = r.admin.Close(ctx)
		r.admin = nil
	}
	if r.res != nil {
		_ = r.res.Close(ctx)
		r.res = nil
	}
	if err := r.connect(ctx); err != nil {
		return err
	}
	// Reset and replay from the start rather than trust what the server
	// kept: a restarted server may have lost the last commits
	// (synchronous_commit is off on the local cluster), and a step that
	// failed midway may have changed rows the engine never read back.
	pos, now := r.pos, r.now
	if err := r.reset(ctx); err != nil {
		return err
	}
	return r.replay(ctx, pos, now)
}

// Replace switches the run to another scenario (typically the same one with
// other times) and knobs, reusing its schema, sessions and resource, and
// resets. Explore sweeps hundreds of variants this way.
func (r *Run) Replace(ctx context.Context, sc *scenario.Scenario, k scenario.Knobs) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sc == nil {
		return errors.New("no scenario to run")
	}
	for _, a := range sc.Actors() {
		if r.conns[a] == nil {
			c, err := r.dial(ctx, a)
			if err != nil {
				return err
			}
			r.conns[a] = c
		}
	}
	r.sc, r.knobs = sc, k
	return r.reset(ctx)
}

// Scenario is what this run plays.
func (r *Run) Scenario() *scenario.Scenario {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sc
}

// Schema is the run's own schema on the server (for psql beside the TUI).
func (r *Run) Schema() string { return r.schema }

// ResourceURL is where the run's resource listens.
func (r *Run) ResourceURL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.res == nil {
		return ""
	}
	return r.res.URL()
}

// Knobs are the settings in force.
func (r *Run) Knobs() scenario.Knobs {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.knobs
}

// Pos is how many events have run.
func (r *Run) Pos() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pos
}

// Len is how many events the scenario has.
func (r *Run) Len() int { return len(r.sc.Events) }

// Now is the logical time of the cursor.
func (r *Run) Now() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

// Start is the earliest logical time: the window's start or the first
// event, whichever is earlier.
func (r *Run) Start() int64 { return startTime(r.sc) }

// End is the latest logical time: the window's end or the last event.
func (r *Run) End() int64 {
	end := r.sc.Window.To
	if n := len(r.sc.Events); n > 0 && r.sc.Events[n-1].T > end {
		end = r.sc.Events[n-1].T
	}
	return end
}

func startTime(sc *scenario.Scenario) int64 {
	if len(sc.Events) > 0 && sc.Events[0].T < sc.Window.From {
		return sc.Events[0].T
	}
	return sc.Window.From
}

// Steps returns a copy of the steps taken so far.
func (r *Run) Steps() []Step {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.steps)
}

// View is the state at the cursor, for rendering.
type View struct {
	Now         int64
	Pos         int
	Coordinator *scenario.Lease
	Resource    ResourceSnap
	InFlight    []Message
	Outcome     Outcome
	Knobs       scenario.Knobs
}

// View reports the state at the cursor.
func (r *Run) View() View {
	r.mu.Lock()
	defer r.mu.Unlock()
	return View{
		Now: r.now, Pos: r.pos, Coordinator: cloneLease(r.st.coord),
		Resource: cloneRes(r.st.res), InFlight: r.flightAt(r.now),
		Outcome: r.outcome(), Knobs: r.knobs,
	}
}

// Reset returns to the initial state at the start time.
func (r *Run) Reset(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reset(ctx)
}

func (r *Run) reset(ctx context.Context) error {
	if r.admin == nil || r.res == nil {
		return fmt.Errorf("cannot reset the run: %w", errNotConnected)
	}
	b := &pgx.Batch{}
	b.Queue(r.sql.clear)
	if in := r.sc.Initial; in != nil {
		b.Queue(r.sql.seed, r.sc.Lease, in.Owner, in.Fence, in.LeaseVersion, in.ExpiresAt)
	}
	if err := r.admin.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("cannot reset the coordinator: %w", err)
	}
	if r.fencingSet != r.knobs.Fencing {
		if err := r.rc.SetFencing(ctx, r.knobs.Fencing); err != nil {
			return fmt.Errorf("cannot set the resource's fencing: %w", viaResource(err))
		}
		r.fencingSet = r.knobs.Fencing
	}
	v, err := r.rc.Reset(ctx, r.sc.Resource.Epoch, r.sc.Resource.Value)
	if err != nil {
		return fmt.Errorf("cannot reset the resource: %w", viaResource(err))
	}
	r.st = state{
		coord:  cloneLease(r.sc.Initial),
		res:    ResourceSnap{Epoch: v.Epoch, Value: v.Value, Effects: []Effect{}},
		caches: map[string]*scenario.Lease{},
	}
	if in := r.sc.Initial; in != nil {
		r.st.caches[in.Owner] = cloneLease(in)
	}
	r.pos, r.now, r.steps = 0, startTime(r.sc), nil
	return nil
}

// Next runs the next event and returns its step; ErrEnd after the last.
func (r *Run) Next(ctx context.Context) (Step, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pos >= len(r.sc.Events) {
		return Step{}, ErrEnd
	}
	return r.next(ctx)
}

func (r *Run) next(ctx context.Context) (Step, error) {
	ev := r.sc.Events[r.pos]
	st, err := r.exec(ctx, ev)
	if err != nil {
		return Step{}, fmt.Errorf("step %d (t=%d, %s %s): %w", r.pos+1, ev.T, ev.Actor, ev.Action, explainFault(err))
	}
	r.steps = append(r.steps, st)
	r.pos++
	r.now = ev.T
	return st, nil
}

// Seek moves to just after n events: forward by running them, backward by
// resetting and replaying.
func (r *Run) Seek(ctx context.Context, n int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n = max(0, min(n, len(r.sc.Events)))
	now := startTime(r.sc)
	if n > 0 {
		now = r.sc.Events[n-1].T
	}
	return r.replay(ctx, n, now)
}

// SeekTime moves the cursor to logical time t, with every event at or
// before t executed.
func (r *Run) SeekTime(ctx context.Context, t int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t = max(startTime(r.sc), t)
	n := 0
	for n < len(r.sc.Events) && r.sc.Events[n].T <= t {
		n++
	}
	return r.replay(ctx, n, t)
}

// replay brings the run to n events executed and the cursor at now,
// resetting first only when it has to go back.
func (r *Run) replay(ctx context.Context, n int, now int64) error {
	if n < r.pos {
		if err := r.reset(ctx); err != nil {
			return err
		}
	}
	for r.pos < n {
		if _, err := r.next(ctx); err != nil {
			return err
		}
	}
	r.now = now
	return nil
}

// Change is what a knob toggle did to the run at the cursor.
type Change struct {
	From, To scenario.Knobs
	Before   Outcome
	After    Outcome
	// Lines say what changed in words: "effects 2 → 1", "owner A → B".
	Lines []string
}

// SetKnobs changes the settings and re-runs the scenario against PostgreSQL
// up to the same position and time.
func (r *Run) SetKnobs(ctx context.Context, k scenario.Knobs) (Change, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := scenario.ParseRenewal(string(k.Renewal)); err != nil {
		return Change{}, err
	}
	if _, err := scenario.ParseFencing(string(k.Fencing)); err != nil {
		return Change{}, err
	}
	ch := Change{From: r.knobs, To: k, Before: r.outcome()}
	pos, now := r.pos, r.now
	r.knobs = k
	if err := r.reset(ctx); err != nil {
		return ch, err
	}
	if err := r.replay(ctx, pos, now); err != nil {
		return ch, err
	}
	ch.After = r.outcome()
	ch.Lines = diffOutcomes(ch.Before, ch.After)
	return ch, nil
}

// Transcript is the run so far, with its digest.
func (r *Run) Transcript() (Transcript, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := Transcript{
		Format:   TranscriptFormat,
		Scenario: r.sc.Name,
		Knobs:    r.knobs,
		Initial:  Initial{Coordinator: cloneLease(r.sc.Initial), Resource: r.sc.Resource},
		Steps:    slices.Clone(r.steps),
		Outcome:  r.outcome(),
		Meta: &Meta{
			Provider: r.cfg.Provider, ServerVersion: r.cfg.ServerVersion,
			RecordedAt: time.Now().UTC().Format(time.RFC3339), Source: r.sc.Source,
		},
	}
	if len(r.sc.Times) > 0 {
		t.Times = r.sc.Times
	}
	if t.Steps == nil {
		t.Steps = []Step{}
	}
	d, err := t.ComputeDigest()
	if err != nil {
		return t, err
	}
	t.Digest = d
	return t, nil
}

// PlayAll runs every remaining event.
func (r *Run) PlayAll(ctx context.Context) error {
	return r.Seek(ctx, len(r.sc.Events))
}

// outcome sums up the current state.
func (r *Run) outcome() Outcome { return outcomeOf(r.st.coord, r.st.res, r.sc.Resource.Epoch) }

// outcomeOf sums up a state the same way for live runs and replays: an
// accepted effect below the highest epoch accepted before it (the initial
// epoch included) is a conflict.
func outcomeOf(coord *scenario.Lease, res ResourceSnap, initialEpoch int64) Outcome {
	o := Outcome{Verdict: scenario.VerdictSafe, Coordinator: cloneLease(coord)}
	o.Resource = scenario.ResourceState{Epoch: res.Epoch, Value: res.Value}
	high := initialEpoch
	for _, e := range res.Effects {
		if !e.Accepted {
			o.Rejected++
			continue
		}
		o.Effects++
		if e.Epoch < high {
			o.Verdict = scenario.VerdictConflict
		}
		high = max(high, e.Epoch)
	}
	return o
}

func cloneLease(l *scenario.Lease) *scenario.Lease {
	if l == nil {
		return nil
	}
	c := *l
	return &c
}

func cloneRes(s ResourceSnap) ResourceSnap {
	s.Effects = slices.Clone(s.Effects)
	if s.Effects == nil {
		s.Effects = []Effect{}
	}
	return s
}

// exec runs one event. Statements that change the coordinator are sent in
// one pipelined batch with the read-back, so a step costs one round trip.
func (r *Run) exec(ctx context.Context, ev scenario.Event) (Step, error) {
	st := Step{T: ev.T, Actor: ev.Actor, Action: ev.Action, Heartbeat: ev.Heartbeat, Args: []any{}}
	prev := cloneLease(r.st.coord)
	r.faultPoint(beforeStepSQL, ev)
	var err error
	switch ev.Action {
	case scenario.ActionSend:
		r.send(ev, &st)
	case scenario.ActionExpire:
		err = r.coordinate(ctx, ev.Actor, &st, r.sql.read, r.sc.Lease)
		if err == nil {
			st.Note = noteExpire(r.st.coord, ev.T, r.flightAt(ev.T))
		}
	case scenario.ActionAcquire:
		err = r.coordinate(ctx, ev.Actor, &st, r.sql.acquire, r.sc.Lease, ev.Actor, ev.T, r.sc.TTL)
		if err == nil {
			if st.Rows == 1 {
				r.st.caches[ev.Actor] = cloneLease(r.st.coord)
			}
			st.Note = noteAcquire(ev.Actor, st.Rows, prev, r.st.coord)
		}
	case scenario.ActionDeliver:
		err = r.deliver(ctx, ev, &st, prev)
	case scenario.ActionEffect:
		err = r.effect(ctx, ev, &st)
	case scenario.ActionWrite:
		err = r.write(ctx, ev.Actor, *ev.Epoch, ev.Value, &st, true)
	default:
		err = fmt.Errorf("unknown action %q", ev.Action)
	}
	if err != nil {
		return st, err
	}
	r.faultPoint(afterStepSQL, ev)
	if ev.Note != "" {
		st.Note += " " + ev.Note
	}
	st.Coordinator = cloneLease(r.st.coord)
	st.Resource = cloneRes(r.st.res)
	st.InFlight = r.flightAt(ev.T)
	return st, nil
}

// coordinate runs one coordinator statement and reads the row back, both in
// one batch on the actor's own session.
func (r *Run) coordinate(ctx context.Context, actor string, st *Step, sql string, args ...any) error {
	conn := r.conns[actor]
	if conn == nil {
		return fmt.Errorf("no session for actor %s: %w", actor, errNotConnected)
	}
	b := &pgx.Batch{}
	isRead := sql == r.sql.read
	if !isRead {
		b.Queue(sql, args...)
	}
	b.Queue(r.sql.read, r.sc.Lease)
	br := conn.SendBatch(ctx, b)
	if !isRead {
		tag, err := br.Exec()
		if err != nil {
			_ = br.Close()
			return fmt.Errorf("coordinator statement failed: %w", err)
		}
		st.Tag, st.Rows = tag.String(), tag.RowsAffected()
	}
	var l scenario.Lease
	err := br.QueryRow().Scan(&l.Owner, &l.Fence, &l.LeaseVersion, &l.ExpiresAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		r.st.coord = nil
	case err != nil:
		_ = br.Close()
		return fmt.Errorf("cannot read the lease back: %w", err)
	default:
		r.st.coord = &l
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("coordinator batch failed: %w", err)
	}
	if isRead {
		st.Tag, st.Rows = "SELECT 0", 0
		if r.st.coord != nil {
			st.Tag, st.Rows = "SELECT 1", 1
		}
	}
	st.SQL, st.Args = sql, args
	return nil
}

func (r *Run) send(ev scenario.Event, st *Step) {
	snap := ev.Snapshot
	if snap == nil {
		snap = r.st.caches[ev.Actor]
	}
	if snap == nil {
		st.Note = fmt.Sprintf("%s holds no lease it knows of, so its heartbeat carries nothing to renew and is dropped.", ev.Actor)
		return
	}
	due := int64(-1)
	for _, e := range r.sc.Events {
		if e.Action == scenario.ActionDeliver && e.Heartbeat == ev.Heartbeat {
			due = e.T
		}
	}
	m := Message{ID: ev.Heartbeat, From: ev.Actor, Sent: ev.T, Due: due, Snapshot: *snap}
	r.st.flight = append(r.st.flight, m)
	st.Note = noteSend(m)
}

func (r *Run) deliver(ctx context.Context, ev scenario.Event, st *Step, prev *scenario.Lease) error {
	i := slices.IndexFunc(r.st.flight, func(m Message) bool { return m.ID == ev.Heartbeat })
	if i < 0 {
		st.Note = fmt.Sprintf("Heartbeat %s was never in flight (its sender held no lease), so nothing arrives.", ev.Heartbeat)
		return nil
	}
	m := r.st.flight[i]
	snap := m.Snapshot
	stale := staleReason(m, r.st.coord, ev.T)
	sql := r.sql.renew(r.knobs.Renewal)
	if err := r.coordinate(ctx, ev.Actor, st, sql, r.sc.Lease, snap.Owner, snap.Fence, snap.LeaseVersion, ev.T, r.sc.TTL); err != nil {
		return err
	}
	r.st.flight = slices.Delete(r.st.flight, i, i+1)
	if st.Rows == 1 && r.st.coord != nil && r.st.coord.Owner == ev.Actor {
		r.st.caches[ev.Actor] = cloneLease(r.st.coord)
	} else {
		// Zero rows tells the sender its epoch is gone: it knows it lost.
		delete(r.st.caches, ev.Actor)
	}
	st.Note = noteDeliver(ev.Actor, r.knobs.Renewal, st.Rows, stale, prev, r.st.coord, m)
	return nil
}

// holds reports whether the actor believes it holds the lease at t.
func (r *Run) holds(actor string, t int64) (*scenario.Lease, bool) {
	c := r.st.caches[actor]
	if c == nil || c.Owner != actor || c.ExpiresAt <= t {
		return c, false
	}
	return c, true
}

func (r *Run) effect(ctx context.Context, ev scenario.Event, st *Step) error {
	lease, ok := r.holds(ev.Actor, ev.T)
	if !ok {
		st.Note = noteSkip(ev.Actor, lease, ev.T)
		return nil
	}
	return r.write(ctx, ev.Actor, lease.Fence, ev.Value, st, false)
}

func (r *Run) write(ctx context.Context, actor string, epoch int64, value json.RawMessage, st *Step, direct bool) error {
	if r.res == nil {
		return fmt.Errorf("no resource to write to: %w", errNotConnected)
	}
	before := r.st.res
	wr, err := r.rc.Write(ctx, actor, epoch, value)
	if err != nil {
		return viaResource(err)
	}
	st.SQL, st.Args, st.Tag, st.Rows = wr.SQL, wr.Args, wr.Tag, wr.Rows
	if st.Args == nil {
		st.Args = []any{}
	}
	status := http.StatusOK
	if !wr.Accepted {
		status = http.StatusConflict
	}
	st.Call = &Call{Method: http.MethodPost, Path: "/writes", Status: status, Accepted: wr.Accepted, Reason: wr.Reason}
	effects := append(slices.Clone(before.Effects), wr.Effect)
	r.st.res = ResourceSnap{Epoch: wr.Epoch, Value: wr.Value, Effects: effects}
	conflict := false
	if wr.Accepted {
		high := r.sc.Resource.Epoch
		for _, e := range before.Effects {
			if e.Accepted {
				high = max(high, e.Epoch)
			}
		}
		conflict = epoch < high
	}
	st.Note = noteWrite(actor, epoch, wr, before.Epoch, conflict, r.knobs.Fencing, direct, r.outcomeEffects())
	return nil
}

func (r *Run) outcomeEffects() int {
	n := 0
	for _, e := range r.st.res.Effects {
		if e.Accepted {
			n++
		}
	}
	return n
}

// flightAt lists the messages in flight at t, each marked stale when the
// epoch it carries is no longer current at the coordinator.
func (r *Run) flightAt(t int64) []Message {
	out := make([]Message, 0, len(r.st.flight))
	for _, m := range r.st.flight {
		m.StaleReason = staleReason(m, r.st.coord, t)
		m.Stale = m.StaleReason != ""
		out = append(out, m)
	}
	return out
}

func staleReason(m Message, cur *scenario.Lease, t int64) string {
	s := m.Snapshot
	switch {
	case cur == nil:
		return "the lease row is gone"
	case cur.Owner != s.Owner || cur.Fence != s.Fence:
		return fmt.Sprintf("%s now holds fence %d", cur.Owner, cur.Fence)
	case cur.LeaseVersion != s.LeaseVersion:
		return fmt.Sprintf("lease_version moved on to %d", cur.LeaseVersion)
	case cur.ExpiresAt <= t:
		return fmt.Sprintf("the lease expired at %d", cur.ExpiresAt)
	}
	return ""
}
