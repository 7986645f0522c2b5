package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/resource"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
)

// live plays moves on PostgreSQL and the resource: every move that talks
// to the coordinator runs its statement on the server, every write is a
// real HTTP request.
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
	w          world
	faults     faultState //lint:ignore U1000 used by builds with the leaserace_faults tag
	// ready, when set, runs just before a step talks to the coordinator
	// (resource false) or the resource (true): the exhaustive search puts
	// that part of the server into the state the step starts from.
	ready func(ctx context.Context, resource bool) error
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
	// The coordinator's rows and the resource's state live apart, and
	// nothing reads either until both are reset: reset them at once, so a
	// step back waits for one round trip, not two.
	var v resource.View
	resErr := make(chan error, 1)
	go func() {
		var err error
		defer func() { resErr <- err }()
		defer CatchPanic(&err)
		v, err = l.resetResource(ctx, sc, k)
	}()
	b := l.host.bound(l.schemaName, l.appName("setup"))
	b.Queue(l.host.sql.clear)
	if in := sc.Initial; in != nil {
		b.Queue(l.host.sql.seed, sc.Lease, in.Owner, in.Fence, in.LeaseVersion, in.ExpiresAt)
	}
	err := l.host.send(ctx, b, nil)
	if rerr := <-resErr; err == nil && rerr != nil {
		return rerr
	}
	if err != nil {
		return fmt.Errorf("cannot reset the coordinator: %w", err)
	}
	l.w = newWorld(sc, k, transcript.ResourceSnap{Epoch: v.Epoch, Value: v.Value, Effects: []scenario.Effect{}})
	return nil
}

// resetResource sets the resource's fencing to k's, if it changed, and
// its state to the scenario's initial one.
func (l *live) resetResource(ctx context.Context, sc *scenario.Scenario, k scenario.Knobs) (resource.View, error) {
	if l.fencingSet != k.Fencing {
		if err := l.rc.SetFencing(ctx, k.Fencing); err != nil {
			return resource.View{}, fmt.Errorf("cannot set the resource's fencing: %w", err)
		}
		l.fencingSet = k.Fencing
	}
	v, err := l.rc.Reset(ctx, sc.Resource.Epoch, sc.Resource.Value)
	if err != nil {
		return v, fmt.Errorf("cannot reset the resource: %w", err)
	}
	return v, nil
}

// apply makes one move on the server and the resource and returns its
// step. A move that is not possible here fails with *NotEnabledError and
// changes nothing.
func (l *live) apply(ctx context.Context, mv scenario.Move) (transcript.Step, error) {
	w := &l.w
	st := transcript.Step{T: mv.T, Actor: mv.Actor, Action: mv.Action, Heartbeat: mv.Msg, Epoch: mv.Epoch, Args: []any{}, Result: transcript.ResultDone}
	if err := w.check(mv); err != nil {
		return st, err
	}
	ev := w.event(mv)
	prev := w.coord.Clone()
	l.faultPoint(beforeStepSQL, mv)
	var err error
	switch mv.Action {
	case scenario.ActionSend:
		l.send(mv, ev, &st)
	case scenario.ActionExpire, scenario.ActionAdvance:
		err = l.coordinate(ctx, mv.Actor, &st, l.host.sql.read, w.sc.Lease)
		if err == nil {
			st.Note = noteClock(mv.Action, w.coord, mv.T, w.flightAt(mv.T))
		}
	case scenario.ActionAcquire:
		err = l.coordinate(ctx, mv.Actor, &st, l.host.sql.acquire, w.sc.Lease, mv.Actor, mv.T, w.sc.TTL)
		if err == nil {
			if st.Rows == 1 {
				w.actor(mv.Actor).lease = w.coord.Clone()
			} else {
				st.Result = transcript.ResultRefused
			}
			st.Note = noteAcquire(mv.Actor, st.Rows, prev, w.coord)
		}
	case scenario.ActionDeliver:
		err = l.deliver(ctx, mv, &st, prev)
	case scenario.ActionReply:
		l.reply(mv, &st)
	case scenario.ActionDrop:
		m, _ := w.inFlight(mv.Msg)
		w.removeFlight(mv.Msg)
		st.Result = transcript.ResultNoCall
		st.Note = noteDrop(m)
	case scenario.ActionEffect:
		err = l.effect(ctx, mv, ev, &st)
	case scenario.ActionWrite:
		err = l.write(ctx, mv.Actor, *mv.Epoch, w.value(ev, mv), &st, noteDirect)
	case scenario.ActionWriteSend:
		l.post(mv, ev, &st)
	case scenario.ActionWriteDeliver:
		m, _ := w.inFlight(mv.Msg)
		w.removeFlight(mv.Msg)
		err = l.write(ctx, mv.Actor, m.Epoch, m.Value, &st, noteLanded)
	case scenario.ActionPause:
		b := w.actor(mv.Actor)
		_, holds := w.holds(mv.Actor, mv.T)
		b.paused, b.checked = true, &holds
		st.Result = transcript.ResultNoCall
		st.Note = notePause(mv.Actor, b.lease, holds, mv.T)
	case scenario.ActionResume:
		b := w.actor(mv.Actor)
		b.paused = false
		st.Result = transcript.ResultNoCall
		st.Note = noteResume(mv.Actor, b.lease, b.checked != nil && *b.checked, mv.T)
	case scenario.ActionRelease:
		err = l.release(ctx, mv, &st, prev)
	case scenario.ActionReelect:
		err = l.reelect(ctx, mv, &st, prev)
	default:
		err = fmt.Errorf("leaserace cannot play %s moves yet", mv.Action)
	}
	if err != nil {
		return st, err
	}
	if ev >= 0 {
		w.played[ev] = true
		if n := w.sc.Events[ev].Note; n != "" {
			st.Note += " " + n
		}
	}
	w.now = mv.T
	l.faultPoint(afterStepSQL, mv)
	st.Coordinator = w.coord.Clone()
	st.Resource = w.res.Clone()
	st.InFlight = w.flightAt(mv.T)
	st.Beliefs = w.beliefsAt(mv.T)
	return st, nil
}

// coordinate runs one coordinator statement and reads the row back, both in
// one batch on a pooled connection named for the actor. The read alone is
// sent when sql is the read itself. The tag is the server's.
func (l *live) coordinate(ctx context.Context, actor string, st *transcript.Step, sql string, args ...any) error {
	w := &l.w
	if l.ready != nil {
		if err := l.ready(ctx, false); err != nil {
			return err
		}
	}
	b := l.host.bound(l.schemaName, l.appName(actor))
	isRead := sql == l.host.sql.read
	if !isRead {
		b.Queue(sql, args...)
	}
	b.Queue(l.host.sql.read, w.sc.Lease)
	err := l.host.send(ctx, b, func(br pgx.BatchResults) error {
		if !isRead {
			tag, err := br.Exec()
			if err != nil {
				return fmt.Errorf("coordinator statement failed: %w", err)
			}
			st.Tag, st.Rows = tag.String(), tag.RowsAffected()
		}
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("cannot read the lease back: %w", err)
		}
		var found *scenario.Lease
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
		w.coord = found
		if isRead {
			tag := rows.CommandTag()
			st.Tag, st.Rows = tag.String(), tag.RowsAffected()
		}
		return nil
	})
	if err != nil {
		return err
	}
	st.SQL, st.Args = sql, args
	return nil
}

func (l *live) send(mv scenario.Move, ev int, st *transcript.Step) {
	w := &l.w
	snap := w.actor(mv.Actor).lease
	if ev >= 0 && w.sc.Events[ev].Snapshot != nil {
		snap = w.sc.Events[ev].Snapshot
	}
	if snap == nil {
		w.sent[mv.Msg] = false
		st.Result = transcript.ResultNoCall
		st.Note = fmt.Sprintf("%s holds no lease it knows of, so its heartbeat carries nothing to renew and is dropped.", mv.Actor)
		return
	}
	m := transcript.Message{ID: mv.Msg, From: mv.Actor, Sent: mv.T, Due: w.due(mv.Msg, scenario.ActionDeliver), Snapshot: *snap}
	w.flight = append(w.flight, m)
	w.sent[mv.Msg] = true
	st.Note = noteSend(m)
}

func (l *live) deliver(ctx context.Context, mv scenario.Move, st *transcript.Step, prev *scenario.Lease) error {
	w := &l.w
	m, ok := w.inFlight(mv.Msg)
	if !ok {
		st.Result = transcript.ResultNoCall
		st.Note = fmt.Sprintf("Heartbeat %s was never in flight (its sender held no lease), so nothing arrives.", mv.Msg)
		return nil
	}
	snap := m.Snapshot
	stale := staleReason(m, w.coord, mv.T)
	sql := l.host.sql.renew(w.knobs.Renewal)
	if err := l.coordinate(ctx, mv.Actor, st, sql, w.sc.Lease, snap.Owner, snap.Fence, snap.LeaseVersion, mv.T, w.sc.TTL); err != nil {
		return err
	}
	w.removeFlight(mv.Msg)
	if st.Rows == 0 {
		st.Result = transcript.ResultRefused
	}
	if w.replyLate(mv.Msg) {
		// The renewal is done at the coordinator, but its sender hears of
		// it only when the reply arrives; until then it acts on its old
		// belief.
		r := transcript.Message{ID: mv.Msg, From: mv.Actor, Sent: mv.T, Due: w.due(mv.Msg, scenario.ActionReply), Kind: transcript.KindReply, Rows: st.Rows}
		if st.Rows == 1 && w.coord != nil {
			r.Snapshot = *w.coord
		}
		w.flight = append(w.flight, r)
		st.Note = noteDeliverLate(mv.Actor, w.knobs.Renewal, st.Rows, stale, prev, w.coord, m, r.Due)
		return nil
	}
	l.learn(mv.Actor, st.Rows)
	st.Note = noteDeliver(mv.Actor, w.knobs.Renewal, st.Rows, stale, prev, w.coord, m)
	return nil
}

// learn tells an actor what its renewal did: one row and the row is its,
// so it believes the row; zero rows tell it its epoch is gone.
func (l *live) learn(actor string, rows int64) {
	w := &l.w
	b := w.actor(actor)
	if rows == 1 && w.coord != nil && w.coord.Owner == actor {
		b.lease = w.coord.Clone()
	} else {
		b.lease = nil
	}
}

func (l *live) reply(mv scenario.Move, st *transcript.Step) {
	w := &l.w
	m, _ := w.inFlight(mv.Msg)
	w.removeFlight(mv.Msg)
	b := w.actor(mv.Actor)
	before := b.lease.Clone()
	if m.Rows == 1 && m.Snapshot.Owner == mv.Actor {
		snap := m.Snapshot
		b.lease = &snap
	} else {
		b.lease = nil
	}
	st.Result = transcript.ResultNoCall
	st.Note = noteReply(mv.Actor, m, before, mv.T)
}

func (l *live) effect(ctx context.Context, mv scenario.Move, ev int, st *transcript.Step) error {
	w := &l.w
	b := w.actor(mv.Actor)
	lease, ok := w.holds(mv.Actor, mv.T)
	if b.checked != nil {
		// Resumed after a pause: it acts on the check it made before.
		ok = *b.checked && lease != nil
		b.checked = nil
	}
	if !ok {
		st.Result = transcript.ResultNoCall
		st.Note = noteSkip(mv.Actor, lease, mv.T)
		return nil
	}
	return l.write(ctx, mv.Actor, lease.Fence, w.value(ev, mv), st, noteEffect)
}

// post sends an effect's write into the network, where it is held like a
// heartbeat; it reaches the resource only when delivered.
func (l *live) post(mv scenario.Move, ev int, st *transcript.Step) {
	w := &l.w
	lease, ok := w.holds(mv.Actor, mv.T)
	if b := w.actor(mv.Actor); b.checked != nil {
		ok = *b.checked && lease != nil
		b.checked = nil
	}
	if !ok {
		w.sent[mv.Msg] = false
		st.Result = transcript.ResultNoCall
		st.Note = noteSkip(mv.Actor, lease, mv.T)
		return
	}
	m := transcript.Message{
		ID: mv.Msg, From: mv.Actor, Sent: mv.T, Due: w.due(mv.Msg, scenario.ActionWriteDeliver),
		Snapshot: *lease, Kind: transcript.KindWrite, Epoch: lease.Fence, Value: w.value(ev, mv),
	}
	w.flight = append(w.flight, m)
	w.sent[mv.Msg] = true
	st.Note = notePost(m)
}

// release gives the lease up: the row expires now, if it is still the
// actor's own epoch.
func (l *live) release(ctx context.Context, mv scenario.Move, st *transcript.Step, prev *scenario.Lease) error {
	w := &l.w
	b := w.actor(mv.Actor)
	if b.lease == nil {
		st.Result = transcript.ResultNoCall
		st.Note = fmt.Sprintf("%s holds no lease it knows of, so it has nothing to release.", mv.Actor)
		return nil
	}
	mine := *b.lease
	if err := l.coordinate(ctx, mv.Actor, st, l.host.sql.release, w.sc.Lease, mine.Owner, mine.Fence, mv.T); err != nil {
		return err
	}
	if st.Rows == 0 {
		st.Result = transcript.ResultRefused
	}
	b.lease = nil
	st.Note = noteRelease(mv.Actor, st.Rows, mine, prev, mv.T)
	return nil
}

// reelect runs River's re-election upsert from before riverqueue/river#199
// for an actor that believes it leads. Its condition is always true, so it
// extends whatever row is there; the actor trusts the count, as River's
// elector did, and believes it leads for another TTL. It never reads the
// row's owner: that is the bug.
func (l *live) reelect(ctx context.Context, mv scenario.Move, st *transcript.Step, prev *scenario.Lease) error {
	w := &l.w
	b := w.actor(mv.Actor)
	if b.lease == nil || b.lease.Owner != mv.Actor {
		st.Result = transcript.ResultNoCall
		st.Note = fmt.Sprintf("%s does not believe it leads, so it has nothing to re-elect itself to.", mv.Actor)
		return nil
	}
	mine := *b.lease
	if err := l.coordinate(ctx, mv.Actor, st, l.host.sql.reelectAny, w.sc.Lease, mv.Actor, mine.Fence, mine.LeaseVersion, mv.T, w.sc.TTL); err != nil {
		return err
	}
	if st.Rows == 0 {
		st.Result = transcript.ResultRefused
		b.lease = nil
	} else {
		mine.ExpiresAt = mv.T + w.sc.TTL
		b.lease = &mine
	}
	owner := w.coord != nil && w.coord.Owner != mv.Actor && w.believes(w.coord.Owner, mv.T)
	st.Note = noteReelect(mv.Actor, st.Rows, mine, prev, w.coord, mv.T, owner)
	return nil
}

// noteKind says how a write came about, for its narration.
type noteKind int

const (
	noteEffect noteKind = iota // an effect with the actor's fence
	noteDirect                 // a scripted write with an explicit epoch
	noteLanded                 // a delayed write reaching the resource
)

func (l *live) write(ctx context.Context, actor string, epoch int64, value json.RawMessage, st *transcript.Step, kind noteKind) error {
	w := &l.w
	if l.rc == nil {
		return fmt.Errorf("no resource to write to: %w", errNotConnected)
	}
	if l.ready != nil {
		if err := l.ready(ctx, true); err != nil {
			return err
		}
	}
	before := w.res
	wr, err := l.rc.Write(ctx, actor, epoch, value)
	if err != nil {
		return err
	}
	st.SQL, st.Args, st.Tag, st.Rows = wr.SQL, wr.Args, wr.Tag, wr.Rows
	if st.Args == nil {
		st.Args = []any{}
	}
	status := http.StatusOK
	if !wr.Accepted {
		status = http.StatusConflict
		st.Result = transcript.ResultRefused
	}
	st.Call = &transcript.Call{Method: http.MethodPost, Path: "/writes", Status: status, Accepted: wr.Accepted, Reason: wr.Reason}
	effects := append(slices.Clone(before.Effects), wr.Effect)
	w.res = transcript.ResourceSnap{Epoch: wr.Epoch, Value: wr.Value, Effects: effects}
	w.judge()
	last := effects[len(effects)-1]
	o := transcript.OutcomeOf(w.coord, w.res, w.sc.Resource.Epoch)
	st.Note = noteWrite(actor, epoch, wr, before.Epoch, last, w.knobs.Fencing, kind, o.Effects)
	return nil
}

// reconnect drops every connection the run's host holds (a run that
// shares a host leaves that to its host), starts the resource again when
// the run owns it, and readies the run's schema and resource state again.
func (l *live) reconnect(ctx context.Context, _ *scenario.Scenario, k scenario.Knobs) error {
	l.rc = nil
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
	return &transcript.Meta{Provider: l.provider, ServerVersion: l.version, RecordedAt: time.Now().UTC().Format(time.RFC3339), Source: l.w.sc.Source}
}

// drop removes the run's schema and its state at the resource. After a
// fault the server may be back while the pool's connections are dead: the
// pool makes new ones, so the schema does not stay behind.
func (l *live) drop(ctx context.Context) error {
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
// see pgserver.PsqlCommand.
func (r *Run) PsqlCommand() (line string, needsPassword bool, err error) {
	r.mu.Lock()
	l, ok := r.be.(*live)
	r.mu.Unlock()
	if !ok {
		return "", false, errors.New("a replay has no database to open psql on")
	}
	return pgserver.PsqlCommand(l.host.dsn, l.schemaName)
}
