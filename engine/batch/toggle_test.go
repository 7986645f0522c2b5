package batch

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/resource"
	"github.com/leaserace/leaserace/scenario"
)

// toggleSetting is the setting in force after the i-th toggle: both knobs
// change at every toggle, and six toggles pass every setting once.
func toggleSetting(i int64) scenario.Knobs {
	rs, fs := scenario.Renewals(), scenario.Fencings()
	return scenario.Knobs{Renewal: rs[i%int64(len(rs))], Fencing: fs[i%int64(len(fs))]}
}

// toggleWrite is one write as its holder saw it: the answer, and which
// toggles had finished before it was sent (from) and had started by the
// time its answer came back (to).
type toggleWrite struct {
	res      resource.WriteResult
	from, to int64
}

// toggleCoord is one coordinator statement as its holder saw it.
type toggleCoord struct {
	who     string
	renewal scenario.Renewal // "" for an acquire
	snap    scenario.Lease   // what a heartbeat carried
	now     int64
	before  *scenario.Lease
	after   *scenario.Lease
	rows    int64
}

// TestLiveToggleUnderLoad has holders acquire, renew and write (each
// every round, under the last fence it held) on the stress's lease row and
// resource run while a toggler switches renewal
// (read by the holders once per heartbeat) and fencing (PUT /fencing at
// the live resource) through every setting, twice over. Time is logical,
// one tick per statement, so leases expire and change hands without
// waiting. Whatever the interleaving:
//   - every write's answer names one policy, one that was in force while
//     the write was under way, and its outcome is that policy's, against
//     the stored epoch it names;
//   - the effects log holds every write exactly once, in an order where
//     each write's stored epoch is what the writes before it left;
//   - every heartbeat did what the renewal it read says, and the lease
//     row's changes form one chain from the free row to the final one.
//
// Each toggle waits for a write and a heartbeat that started after the
// previous toggle finished, so every setting judges some write it alone
// was in force for. Run it with -race: the knobs are read while they
// change.
func TestLiveToggleUnderLoad(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	const holders, rounds, toggles = 8, 25, 12
	ttl := int64(2 * holders)
	r, err := openRig(ctx, StressConfig{DSN: dsn, Runs: 1, Workers: holders, Parallel: 1, TTL: StressTTL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	ln := r.lanes[0]
	if err := ln.rc.SetFencing(ctx, toggleSetting(0).Fencing); err != nil {
		t.Fatal(err)
	}
	if err := ln.restart(ctx); err != nil {
		t.Fatal(err)
	}

	var (
		clock          atomic.Int64 // logical time
		started, done  atomic.Int64 // toggles begun, toggles finished
		wrote, renewed = make(chan int64, 4*holders), make(chan int64, 4*holders)
		stop           = make(chan struct{})
	)
	notify := func(ch chan int64, g int64) {
		select {
		case ch <- g:
		default: // the toggler is behind; later ones will do
		}
	}
	var tg sync.WaitGroup
	tg.Add(1)
	go func() {
		defer tg.Done()
		for i := int64(1); ; i++ {
			for needW, needR := true, true; needW || needR; {
				select {
				case g := <-wrote:
					needW = needW && g != i-1
				case g := <-renewed:
					needR = needR && g != i-1
				case <-stop:
					return
				}
			}
			started.Store(i)
			if err := ln.rc.SetFencing(ctx, toggleSetting(i).Fencing); err != nil {
				t.Errorf("toggle %d: %v", i, err)
				return
			}
			done.Store(i)
		}
	}()

	writes := make([][]toggleWrite, holders)
	coords := make([][]toggleCoord, holders)
	var hg sync.WaitGroup
	for h := range holders {
		hg.Add(1)
		go func() {
			defer hg.Done()
			me := holderName(h)
			var mine *scenario.Lease
			// fence is the last fence the holder held (0 before its first):
			// it writes under it every round, as a holder paused past its
			// lease would, so every holder writes all the time.
			var fence int64
			// Holders go on past their rounds until the toggler has
			// passed every setting twice, so the toggler never starves.
			for n := 0; n < rounds || done.Load() < toggles; n++ {
				if ctx.Err() != nil {
					t.Error(ctx.Err())
					return
				}
				if mine != nil {
					fence = mine.Fence
				}
				// Stale or not, the resource has the last word.
				from := done.Load()
				v, _ := json.Marshal(fmt.Sprintf("%s round %d", me, n))
				res, err := ln.rc.Write(ctx, me, fence, v)
				if err != nil {
					t.Errorf("%s's write: %v", me, err)
					return
				}
				writes[h] = append(writes[h], toggleWrite{res: res, from: from, to: started.Load()})
				notify(wrote, from)
				c := toggleCoord{who: me, now: clock.Add(1)}
				var (
					sql  string
					args []any
					g    int64
				)
				if mine == nil {
					sql, args = r.sql.acquire, []any{ln.lease, me, c.now, ttl}
				} else {
					// The renewal knob is read once, for this heartbeat.
					g = done.Load()
					c.renewal, c.snap = toggleSetting(g).Renewal, *mine
					sql, args = r.sql.renew(c.renewal), []any{ln.lease, mine.Owner, mine.Fence, mine.LeaseVersion, c.now, ttl}
				}
				c.before, c.after, c.rows, err = ln.coordinate(ctx, ln.holders[h], sql, args...)
				if err != nil {
					t.Errorf("%s: %v", me, err)
					return
				}
				coords[h] = append(coords[h], c)
				if c.renewal != "" {
					notify(renewed, g)
				}
				switch {
				case c.rows == 1 && c.after != nil && c.after.Owner == me:
					mine = c.after
				case c.renewal != "":
					mine = nil // zero rows: its epoch is gone
				}
			}
		}()
	}
	hg.Wait()
	close(stop)
	tg.Wait()
	if t.Failed() {
		return
	}
	checkToggledWrites(t, ctx, ln, writes, done.Load())
	checkToggledCoords(t, ctx, ln, coords, ttl)
}

// admits is the contract each policy promises: off accepts everything,
// strict only epochs above the stored one, monotonic epochs at or above it.
func admits(f scenario.Fencing, stored, epoch int64) bool {
	switch f {
	case scenario.FencingStrict:
		return epoch > stored
	case scenario.FencingMonotonic:
		return epoch >= stored
	}
	return true
}

func checkToggledWrites(t *testing.T, ctx context.Context, ln *lane, writes [][]toggleWrite, toggles int64) {
	t.Helper()
	v, err := ln.rc.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bySeq := map[int64]toggleWrite{}
	// pinned[i] counts writes under way only while toggle i was in force.
	pinned := map[int64]int{}
	judged := map[scenario.Fencing]int{}
	for _, ws := range writes {
		for _, w := range ws {
			res := w.res
			if _, dup := bySeq[res.Effect.Seq]; dup {
				t.Errorf("two writes answered with seq %d", res.Effect.Seq)
			}
			bySeq[res.Effect.Seq] = w
			judged[res.Fencing]++
			inForce := false
			for i := w.from; i <= w.to; i++ {
				inForce = inForce || toggleSetting(i).Fencing == res.Fencing
			}
			if !inForce {
				t.Errorf("write seq %d names %s fencing, but only settings %d..%d were in force while it ran", res.Effect.Seq, res.Fencing, w.from, w.to)
			}
			if w.from == w.to {
				pinned[w.from]++
			}
			if got := admits(res.Fencing, res.Effect.StoredFence, res.Effect.Fence); res.Accepted != got {
				t.Errorf("write seq %d: epoch %d against stored %d under %s: accepted=%v, the policy says %v", res.Effect.Seq, res.Effect.Fence, res.Effect.StoredFence, res.Fencing, res.Accepted, got)
			}
			if (res.Reason == "") != res.Accepted {
				t.Errorf("write seq %d: accepted=%v with reason %q", res.Effect.Seq, res.Accepted, res.Reason)
			}
		}
	}
	if len(v.Effects) != len(bySeq) {
		t.Errorf("%d writes answered, %d in the effects log", len(bySeq), len(v.Effects))
	}
	epoch := int64(stressInitialEpoch)
	for i, e := range v.Effects {
		if e.Seq != int64(i+1) {
			t.Errorf("effect %d has seq %d: the log has a gap", i, e.Seq)
		}
		w, ok := bySeq[e.Seq]
		if !ok {
			t.Errorf("effect seq %d was answered to no writer", e.Seq)
			continue
		}
		if e.Actor != w.res.Effect.Actor || e.Fence != w.res.Effect.Fence || e.Accepted != w.res.Accepted || e.StoredFence != w.res.Effect.StoredFence || e.Reason != w.res.Reason {
			t.Errorf("effect seq %d in the log %+v, answered %+v", e.Seq, e, w.res)
		}
		if e.StoredFence != epoch {
			t.Errorf("effect seq %d was compared against stored epoch %d, but the writes before it left %d", e.Seq, e.StoredFence, epoch)
		}
		if e.Accepted {
			epoch = e.Fence
		}
	}
	if v.Fence != epoch {
		t.Errorf("the resource stores epoch %d; its effects log leaves %d", v.Fence, epoch)
	}
	for i := range toggles {
		if pinned[i] == 0 {
			t.Errorf("no write ran while setting %d (%s) alone was in force", i, toggleSetting(i))
		}
	}
	t.Logf("%d writes over %d toggles; judged per policy %v", len(bySeq), toggles, judged)
}

func checkToggledCoords(t *testing.T, ctx context.Context, ln *lane, coords [][]toggleCoord, ttl int64) {
	t.Helper()
	next := map[scenario.Lease]scenario.Lease{}
	used := map[scenario.Renewal]int{}
	for _, cs := range coords {
		for _, c := range cs {
			if c.before == nil {
				t.Errorf("%s at %d: the lease row was missing", c.who, c.now)
				continue
			}
			b := *c.before
			var want int64
			var after scenario.Lease
			switch c.renewal {
			case "":
				if b.ExpiresAt <= c.now {
					want, after = 1, scenario.Lease{Owner: c.who, Fence: b.Fence + 1, LeaseVersion: b.LeaseVersion + 1, ExpiresAt: c.now + ttl}
				}
			case scenario.RenewalBlind:
				want, after = 1, scenario.Lease{Owner: c.snap.Owner, Fence: c.snap.Fence, LeaseVersion: c.snap.LeaseVersion + 1, ExpiresAt: c.now + ttl}
			case scenario.RenewalCompare:
				if b.Owner == c.snap.Owner && b.Fence == c.snap.Fence && b.LeaseVersion == c.snap.LeaseVersion && b.ExpiresAt > c.now {
					want, after = 1, scenario.Lease{Owner: b.Owner, Fence: b.Fence, LeaseVersion: b.LeaseVersion + 1, ExpiresAt: c.now + ttl}
				}
			}
			used[c.renewal]++
			what := "acquire"
			if c.renewal != "" {
				what = string(c.renewal) + " renewal carrying " + fmt.Sprint(c.snap)
			}
			if c.rows != want {
				t.Errorf("%s's %s at %d on row %+v changed %d rows, want %d", c.who, what, c.now, b, c.rows, want)
				continue
			}
			if c.after == nil {
				t.Errorf("%s's %s at %d: no row to read back", c.who, what, c.now)
				continue
			}
			if want == 0 {
				if *c.after != b {
					t.Errorf("%s's %s at %d changed no row, yet %+v became %+v", c.who, what, c.now, b, *c.after)
				}
				continue
			}
			if *c.after != after {
				t.Errorf("%s's %s at %d on row %+v left %+v, want %+v", c.who, what, c.now, b, *c.after, after)
			}
			if prev, dup := next[b]; dup {
				t.Errorf("row %+v was changed twice: to %+v and to %+v (an update lost)", b, prev, *c.after)
			}
			next[b] = *c.after
		}
	}
	// Every change's expiry is its own tick plus the TTL, so no row comes
	// back: the changes chain from the free row to the row there now.
	cur := scenario.Lease{}
	for n := 0; ; n++ {
		to, ok := next[cur]
		if !ok {
			if n != len(next) {
				t.Errorf("the lease row's changes chain %d of %d changes from the free row", n, len(next))
			}
			break
		}
		cur = to
	}
	var final scenario.Lease
	if err := ln.reset.QueryRow(ctx, ln.rig.sql.read, ln.lease).Scan(&final.Owner, &final.Fence, &final.LeaseVersion, &final.ExpiresAt); err != nil {
		t.Fatal(err)
	}
	if final != cur {
		t.Errorf("the lease row is %+v; its changes end at %+v", final, cur)
	}
	for _, rn := range scenario.Renewals() {
		if used[rn] == 0 {
			t.Errorf("no heartbeat renewed with %s", rn)
		}
	}
	t.Logf("%d acquire attempts, %d blind and %d compare heartbeats, %d changes to the lease row", used[""], used[scenario.RenewalBlind], used[scenario.RenewalCompare], len(next))
}
