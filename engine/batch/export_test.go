package batch

import (
	"context"
	"fmt"

	"github.com/leaserace/leaserace/scenario"
)

// Forced interleavings: the stress's own holders, lease row and resource
// run, but the test orders every step and names every time, so what must
// happen does happen on any machine at any speed.

// Forced is what one forced interleaving did under one setting.
type Forced struct {
	// Writes is the effects log as scenario.Judge tallied it.
	Writes scenario.Tally
	// Effects is the judged log itself.
	Effects []scenario.Effect
	// Takeovers and StaleRenewalsAccepted count as the stress counts them.
	Takeovers, StaleRenewalsAccepted int
}

// ForcedRig is a one-lane stress rig with two holders, for forced
// interleavings; Close drops what it made.
type ForcedRig struct{ r *rig }

func OpenForced(ctx context.Context, dsn string) (*ForcedRig, error) {
	r, err := openRig(ctx, StressConfig{DSN: dsn, Runs: 1, Workers: 2, Parallel: 1, TTL: StressTTL})
	if err != nil {
		return nil, err
	}
	return &ForcedRig{r: r}, nil
}

func (fr *ForcedRig) Close(ctx context.Context) error { return fr.r.close(ctx) }

// SameFenceTwice: h1 acquires at time 0, writes at 1, renews at 1 and
// writes again at 2 under the same fence. Only strict fencing refuses the
// second write, a valid write lost.
func (fr *ForcedRig) SameFenceTwice(ctx context.Context, k scenario.Knobs) (Forced, error) {
	return fr.forced(ctx, k, func(ln *lane, f *Forced) error {
		mine, err := mustAcquire(ctx, ln, 0, 0, f)
		if err != nil {
			return err
		}
		if err := ln.effect(ctx, 0, mine, 1, 0); err != nil {
			return err
		}
		after, stale, err := ln.heartbeat(ctx, 0, k.Renewal, *mine, 1)
		if err != nil {
			return err
		}
		if stale {
			f.StaleRenewalsAccepted++
		}
		if after == nil {
			return fmt.Errorf("h1's renewal at 1 of a lease held until %d failed", mine.ExpiresAt)
		}
		return ln.effect(ctx, 0, after, 2, 1)
	})
}

// LateHeartbeat is the seed's race: h1 acquires at 0 and writes at 1; its
// lease expires at StressTTL, when h2 takes over and then writes; h1's
// heartbeat, carrying its old snapshot, arrives after that, and h1 writes
// again if the renewal told it it still holds the lease.
func (fr *ForcedRig) LateHeartbeat(ctx context.Context, k scenario.Knobs) (Forced, error) {
	return fr.forced(ctx, k, func(ln *lane, f *Forced) error {
		mine, err := mustAcquire(ctx, ln, 0, 0, f)
		if err != nil {
			return err
		}
		if err := ln.effect(ctx, 0, mine, 1, 0); err != nil {
			return err
		}
		ttl := int64(StressTTL)
		theirs, err := mustAcquire(ctx, ln, 1, ttl, f)
		if err != nil {
			return err
		}
		if err := ln.effect(ctx, 1, theirs, ttl+1, 0); err != nil {
			return err
		}
		after, stale, err := ln.heartbeat(ctx, 0, k.Renewal, *mine, ttl+1)
		if err != nil {
			return err
		}
		if stale {
			f.StaleRenewalsAccepted++
		}
		if after == nil {
			return nil
		}
		return ln.effect(ctx, 0, after, ttl+2, 1)
	})
}

func mustAcquire(ctx context.Context, ln *lane, h int, now int64, f *Forced) (*scenario.Lease, error) {
	mine, took, err := ln.acquire(ctx, h, now)
	if err != nil {
		return nil, err
	}
	if mine == nil {
		return nil, fmt.Errorf("%s could not acquire the lease at %d", holderName(h), now)
	}
	if took {
		f.Takeovers++
	}
	return mine, nil
}

// forced sets k's fencing, plays steps on a freed lease row and a reset
// resource run, and judges the effects log.
func (fr *ForcedRig) forced(ctx context.Context, k scenario.Knobs, steps func(*lane, *Forced) error) (f Forced, err error) {
	ln := fr.r.lanes[0]
	if err := ln.rc.SetFencing(ctx, k.Fencing); err != nil {
		return f, err
	}
	if err := ln.restart(ctx); err != nil {
		return f, err
	}
	if err := steps(ln, &f); err != nil {
		return f, err
	}
	f.Writes, f.Effects, err = ln.judge(ctx)
	return f, err
}
