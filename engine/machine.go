package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
)

// Machine is a live run without a log or a cursor: it plays one move at a
// time, from whichever state its caller sets, on PostgreSQL and the
// resource. The exhaustive search (engine/search) drives it: the search
// keeps the states of the move graph, the machine plays the moves.
//
// The server holds one state at a time. When a move is about to use a part
// of it (the coordinator's row, or the resource) that holds other values
// than the state the move starts from, the machine first puts that part
// back with real SQL, one round trip: the row cleared and seeded, or the
// resource reset to the state's epoch and value. The effects and their
// judgements live in the state itself.
//
// A Machine is not safe for concurrent use. Close it when done.
type Machine struct {
	l *live
	// coord, epoch and value are what the server holds now, where
	// coordKnown and resKnown say so (a move that failed leaves the part
	// it used unknown).
	coord                *scenario.Lease
	epoch                int64
	value                json.RawMessage
	coordKnown, resKnown bool
	// usedCoord and usedRes say which parts the current move used.
	usedCoord, usedRes bool
	restores           int
	// path, when set, puts the server back by replaying moves instead.
	path func() []scenario.Move
}

// OpenMachine makes a schema and resource state of its own on h and resets
// them to sc's start under k.
func OpenMachine(ctx context.Context, h *Host, sc *scenario.Scenario, k scenario.Knobs) (_ *Machine, err error) {
	if h == nil {
		return nil, errors.New("no host to play on")
	}
	if err := k.Check(); err != nil {
		return nil, err
	}
	l := &live{host: h, who: "search"}
	if l.schemaName, err = randomSchema("lr_"); err != nil {
		return nil, err
	}
	m := &Machine{l: l}
	l.ready = m.ready
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CloseTimeout)
			defer cancel()
			_ = m.Close(cctx)
		}
	}()
	if err := l.attach(ctx, k.Fencing); err != nil {
		return nil, err
	}
	if err := m.Reset(ctx, sc, k); err != nil {
		return nil, err
	}
	return m, nil
}

// Reset puts the server and the machine's state at sc's start under k.
func (m *Machine) Reset(ctx context.Context, sc *scenario.Scenario, k scenario.Knobs) error {
	if sc == nil {
		return errors.New("no scenario to run")
	}
	if err := k.Check(); err != nil {
		return err
	}
	m.coordKnown, m.resKnown = false, false
	if err := m.l.resetTo(ctx, sc, k); err != nil {
		return err
	}
	if err := m.l.settle(); err != nil {
		return err
	}
	m.holdsState()
	return nil
}

// holdsState notes that the server holds the machine's state.
func (m *Machine) holdsState() {
	res := m.l.w.Resource()
	m.coord, m.epoch, m.value = m.l.w.Coordinator(), res.Fence, res.Value
	m.coordKnown, m.resKnown = true, true
}

// State is a copy of the state the last move left, or the reset.
func (m *Machine) State() world.State { return m.l.w.Clone() }

// SetState makes s the state the next move starts from; the machine keeps
// a copy.
func (m *Machine) SetState(s world.State) { m.l.w = s.Clone() }

// Apply makes mv from the state set last (or the last move's), on the
// server, and returns its step.
func (m *Machine) Apply(ctx context.Context, mv scenario.Move) (transcript.Step, error) {
	m.usedCoord, m.usedRes = false, false
	st, err := m.l.apply(ctx, mv)
	if err != nil {
		m.coordKnown = m.coordKnown && !m.usedCoord
		m.resKnown = m.resKnown && !m.usedRes
		return st, err
	}
	if m.usedCoord {
		m.coord = m.l.w.Coordinator()
	}
	if m.usedRes {
		res := m.l.w.Resource()
		m.epoch, m.value = res.Fence, res.Value
	}
	return st, nil
}

// Restores is how many times the machine put the server back before a
// move.
func (m *Machine) Restores() int { return m.restores }

// ReplayInstead makes the machine put the server back by resetting it and
// replaying the moves path returns (those that led to the state set last)
// instead of restoring the part a move uses with SQL: the other way, kept
// for measuring the two (BenchmarkSearch).
func (m *Machine) ReplayInstead(path func() []scenario.Move) { m.path = path }

// Close drops the machine's schema and its state at the resource.
func (m *Machine) Close(ctx context.Context) error { return m.l.close(ctx) }

// ready is the live backend's hook before a move talks to the server: it
// puts the part the move uses into the state the move starts from, where
// the server holds another, and notes that the move will change it.
func (m *Machine) ready(ctx context.Context, res bool) error {
	w := &m.l.w // the move's own changes to this part come after the hook
	want, wantRes := w.Coordinator(), w.Resource()
	if !res {
		m.usedCoord = true
		if m.coordKnown && equalLease(m.coord, want) {
			return nil
		}
	} else {
		m.usedRes = true
		if m.resKnown && m.epoch == wantRes.Fence && bytes.Equal(m.value, wantRes.Value) {
			return nil
		}
	}
	m.restores++
	if m.path != nil {
		return m.replay(ctx)
	}
	l := m.l
	if !res {
		if err := l.host.send(ctx, l.seedBatch(w.Scenario().Lease, want), nil); err != nil {
			return fmt.Errorf("cannot put the coordinator's row back: %w", err)
		}
		m.coord, m.coordKnown = want, true
		return nil
	}
	v, err := l.rc.Reset(ctx, wantRes.Fence, wantRes.Value)
	if err != nil {
		return fmt.Errorf("cannot put the resource back: %w", err)
	}
	m.epoch, m.value, m.resKnown = v.Fence, v.Value, true
	return nil
}

// replay, for measuring the other way, resets the run and plays the path
// to the state the move starts from, then carries on with that state.
func (m *Machine) replay(ctx context.Context) error {
	l := m.l
	target := l.w
	l.ready = nil
	defer func() { l.ready = m.ready }()
	if err := l.resetTo(ctx, target.Scenario(), target.Knobs()); err != nil {
		return err
	}
	for _, mv := range m.path() {
		if _, err := l.apply(ctx, mv); err != nil {
			_ = l.settle()
			return err
		}
	}
	if err := l.settle(); err != nil {
		return err
	}
	m.holdsState()
	l.w = target
	return nil
}

func equalLease(a, b *scenario.Lease) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
