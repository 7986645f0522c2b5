package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgdsn"
	"github.com/leaserace/leaserace/engine/resource"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
)

// live plays moves on PostgreSQL and the resource: it is the world.Server
// of a live run. Every move that talks to the coordinator runs its
// statement on the server, every write is a real HTTP request; what the
// answers mean is decided by the rules of world.State.
type live struct {
	host *Host
	// ownHost is set when the run made its host and closes it.
	ownHost    bool
	schemaName string
	// who names the attendee in application_name ("" outside a room).
	who string
	rc  *resource.Client
	// fencingSet is the policy the resource was last told to use.
	fencingSet scenario.Fencing
	provider   string
	version    string
	// w is what the run knows after its last move.
	w      world.State
	faults faultState //lint:ignore U1000 used by builds with the leaserace_faults tag
	// ready, when set, runs just before a step talks to the coordinator
	// (resource false) or the resource (true): a Machine puts that part of
	// the server into the state the step starts from.
	ready func(ctx context.Context, resource bool) error
	// pending is the resource's reset while it is still under way; see
	// resetTo. known is what the last reset of the resource answered,
	// for the epoch and value it was asked to set.
	pending *pendingReset
	known   *knownReset
}

// pendingReset is a reset of the resource under way.
type pendingReset struct {
	done    <-chan struct{}
	fencing scenario.Fencing
	view    resource.View
	err     error
}

// knownReset is a reset's request and the state the resource answered:
// PostgreSQL gives a jsonb value back in its own spelling.
type knownReset struct {
	epoch    int64
	value    string
	gotEpoch int64
	gotValue json.RawMessage
}

// faultStage is where in a step a test build may inject a fault.
type faultStage int

const (
	beforeStepSQL faultStage = iota
	afterStepSQL
)

// resourceRun is the name of the run's state at the resource.
func (l *live) resourceRun() string { return l.schemaName + "_res" }

// appName is application_name for an actor's statements.
func (l *live) appName(actor string) string {
	if l.who != "" {
		return "leaserace " + l.who + " " + actor + " " + l.schemaName
	}
	return "leaserace " + actor + " " + l.schemaName
}

// attach makes the run's schema and its state at the resource.
func (l *live) attach(ctx context.Context, f scenario.Fencing) error {
	if err := l.host.createSchema(ctx, l.schemaName, l.appName("setup")); err != nil {
		return err
	}
	rc, err := l.host.resourceClient().AddRun(ctx, l.resourceRun(), f)
	if err != nil {
		return fmt.Errorf("cannot start the run's state at the resource: %w", err)
	}
	l.rc, l.fencingSet = rc, f
	return nil
}

// reset puts the coordinator and the resource back to the scenario's
// initial state, with knobs k.
func (l *live) reset(ctx context.Context, sc *scenario.Scenario, k scenario.Knobs) ([]scenario.Move, error) {
	return nil, l.resetTo(ctx, sc, k)
}

func (l *live) resetTo(ctx context.Context, sc *scenario.Scenario, k scenario.Knobs) error {
	if l.rc == nil {
		return fmt.Errorf("cannot reset the run: %w", errNotConnected)
	}
	// A reset still under way is overtaken by this one; what it answered
	// no longer matters.
	_ = l.settle()
	// The coordinator's rows and the resource's state live apart, and
	// nothing reads either until both are reset: reset them at once, so a
	// step back waits for one round trip, not two.
	p := l.startResourceReset(ctx, sc, k)
	err := l.host.send(ctx, l.seedBatch(sc.Lease, sc.Initial), nil)
	// When the resource answered this same reset before, its answer is
	// known, and the coordinator's moves need not wait for it: the first
	// move that talks to the resource does, or the end of the replay
	// (settle). A step back then waits for the coordinator's round trip.
	l.pending = p
	if kr := l.known; err != nil || kr == nil || kr.epoch != sc.Resource.Fence || kr.value != string(sc.Resource.Value) {
		l.known = nil
		if serr := l.settle(); err == nil && serr != nil {
			return serr
		}
		if err != nil {
			return fmt.Errorf("cannot reset the coordinator: %w", err)
		}
		l.known = &knownReset{epoch: sc.Resource.Fence, value: string(sc.Resource.Value), gotEpoch: p.view.Fence, gotValue: p.view.Value}
	}
	l.w = world.New(sc, k, transcript.ResourceSnap{Fence: l.known.gotEpoch, Value: l.known.gotValue, Effects: []scenario.Effect{}})
	return nil
}

func (l *live) state() world.State { return l.w.Clone() }

// restore puts the coordinator's row and the resource into the state to,
// one that a step of this run left: the row cleared and seeded, and the
// resource's epoch and value set with its effects log cut back to to's
// effects. The two are apart and go at once, so a step back waits for one
// round trip whatever its position.
func (l *live) restore(ctx context.Context, to world.State) error {
	if l.rc == nil {
		return fmt.Errorf("cannot step back: %w", errNotConnected)
	}
	if err := l.settle(); err != nil {
		return err
	}
	want := to.Resource()
	done := make(chan struct{})
	var got resource.View
	var rerr error
	go func(rc *resource.Client) {
		defer close(done)
		defer CatchPanic(&rerr)
		got, rerr = rc.Rewind(ctx, want.Fence, want.Value, len(want.Effects))
	}(l.rc)
	err := l.host.send(ctx, l.seedBatch(to.Scenario().Lease, to.Coordinator()), nil)
	<-done
	if err != nil {
		return fmt.Errorf("cannot put the coordinator back: %w", err)
	}
	if rerr != nil {
		return fmt.Errorf("cannot put the resource back: %w", rerr)
	}
	if got.Fence != want.Fence || !bytes.Equal(got.Value, want.Value) {
		return fmt.Errorf("the resource, put back to stored fence %d and value %s, answered stored fence %d and value %s", want.Fence, want.Value, got.Fence, got.Value)
	}
	l.w = to.Clone()
	return nil
}

// startResourceReset resets the resource to sc's initial state under k in
// the background. Until settle, only the goroutine touches the client.
func (l *live) startResourceReset(ctx context.Context, sc *scenario.Scenario, k scenario.Knobs) *pendingReset {
	done := make(chan struct{})
	p := &pendingReset{done: done, fencing: k.Fencing}
	rc, setFencing := l.rc, l.fencingSet != k.Fencing
	// Until the reset is known to have worked, which fencing the resource
	// holds is not known.
	l.fencingSet = ""
	go func() {
		defer close(done)
		defer CatchPanic(&p.err)
		p.view, p.err = resetResource(ctx, rc, sc, k, setFencing)
	}()
	return p
}

// settle waits for a reset of the resource still under way (its request
// ends with the context it was started with) and checks it answered what
// the run already shows.
func (l *live) settle() error {
	p := l.pending
	if p == nil {
		return nil
	}
	<-p.done
	l.pending = nil
	if p.err != nil {
		l.known = nil
		return p.err
	}
	l.fencingSet = p.fencing
	if kr := l.known; kr != nil && (p.view.Fence != kr.gotEpoch || !bytes.Equal(p.view.Value, kr.gotValue)) {
		l.known = nil
		return fmt.Errorf("the resource's reset answered stored fence %d and value %s, where the same reset answered stored fence %d and value %s before", p.view.Fence, p.view.Value, kr.gotEpoch, kr.gotValue)
	}
	return nil
}

// seedBatch is a batch that makes the coordinator's row named lease c, or
// leaves no row for a nil c.
func (l *live) seedBatch(lease string, c *scenario.Lease) *pgx.Batch {
	b := l.host.bound(l.schemaName, l.appName("setup"))
	b.Queue(l.host.sql.clear)
	if c != nil {
		b.Queue(l.host.sql.seed, lease, c.Owner, c.Fence, c.LeaseVersion, c.ExpiresAt)
	}
	return b
}

// resetResource sets the resource's fencing to k's, when setFencing, and
// its state to the scenario's initial one.
func resetResource(ctx context.Context, rc *resource.Client, sc *scenario.Scenario, k scenario.Knobs, setFencing bool) (resource.View, error) {
	if setFencing {
		if err := rc.SetFencing(ctx, k.Fencing); err != nil {
			return resource.View{}, fmt.Errorf("cannot set the resource's fencing: %w", err)
		}
	}
	v, err := rc.Reset(ctx, sc.Resource.Fence, sc.Resource.Value)
	if err != nil {
		return v, fmt.Errorf("cannot reset the resource: %w", err)
	}
	return v, nil
}

// apply makes one move on the server and the resource, by the rules of
// world.State.Apply, and returns its step. A move that is not possible here
// fails with *world.NotEnabledError and changes nothing.
func (l *live) apply(ctx context.Context, mv scenario.Move) (transcript.Step, error) {
	l.faultPoint(beforeStepSQL, mv)
	st, err := l.w.Apply(ctx, l, mv)
	if err != nil {
		return st, err
	}
	l.faultPoint(afterStepSQL, mv)
	return st, nil
}

// Coordinate runs one coordinator statement and reads the row back, both in
// one batch on a pooled connection named for the actor. The read alone is
// sent when stmt is the read itself. The tag is the server's.
func (l *live) Coordinate(ctx context.Context, actor string, stmt world.Statement, args []any) (world.Ran, *scenario.Lease, error) {
	if l.ready != nil {
		if err := l.ready(ctx, false); err != nil {
			return world.Ran{}, nil, err
		}
	}
	sql, err := l.host.sql.statement(stmt)
	if err != nil {
		return world.Ran{}, nil, err
	}
	b := l.host.bound(l.schemaName, l.appName(actor))
	isRead := stmt == world.StmtRead
	if !isRead {
		b.Queue(sql, args...)
	}
	b.Queue(l.host.sql.read, args[0])
	ran := world.Ran{SQL: sql, Args: args}
	var found *scenario.Lease
	err = l.host.send(ctx, b, func(br pgx.BatchResults) error {
		if !isRead {
			tag, err := br.Exec()
			if err != nil {
				return fmt.Errorf("coordinator statement failed: %w", err)
			}
			ran.Tag, ran.Rows = tag.String(), tag.RowsAffected()
		}
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("cannot read the lease back: %w", err)
		}
		for rows.Next() {
			var l scenario.Lease
			if err := rows.Scan(&l.Owner, &l.Fence, &l.LeaseVersion, &l.ExpiresAt); err != nil {
				rows.Close()
				return fmt.Errorf("cannot read the lease back: %w", err)
			}
			found = &l
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("cannot read the lease back: %w", err)
		}
		if isRead {
			tag := rows.CommandTag()
			ran.Tag, ran.Rows = tag.String(), tag.RowsAffected()
		}
		return nil
	})
	if err != nil {
		return world.Ran{}, nil, err
	}
	return ran, found, nil
}

// Write sends one write to the resource over HTTP.
func (l *live) Write(ctx context.Context, actor string, epoch int64, value json.RawMessage) (world.Written, error) {
	if l.rc == nil {
		return world.Written{}, fmt.Errorf("no resource to write to: %w", errNotConnected)
	}
	if err := l.settle(); err != nil {
		return world.Written{}, err
	}
	if l.ready != nil {
		if err := l.ready(ctx, true); err != nil {
			return world.Written{}, err
		}
	}
	wr, err := l.rc.Write(ctx, actor, epoch, value)
	if err != nil {
		return world.Written{}, err
	}
	status := http.StatusOK
	if !wr.Accepted {
		status = http.StatusConflict
	}
	return world.Written{
		Ran:   world.Ran{SQL: wr.SQL, Args: wr.Args, Tag: wr.Tag, Rows: wr.Rows},
		Call:  transcript.Call{Method: http.MethodPost, Path: "/writes", Status: status, Accepted: wr.Accepted, Reason: wr.Reason},
		Fence: wr.Fence, Value: wr.Value, Effect: wr.Effect,
	}, nil
}

// reconnect drops every connection the run's host holds (a run that
// shares a host leaves that to its host), starts the resource again when
// the run owns it, and readies the run's schema and resource state again.
func (l *live) reconnect(ctx context.Context, _ *scenario.Scenario, k scenario.Knobs) error {
	_ = l.settle() // the connections it used are about to go
	l.rc, l.known = nil, nil
	if l.ownHost {
		if err := l.host.restart(ctx); err != nil {
			return err
		}
	}
	err := l.attach(ctx, k.Fencing)
	var ce *resource.CallError
	if errors.As(err, &ce) && ce.Status == http.StatusConflict {
		// The shared resource still holds the run's state: use it.
		l.rc, l.fencingSet, err = l.host.resourceClient().ForRun(l.resourceRun()), "", nil
	}
	return err
}

func (l *live) close(ctx context.Context) error {
	err := l.drop(ctx)
	if l.ownHost {
		err = errors.Join(err, l.host.Close(ctx))
	}
	return err
}

func (l *live) schema() string { return l.schemaName }

func (l *live) meta() *transcript.Meta {
	return &transcript.Meta{Provider: l.provider, ServerVersion: l.version, RecordedAt: time.Now().UTC().Format(time.RFC3339), Source: l.w.Scenario().Source}
}

// drop removes the run's schema and its state at the resource. After a
// fault the server may be back while the pool's connections are dead: the
// pool makes new ones, so the schema does not stay behind.
func (l *live) drop(ctx context.Context) error {
	_ = l.settle()
	var errs []error
	if l.rc != nil {
		if err := l.rc.RemoveRun(ctx); err != nil && !IsResourceDown(err) {
			errs = append(errs, fmt.Errorf("cannot drop the run's state at the resource: %w", err))
		}
		l.rc = nil
	}
	// The resource's schema goes too, even when the resource did not
	// answer: it lives on the same server.
	errs = append(errs, l.host.dropSchema(ctx, l.schemaName), l.host.dropSchema(ctx, l.resourceRun()))
	return errors.Join(errs...)
}

// ResourceURL is where the run's resource listens ("" for a replay).
func (r *Run) ResourceURL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.be.(*live); ok && l.rc != nil {
		return l.rc.URL()
	}
	return ""
}

// PsqlCommand is the psql command line for this run's server and schema;
// see pgdsn.PsqlCommand.
func (r *Run) PsqlCommand() (line string, needsPassword bool, err error) {
	r.mu.Lock()
	l, ok := r.be.(*live)
	r.mu.Unlock()
	if !ok {
		return "", false, errors.New("a replay has no database to open psql on")
	}
	return pgdsn.PsqlCommand(l.host.dsn, l.schemaName)
}

// Options lists the moves enabled at the cursor of a live run, for play
// mode (see world.State.Options). A replay has none.
func (r *Run) Options() []world.Option {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.be.(*live)
	if !ok {
		return nil
	}
	return l.w.Options(r.now, true)
}

// State is a copy of what a live run knows after its last move: beliefs,
// the network, the scripted events played. ok is false for a replay.
func (r *Run) State() (_ world.State, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.be.(*live)
	if !ok {
		return world.State{}, false
	}
	return l.w.Clone(), true
}
