package batch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/leaserace/leaserace/assets"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/pgdsn"
	"github.com/leaserace/leaserace/engine/resource"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/scenario"
	"golang.org/x/sync/errgroup"
)

// Stress leaves logical time behind: holder goroutines, each on its own
// PostgreSQL session, race for one lease row with wall-clock TTLs of a few
// milliseconds, and write to the real resource over HTTP while they believe
// they hold the lease. The seed fixes only the schedule of delays; the
// interleaving is whatever the machine does, so counts vary between runs.

const (
	// StressTTL is the lease's default time to live in milliseconds of
	// wall clock; MaxStressTTL bounds what a call may ask for.
	StressTTL    = 3
	MaxStressTTL = 1000
	// DefaultStressWorkers is how many holders race in each run.
	DefaultStressWorkers = 3
	// MaxStressWorkers and MaxStressRuns bound what one call may start.
	MaxStressWorkers = 16
	MaxStressRuns    = 1_000_000
	// DefaultStressParallel is how many runs go on at once, each on its own
	// lease row and its own run at the one resource. Runs spend most of
	// their time waiting for leases to expire, so a few lanes multiply
	// throughput.
	DefaultStressParallel = 4
	MaxStressParallel     = 16

	// stressRounds is how many heartbeats a holder sends once it holds.
	stressRounds = 1
	// episodeBudget bounds one run under the default TTL: after it no
	// holder starts anything new. It scales with the TTL (budget).
	episodeBudget = 40 * time.Millisecond
	// pollEvery spaces a waiting holder's acquire attempts.
	pollEvery = 250 * time.Microsecond
	// episodeTimeout bounds one run's I/O, so a hung server ends the stress
	// with an error instead of hanging it.
	episodeTimeout = 15 * time.Second
)

// StressConfig says what Stress races and how often.
type StressConfig struct {
	DSN string
	// Runs is how many runs each knob setting gets.
	Runs int
	// Workers is how many holders race in each run (default 3).
	Workers int
	// Parallel is how many runs go on at once (default 4).
	Parallel int
	// Seed fixes the schedule of delays.
	Seed uint64
	// TTL is the lease's time to live in milliseconds (default StressTTL).
	// Every delay of the schedule scales with it: a longer one leaves a
	// loaded machine room to renew a lease while it is still current.
	TTL int
	// Settings are the knob settings to race, in order; default all six.
	Settings []scenario.Knobs
	// Progress, if set, is told how many runs are done out of how many.
	// Calls come from several goroutines but never overlap.
	Progress func(done, total int)
}

// StressSetting is what every run under one knob setting added up to.
type StressSetting struct {
	Renewal scenario.Renewal `json:"renewal"`
	Fencing scenario.Fencing `json:"fencing"`
	Runs    int              `json:"runs"`
	// Takeovers counts acquires that took the lease from another holder.
	Takeovers int `json:"takeovers"`
	// StaleRenewalsAccepted counts renewals that changed the row although
	// the row, when they arrived, no longer held the renewing holder's epoch
	// (owner and fence): someone else had taken over since.
	StaleRenewalsAccepted int `json:"stale_renewals_accepted"`
	// Violations counts writes scenario.Judge calls a conflict: accepted
	// although their epoch is below the highest one accepted before them.
	Violations int `json:"violations"`
	// ValidWritesRefused counts writes scenario.Judge calls blocked:
	// refused although their epoch is at or above the highest one accepted
	// before them, a valid write lost (strict fencing does this).
	ValidWritesRefused int `json:"valid_writes_refused"`
	// Accepted and Rejected count writes the resource let through or
	// refused; ViolatingRuns counts runs with at least one violation.
	Accepted      int           `json:"-"`
	Rejected      int           `json:"-"`
	ViolatingRuns int           `json:"-"`
	Took          time.Duration `json:"-"`
}

// StressResult is a whole stress, one entry per knob setting.
type StressResult struct {
	Seed     uint64          `json:"seed"`
	Runs     int             `json:"runs"`
	Settings []StressSetting `json:"settings"`
	Workers  int             `json:"-"`
	Parallel int             `json:"-"`
	TTL      int             `json:"-"`
	Took     time.Duration   `json:"-"`
}

// RunsPerSecond is the throughput over every setting.
func (r StressResult) RunsPerSecond() float64 {
	if r.Took <= 0 {
		return 0
	}
	return float64(r.Runs*len(r.Settings)) / r.Took.Seconds()
}

// HolderPlan is one holder's delays in one run.
type HolderPlan struct {
	// Start is how long the holder waits before its first acquire attempt,
	// so a different holder wins the first race from run to run.
	Start time.Duration
	// Heartbeats are how long each heartbeat is in flight before it reaches
	// the coordinator. About half are late: longer than the TTL, so the
	// lease can expire and change hands while they travel.
	Heartbeats []time.Duration
}

// StressSchedule is the delay schedule of one run under a lease of ttlMS
// milliseconds. It depends only on the seed, the run's number, the number
// of holders and the TTL, so the same seed gives
// every knob setting, and every repetition, the same delays.
func StressSchedule(seed uint64, run, workers, ttlMS int) []HolderPlan {
	// One PCG stream per run: the schedule of run i does not depend on how
	// many runs came before it or which lane ran them.
	rng := mrand.New(mrand.NewPCG(seed, uint64(run)))
	ttl := time.Duration(ttlMS) * time.Millisecond
	plans := make([]HolderPlan, workers)
	for h := range plans {
		p := HolderPlan{Start: time.Duration(rng.Int64N(int64(500 * time.Microsecond)))}
		for range stressRounds {
			var d time.Duration
			if rng.IntN(2) == 0 {
				// Prompt: arrives well within the TTL.
				d = time.Duration(rng.Int64N(int64(ttl / 3)))
			} else {
				// Late: arrives after the lease expired, often after a
				// successor acquired it and wrote.
				d = ttl + time.Duration(rng.Int64N(int64(2*ttl)))
			}
			p.Heartbeats = append(p.Heartbeats, d)
		}
		plans[h] = p
	}
	return plans
}

// stressSQL holds the statements a stress runs: the coordinator's own, and
// the lock-and-read that shows the row each statement acted on.
type stressSQL struct {
	schema, read, acquire, renewBlind, renewCompare string
	lock, reset                                     string
}

func (s stressSQL) renew(r scenario.Renewal) string {
	if r == scenario.RenewalCompare {
		return s.renewCompare
	}
	return s.renewBlind
}

// Stress races holders under each knob setting and counts what went wrong.
// Everything it creates on the server is dropped before it returns.
func Stress(ctx context.Context, cfg StressConfig) (res StressResult, err error) {
	if cfg.Workers == 0 {
		cfg.Workers = DefaultStressWorkers
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = DefaultStressParallel
	}
	if cfg.TTL == 0 {
		cfg.TTL = StressTTL
	}
	if len(cfg.Settings) == 0 {
		cfg.Settings = scenario.AllKnobs()
	}
	switch {
	case cfg.Runs < 1 || cfg.Runs > MaxStressRuns:
		return res, fmt.Errorf("runs must be between 1 and %d, not %d", MaxStressRuns, cfg.Runs)
	case cfg.Workers < 2 || cfg.Workers > MaxStressWorkers:
		return res, fmt.Errorf("workers must be between 2 and %d, not %d: a race needs at least two holders", MaxStressWorkers, cfg.Workers)
	case cfg.Parallel < 1 || cfg.Parallel > MaxStressParallel:
		return res, fmt.Errorf("parallel must be between 1 and %d, not %d", MaxStressParallel, cfg.Parallel)
	case cfg.TTL < 1 || cfg.TTL > MaxStressTTL:
		return res, fmt.Errorf("the lease's TTL must be between 1 and %d ms, not %d", MaxStressTTL, cfg.TTL)
	}
	for _, k := range cfg.Settings {
		if _, err := scenario.ParseRenewal(string(k.Renewal)); err != nil {
			return res, err
		}
		if _, err := scenario.ParseFencing(string(k.Fencing)); err != nil {
			return res, err
		}
	}
	// More lanes than runs would sit idle.
	cfg.Parallel = min(cfg.Parallel, cfg.Runs)
	res = StressResult{Seed: cfg.Seed, Runs: cfg.Runs, Workers: cfg.Workers, Parallel: cfg.Parallel, TTL: cfg.TTL}
	start := time.Now()
	rig, err := openRig(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engine.CloseTimeout)
		defer cancel()
		if cerr := rig.close(cctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	total := cfg.Runs * len(cfg.Settings)
	for i, k := range cfg.Settings {
		s, err := rig.race(ctx, k, i*cfg.Runs, total)
		res.Settings = append(res.Settings, s)
		if err != nil {
			return res, fmt.Errorf("stress under %s: %w", k, err)
		}
	}
	res.Took = time.Since(start)
	return res, nil
}

// rig is everything a stress needs on the server: a schema for the lease
// rows, one resource service, and one lane per parallel run.
type rig struct {
	cfg    StressConfig
	sql    stressSQL
	schema string
	admin  *pgx.Conn
	hc     *http.Client
	res    *resource.Service
	lanes  []*lane
}

// lane runs one run at a time: its own lease row, its own run at the
// resource and one session per holder.
// budget bounds one run: episodeBudget, scaled from the default TTL to
// this stress's.
func (r *rig) budget() time.Duration {
	return episodeBudget * time.Duration(r.cfg.TTL) / StressTTL
}

type lane struct {
	rig     *rig
	lease   string
	reset   *pgx.Conn
	holders []*pgx.Conn
	rc      *resource.Client
}

// stressResourceConns is how many PostgreSQL connections the resource may
// use per lane: as many as one resource per lane used to have.
const stressResourceConns = 4

func openRig(ctx context.Context, cfg StressConfig) (_ *rig, err error) {
	var sq stressSQL
	err = assets.LoadSQL(map[string]*string{
		"coordinator_schema": &sq.schema, "coordinator_read": &sq.read, "coordinator_acquire": &sq.acquire,
		"coordinator_renew_blind": &sq.renewBlind, "coordinator_renew_compare": &sq.renewCompare,
		"stress_lock": &sq.lock, "stress_reset": &sq.reset,
	})
	if err != nil {
		return nil, err
	}
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("cannot make a stress id: %w", err)
	}
	conns := cfg.Parallel * (cfg.Workers + 2)
	r := &rig{
		cfg:    cfg,
		sql:    sq,
		schema: "lr_stress_" + hex.EncodeToString(b[:]),
		hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			// Loopback only: never through a proxy.
			Proxy:       nil,
			DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			// Every lane talks to the one resource: keep a connection
			// for each request that can be under way at once.
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			DisableCompression:  true,
		}},
	}
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engine.CloseTimeout)
			defer cancel()
			_ = r.close(cctx)
		}
	}()
	if r.admin, err = r.dial(ctx, "setup"); err != nil {
		return r, err
	}
	if _, err := r.admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{r.schema}.Sanitize()); err != nil {
		return r, fmt.Errorf("cannot create the stress schema: %w", err)
	}
	if _, err := r.admin.Exec(ctx, r.sql.schema); err != nil {
		return r, fmt.Errorf("cannot create the leases table: %w", err)
	}
	// One service serves every lane, each lane a run of its own (its own
	// schema and fencing), as a room's runs share one host.
	r.res, err = resource.Start(ctx, resource.Config{
		DSN:      cfg.DSN,
		AppName:  "leaserace stress resource " + r.schema,
		MaxConns: int32(cfg.Parallel * stressResourceConns),
	})
	if err != nil {
		return r, fmt.Errorf("cannot start the resource: %w", err)
	}
	def := resource.NewClient(r.res.URL(), r.hc)
	for i := range cfg.Parallel {
		ln := &lane{rig: r, lease: "stress-" + strconv.Itoa(i+1)}
		r.lanes = append(r.lanes, ln)
		if ln.reset, err = r.dial(ctx, fmt.Sprintf("lane %d reset", i+1)); err != nil {
			return r, err
		}
		for h := range cfg.Workers {
			c, err := r.dial(ctx, fmt.Sprintf("lane %d %s", i+1, holderName(h)))
			if err != nil {
				return r, err
			}
			ln.holders = append(ln.holders, c)
		}
		// Named after the stress schema, so a run left behind by a killed
		// process is recognisably the stress's.
		if ln.rc, err = def.AddRun(ctx, fmt.Sprintf("%s_lane%d", r.schema, i+1), scenario.FencingMonotonic); err != nil {
			return r, fmt.Errorf("cannot start lane %d's run at the resource: %w", i+1, err)
		}
	}
	return r, nil
}

// dial opens one session whose application_name says which lane and holder
// it is, so pg_stat_activity shows the race, with search_path on the schema.
func (r *rig) dial(ctx context.Context, who string) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(r.cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("cannot read the connection string: %s", pgdsn.Redact(err.Error()))
	}
	cc.RuntimeParams["application_name"] = "leaserace stress " + who + " " + r.schema
	cc.RuntimeParams["search_path"] = r.schema
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to PostgreSQL for stress %s: %w", who, err)
	}
	return c, nil
}

// close stops the resource (it drops every run's schema), drops the stress
// schema and disconnects every session.
func (r *rig) close(ctx context.Context) error {
	var errs []error
	for _, ln := range r.lanes {
		for _, c := range ln.holders {
			_ = c.Close(ctx)
		}
		if ln.reset != nil {
			_ = ln.reset.Close(ctx)
		}
	}
	r.lanes = nil
	if r.res != nil {
		errs = append(errs, r.res.Close(ctx))
		r.res = nil
	}
	r.hc.CloseIdleConnections()
	if r.admin != nil {
		if !r.admin.IsClosed() {
			if _, err := r.admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{r.schema}.Sanitize()+" CASCADE"); err != nil {
				errs = append(errs, fmt.Errorf("cannot drop the stress schema %s: %w", r.schema, err))
			}
		}
		_ = r.admin.Close(ctx)
		r.admin = nil
	}
	return errors.Join(errs...)
}

// race runs cfg.Runs runs under one setting, spread over the lanes. done0
// is how many runs earlier settings finished, for progress.
func (r *rig) race(ctx context.Context, k scenario.Knobs, done0, total int) (StressSetting, error) {
	s := StressSetting{Renewal: k.Renewal, Fencing: k.Fencing}
	start := time.Now()
	for _, ln := range r.lanes {
		if err := ln.rc.SetFencing(ctx, k.Fencing); err != nil {
			return s, err
		}
	}
	var mu sync.Mutex
	next := 0
	g, gctx := errgroup.WithContext(ctx)
	for _, ln := range r.lanes {
		g.Go(func() (err error) {
			defer engine.CatchPanic(&err)
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= r.cfg.Runs {
					return nil
				}
				c, err := ln.episode(gctx, k.Renewal, StressSchedule(r.cfg.Seed, i, r.cfg.Workers, r.cfg.TTL))
				if err != nil {
					return fmt.Errorf("run %d: %w", i+1, err)
				}
				mu.Lock()
				s.add(c)
				if r.cfg.Progress != nil {
					r.cfg.Progress(done0+s.Runs, total)
				}
				mu.Unlock()
			}
		})
	}
	err := g.Wait()
	s.Took = time.Since(start)
	return s, err
}

// tally is what one run, or one holder in it, counted.
type tally struct {
	takeovers, stale int
	// writes is the run's effects log as scenario.Judge tallied it.
	writes scenario.Tally
}

func (s *StressSetting) add(t tally) {
	s.Runs++
	s.Takeovers += t.takeovers
	s.StaleRenewalsAccepted += t.stale
	s.Violations += t.writes.Conflicts
	s.ValidWritesRefused += t.writes.Blocked
	s.Accepted += t.writes.Accepted
	s.Rejected += t.writes.Refused
	if t.writes.Conflicts > 0 {
		s.ViolatingRuns++
	}
}

func holderName(i int) string { return "h" + strconv.Itoa(i+1) }

// episode is one run: reset the lease row and the resource, let the holders
// race, then read the resource's effects log and judge it by the contract.
func (ln *lane) episode(ctx context.Context, renewal scenario.Renewal, plan []HolderPlan) (tally, error) {
	ctx, cancel := context.WithTimeout(ctx, episodeTimeout)
	defer cancel()
	var t tally
	if err := ln.restart(ctx); err != nil {
		return t, err
	}
	start := time.Now()
	tallies := make([]tally, len(ln.holders))
	g, gctx := errgroup.WithContext(ctx)
	for h := range ln.holders {
		g.Go(func() (err error) {
			defer engine.CatchPanic(&err)
			tallies[h], err = ln.hold(gctx, h, renewal, plan[h], start)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return t, err
	}
	for _, x := range tallies {
		t.takeovers += x.takeovers
		t.stale += x.stale
	}
	var err error
	t.writes, _, err = ln.judge(ctx)
	return t, err
}

// restart frees the lane's lease row and resets its run at the resource.
func (ln *lane) restart(ctx context.Context) error {
	if _, err := ln.reset.Exec(ctx, ln.rig.sql.reset, ln.lease); err != nil {
		return fmt.Errorf("cannot reset the lease row: %w", err)
	}
	if _, err := ln.rc.Reset(ctx, stressInitialEpoch, nil); err != nil {
		return fmt.Errorf("cannot reset the resource: %w", err)
	}
	return nil
}

// judge reads the lane's effects log and judges it by the contract.
func (ln *lane) judge(ctx context.Context) (scenario.Tally, []scenario.Effect, error) {
	v, err := ln.rc.State(ctx)
	if err != nil {
		return scenario.Tally{}, nil, fmt.Errorf("cannot read the resource's effects: %w", err)
	}
	// The effects log is in seq order, the order the resource decided the
	// writes in (each holds the state row's lock while it does).
	scenario.Judge(stressInitialEpoch, v.Effects)
	return scenario.TallyOf(v.Effects), v.Effects, nil
}

// stressInitialEpoch is the resource's epoch at the start of every run.
const stressInitialEpoch = 0

// hold is one holder's part in a run: wait for the lease, write under it,
// then for each heartbeat let it travel, renew from the snapshot it carries
// and write again while it still believes it holds the lease. A holder that
// learns it lost (zero rows) stops.
func (ln *lane) hold(ctx context.Context, h int, renewal scenario.Renewal, p HolderPlan, start time.Time) (tally, error) {
	var t tally
	now := func() int64 { return time.Since(start).Milliseconds() }
	budget := ln.rig.budget()
	maxPolls := int(budget/pollEvery) + 1
	deadline := start.Add(budget)
	if err := sleepCtx(ctx, p.Start); err != nil {
		return t, err
	}
	var mine *scenario.Lease
	for polls := 0; mine == nil; polls++ {
		// Bounded twice: by the run's budget and by a count, in case
		// sleeps return early.
		if polls >= maxPolls || time.Now().After(deadline) {
			return t, nil
		}
		got, took, err := ln.acquire(ctx, h, now())
		if err != nil {
			return t, err
		}
		if got != nil {
			mine = got
			if took {
				t.takeovers++
			}
			break
		}
		if err := sleepCtx(ctx, pollEvery); err != nil {
			return t, err
		}
	}
	if err := ln.effect(ctx, h, mine, now(), 0); err != nil {
		return t, err
	}
	for i, d := range p.Heartbeats {
		if time.Now().After(deadline) {
			break
		}
		snap := *mine
		if err := sleepCtx(ctx, d); err != nil {
			return t, err
		}
		after, stale, err := ln.heartbeat(ctx, h, renewal, snap, now())
		if err != nil {
			return t, err
		}
		if stale {
			t.stale++
		}
		if after == nil {
			break
		}
		mine = after
		if err := ln.effect(ctx, h, mine, now(), i+1); err != nil {
			return t, err
		}
	}
	return t, nil
}

// acquire is holder h's acquire attempt at time now: the lease it got, if
// any, and whether it took the lease from another holder.
func (ln *lane) acquire(ctx context.Context, h int, now int64) (mine *scenario.Lease, took bool, err error) {
	me := holderName(h)
	before, after, rows, err := ln.coordinate(ctx, ln.holders[h], ln.rig.sql.acquire, ln.lease, me, now, int64(ln.rig.cfg.TTL))
	if err != nil {
		return nil, false, fmt.Errorf("%s's acquire: %w", me, err)
	}
	if rows != 1 {
		return nil, false, nil
	}
	return after, before != nil && before.Owner != "" && before.Owner != me, nil
}

// heartbeat is holder h's heartbeat carrying snap, arriving at time now
// and renewing with renewal: the lease the holder believes it holds
// afterwards (nil once it learns it lost), and whether the renewal was
// stale, i.e. changed a row that no longer held snap's epoch (owner and
// fence) because someone else had taken over since.
func (ln *lane) heartbeat(ctx context.Context, h int, renewal scenario.Renewal, snap scenario.Lease, now int64) (mine *scenario.Lease, stale bool, err error) {
	me := holderName(h)
	before, after, rows, err := ln.coordinate(ctx, ln.holders[h], ln.rig.sql.renew(renewal), ln.lease, snap.Owner, snap.Fence, snap.LeaseVersion, now, int64(ln.rig.cfg.TTL))
	if err != nil {
		return nil, false, fmt.Errorf("%s's heartbeat: %w", me, err)
	}
	stale = rows == 1 && (before == nil || before.Owner != snap.Owner || before.Fence != snap.Fence)
	if rows != 1 || after == nil || after.Owner != me {
		// Zero rows tells the holder its epoch is gone.
		return nil, stale, nil
	}
	// It believes the row it read back, as the engine's actors do.
	return after, stale, nil
}

// effect writes to the resource under the holder's fence if, by its own
// clock, the lease it holds has not expired.
func (ln *lane) effect(ctx context.Context, h int, l *scenario.Lease, now int64, n int) error {
	me := holderName(h)
	if l.Owner != me || now >= l.ExpiresAt {
		return nil
	}
	v, err := json.Marshal(fmt.Sprintf("%s fence %d write %d", me, l.Fence, n+1))
	if err != nil {
		return err
	}
	if _, err := ln.rc.Write(ctx, me, l.Fence, v); err != nil {
		return fmt.Errorf("%s's write: %w", me, err)
	}
	return nil
}

// coordinate runs one coordinator statement between a lock-and-read of the
// row and a read-back, in one batch: one round trip and one implicit
// transaction, so before is the row the statement acted on and after is
// what it left.
func (ln *lane) coordinate(ctx context.Context, conn *pgx.Conn, sql string, args ...any) (before, after *scenario.Lease, rows int64, err error) {
	sq := ln.rig.sql
	b := &pgx.Batch{}
	b.Queue(sq.lock, ln.lease)
	b.Queue(sql, args...)
	b.Queue(sq.read, ln.lease)
	br := conn.SendBatch(ctx, b)
	defer func() {
		if cerr := br.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("coordinator batch failed: %w", cerr)
		}
	}()
	if before, err = scanLease(br.QueryRow()); err != nil {
		return nil, nil, 0, fmt.Errorf("cannot lock the lease row: %w", err)
	}
	tag, err := br.Exec()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("coordinator statement failed: %w", err)
	}
	if after, err = scanLease(br.QueryRow()); err != nil {
		return nil, nil, 0, fmt.Errorf("cannot read the lease back: %w", err)
	}
	return before, after, tag.RowsAffected(), nil
}

func scanLease(row pgx.Row) (*scenario.Lease, error) {
	var l scenario.Lease
	err := row.Scan(&l.Owner, &l.Fence, &l.LeaseVersion, &l.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// sleepCtx waits d, or less if ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
