package resource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/scenario"
)

// The store: every method is one transaction on a pooled connection,
// pointed at its run's schema by the first statement of its first batch.

// bound starts a batch that binds a pooled connection to schema and names
// who the request acts for in application_name.
func (s *Service) bound(schema, who string) *pgx.Batch {
	name := s.appName + " " + schema
	if who != "" {
		name += " " + who
	}
	b := &pgx.Batch{}
	b.Queue(s.sql.bind, s.searchPath(schema), name)
	return b
}

// searchPath is schema, then the default run's. A pooled connection keeps
// the search_path of its last batch, and pgx prepares a batch's new
// statements before the batch's bind runs: once a run was removed and its
// schema dropped, the default run's tables, alike in every run's schema,
// still let them prepare. (The server parses a statement again when it
// runs under another search_path.)
func (s *Service) searchPath(schema string) string {
	if s.def == "" || schema == s.def {
		return pgx.Identifier{schema}.Sanitize()
	}
	return pgx.Identifier{schema}.Sanitize() + ", " + pgx.Identifier{s.def}.Sanitize()
}

// on runs fn on a pooled connection bound to schema; it costs a round trip
// of its own, so only set-up and health checks use it.
func (s *Service) on(ctx context.Context, schema, who string, fn func(*pgx.Conn) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	if err := c.SendBatch(ctx, s.bound(schema, who)).Close(); err != nil {
		return err
	}
	return fn(c.Conn())
}

// send sends b on a pooled connection and hands its results to read.
func (s *Service) send(ctx context.Context, b *pgx.Batch, read func(pgx.BatchResults) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	br := c.SendBatch(ctx, b)
	_, err = br.Exec() // the bind
	if err == nil {
		err = read(br)
	}
	return errors.Join(err, br.Close())
}

// reset sets a run's state and clears its effects log; with keep, it keeps
// the first *keep effects instead (a step back to a state after them).
func (s *Service) reset(ctx context.Context, r *run, epoch int64, value json.RawMessage, keep *int64) (View, error) {
	v := View{Fencing: r.policy(), Effects: []scenario.Effect{}}
	// One batch is one implicit transaction and one round trip. The UPDATE
	// comes first: it waits for any write holding the row, so the DELETE
	// (with a newer snapshot under READ COMMITTED) also clears that write's
	// effect.
	b := s.bound(r.schema, "")
	b.Queue(s.sql.reset, epoch, value)
	if keep != nil {
		b.Queue(s.sql.rewind, *keep)
	} else {
		b.Queue(s.sql.clear)
	}
	err := s.send(ctx, b, func(br pgx.BatchResults) error {
		if err := br.QueryRow().Scan(&v.Fence, &v.Value); err != nil {
			return err
		}
		_, err := br.Exec()
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return v, errMissingRow
	}
	return v, err
}

var errMissingRow = errors.New("the resource's state row is missing from its table")

// view reads a run's state and effects log from one snapshot.
func (s *Service) view(ctx context.Context, r *run) (View, error) {
	v := View{Fencing: r.policy(), Effects: []scenario.Effect{}}
	b := s.bound(r.schema, "")
	b.Queue(s.sql.view)
	err := s.send(ctx, b, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		first := true
		for rows.Next() {
			var (
				seq, stored   *int64
				actor, reason *string
				accepted      *bool
				epoch         int64
				value         json.RawMessage
			)
			if err := rows.Scan(&seq, &actor, &epoch, &value, &accepted, &reason, &stored); err != nil {
				return err
			}
			if first {
				if seq != nil {
					return errMissingRow
				}
				v.Fence, v.Value, first = epoch, value, false
				continue
			}
			if seq == nil || actor == nil || accepted == nil || reason == nil || stored == nil {
				return errors.New("the effects table holds a row with missing columns")
			}
			v.Effects = append(v.Effects, scenario.Effect{
				Seq: *seq, Actor: *actor, Fence: epoch, Value: value,
				Accepted: *accepted, Reason: *reason, StoredFence: *stored,
			})
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if first {
			return errMissingRow
		}
		return nil
	})
	return v, err
}

// write applies the run's fencing policy to one write and records the
// effect, all in one transaction. BeginFunc would cost two extra round
// trips (a lone BEGIN and a lone COMMIT, about half a write's time on
// loopback), so the transaction is pipelined instead: BEGIN, the lock and
// the fencing statement go in one round trip; the effect and COMMIT in the
// next.
//
// The policy is loaded once, here: its statement judges the write and its
// name goes into the answer, so a PUT /fencing that lands meanwhile
// changes only the writes that start after it.
func (s *Service) write(ctx context.Context, r *run, actor string, epoch int64, value json.RawMessage) (WriteResult, error) {
	f := r.policy()
	res := WriteResult{Fencing: f, SQL: s.sql.write[f], Args: []any{epoch, value}}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return WriteResult{}, err
	}
	// A connection left mid-transaction by a failure is destroyed on
	// release, and the server rolls back when it goes.
	defer c.Release()
	if err := s.fence(ctx, c.Conn(), r, actor, epoch, value, &res); err != nil {
		return WriteResult{}, err
	}
	return res, nil
}

// fence runs res.SQL in a transaction of its own and records what it did.
func (s *Service) fence(ctx context.Context, c *pgx.Conn, r *run, actor string, epoch int64, value json.RawMessage, res *WriteResult) error {
	// Locking first makes the reported stored epoch exactly the one the
	// fencing statement compares against. The statement alone would still
	// be safe: under READ COMMITTED an UPDATE that waited for the row
	// lock re-checks its WHERE against the newest version.
	b := s.bound(r.schema, actor)
	b.Queue(s.sql.begin)
	b.Queue(s.sql.lock)
	b.Queue(res.SQL, epoch, value)
	br := c.SendBatch(ctx, b)
	for range 2 { // the bind and BEGIN
		if _, err := br.Exec(); err != nil {
			return errors.Join(err, br.Close())
		}
	}
	var stored int64
	var storedValue json.RawMessage
	if err := br.QueryRow().Scan(&stored, &storedValue); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			err = errMissingRow
		}
		return errors.Join(err, br.Close())
	}
	rows, err := br.Query()
	if err != nil {
		return errors.Join(err, br.Close())
	}
	for rows.Next() {
		if err := rows.Scan(&res.Fence, &res.Value); err != nil {
			rows.Close()
			return errors.Join(err, br.Close())
		}
	}
	rows.Close()
	if err := errors.Join(rows.Err(), br.Close()); err != nil {
		return err
	}
	tag := rows.CommandTag()
	res.Tag, res.Rows = tag.String(), tag.RowsAffected()
	res.Accepted = res.Rows == 1
	if !res.Accepted {
		res.Fence, res.Value = stored, storedValue
		res.Reason = rejectReason(res.Fencing, epoch, stored)
	}
	res.Effect = scenario.Effect{Actor: actor, Fence: epoch, Accepted: res.Accepted, Reason: res.Reason, StoredFence: stored}

	b = &pgx.Batch{}
	b.Queue(s.sql.record, actor, epoch, value, res.Accepted, res.Reason, stored)
	b.Queue(s.sql.commit)
	br = c.SendBatch(ctx, b)
	if err := br.QueryRow().Scan(&res.Effect.Seq, &res.Effect.Value); err != nil {
		return errors.Join(err, br.Close())
	}
	ct, err := br.Exec()
	if err = errors.Join(err, br.Close()); err != nil {
		return err
	}
	if ct.String() != "COMMIT" {
		return fmt.Errorf("the server did not commit the write (it answered %q)", ct.String())
	}
	return nil
}

// ping checks the store answers.
func (s *Service) ping(ctx context.Context) error {
	var one int
	return s.pool.QueryRow(ctx, s.sql.ping).Scan(&one)
}

// rejectReason says, for a person, why the policy refused the write: the
// comparison reads in the reader's direction, stored epoch first.
func rejectReason(f scenario.Fencing, epoch, stored int64) string {
	switch f {
	case scenario.FencingStrict:
		return fmt.Sprintf("fence %d is not above the resource's highest fence accepted, %d: strict fencing accepts only a fence above it", epoch, stored)
	case scenario.FencingMonotonic:
		return fmt.Sprintf("fence %d is below the resource's highest fence accepted, %d: monotonic fencing accepts a fence at or above it", epoch, stored)
	}
	return fmt.Sprintf("fence %d was refused under %s fencing (stored fence %d)", epoch, f, stored)
}
