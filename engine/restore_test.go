package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/scenario"
)

// serverState is what PostgreSQL holds for a run, read with SQL: the
// coordinator's row and the resource's state with its effects log.
type serverState struct {
	Lease   *scenario.Lease
	Fence   int64
	Value   string
	Effects []string
}

func readServer(t *testing.T, ctx context.Context, c *pgx.Conn, r *engine.Run) serverState {
	t.Helper()
	var s serverState
	var l scenario.Lease
	err := c.QueryRow(ctx, "SELECT owner, fence, lease_version, expires_at FROM "+pgx.Identifier{r.Schema(), "leases"}.Sanitize()).
		Scan(&l.Owner, &l.Fence, &l.LeaseVersion, &l.ExpiresAt)
	switch {
	case err == pgx.ErrNoRows:
	case err != nil:
		t.Fatal(err)
	default:
		s.Lease = &l
	}
	res := engine.ResourceSchema(r)
	var v json.RawMessage
	if err := c.QueryRow(ctx, "SELECT fence, value FROM "+pgx.Identifier{res, "resource_state"}.Sanitize()).Scan(&s.Fence, &v); err != nil {
		t.Fatal(err)
	}
	s.Value = string(v)
	rows, _ := c.Query(ctx, "SELECT format('%s %s %s %s %s %s', seq, actor, fence, value, accepted, stored_fence) FROM "+
		pgx.Identifier{res, "effects"}.Sanitize()+" ORDER BY seq")
	if s.Effects, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStepBackRestores: a step back, from the end of a run to any
// position, costs the same round trips to PostgreSQL and requests to the
// resource whatever the position (counted as they went out, by the host's
// tracer and transport), and leaves the run, and the rows on the server,
// as a fresh run stepped forward to that position has them; stepping on
// to the end from there gives the fresh run's transcript. Every built-in
// scenario, and renewal-race under every knob setting.
func TestStepBackRestores(t *testing.T) {
	t.Parallel()
	ctx := enginetest.Ctx(t)
	dsn := pgtest.DSN(t)
	host := func() *engine.Host {
		h, err := engine.OpenHost(ctx, engine.HostConfig{DSN: dsn, MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close(context.Background()) })
		return h
	}
	backHost, freshHost := host(), host()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())

	type cfg struct {
		name  string
		knobs scenario.Knobs
	}
	var cases []cfg
	scs, err := scenario.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scs {
		cases = append(cases, cfg{sc.Name, enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff)})
	}
	for _, k := range scenario.AllKnobs() {
		cases = append(cases, cfg{"renewal-race", k})
	}
	var cost *engine.Trips
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s-%s", c.name, c.knobs.Renewal, c.knobs.Fencing), func(t *testing.T) {
			sc, err := scenario.Builtin(c.name)
			if err != nil {
				t.Fatal(err)
			}
			open := func(h *engine.Host) *engine.Run {
				r, err := engine.Open(ctx, engine.Config{Scenario: sc, Knobs: c.knobs, Host: h})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = r.Close(context.Background()) })
				return r
			}
			whole := open(freshHost)
			if err := whole.PlayAll(ctx); err != nil {
				t.Fatal(err)
			}
			want, err := whole.Transcript()
			if err != nil {
				t.Fatal(err)
			}
			back, fresh := open(backHost), open(freshHost)
			for n := 1; n < back.Len(); n++ {
				if _, err := fresh.Next(ctx); err != nil {
					t.Fatal(err)
				}
				if err := back.PlayAll(ctx); err != nil {
					t.Fatal(err)
				}
				before := backHost.Trips()
				if err := back.Seek(ctx, n); err != nil {
					t.Fatalf("step back to %d: %v", n, err)
				}
				after := backHost.Trips()
				d := engine.Trips{Rounds: after.Rounds - before.Rounds, Statements: after.Statements - before.Statements, Requests: after.Requests - before.Requests}
				if cost == nil {
					cost = &d
					t.Logf("a step back costs %+v", d)
				}
				if d.Rounds != cost.Rounds || d.Requests != cost.Requests || d.Statements > cost.Statements+1 || d.Statements < cost.Statements-1 {
					t.Errorf("a step back from %d to %d cost %+v; the first cost %+v", back.Len(), n, d, *cost)
				}
				if got, want := back.View(), fresh.View(); !reflect.DeepEqual(got, want) {
					t.Errorf("after a step back to %d the run shows\n%+v\na fresh run\n%+v", n, got, want)
				}
				if got, want := readServer(t, ctx, admin, back), readServer(t, ctx, admin, fresh); !reflect.DeepEqual(got, want) {
					t.Errorf("after a step back to %d the server holds\n%+v\nfor a fresh run\n%+v", n, got, want)
				}
			}
			// From the last step back, on to the end: the same run.
			if err := back.PlayAll(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := back.Transcript()
			if err != nil {
				t.Fatal(err)
			}
			if got.Digest != want.Digest {
				t.Errorf("stepped back to every position and on again, digest %s; a run played once %s", got.Digest, want.Digest)
			}
			if got, want := readServer(t, ctx, admin, back), readServer(t, ctx, admin, whole); !reflect.DeepEqual(got, want) {
				t.Errorf("at the end after the steps back the server holds\n%+v\nfor a run played once\n%+v", got, want)
			}
		})
	}
}

// TestKnobToggleAfterStepBack: a toggle replays the prefix under the new
// knobs (no run under them exists yet), also right after a step back;
// the run then matches a fresh one under the new knobs, and steps back
// under them restore.
func TestKnobToggleAfterStepBack(t *testing.T) {
	t.Parallel()
	ctx := enginetest.Ctx(t)
	dsn := pgtest.DSN(t)
	from := enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff)
	to := enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic)
	r := enginetest.Open(t, dsn, "renewal-race", from)
	fresh := enginetest.Open(t, dsn, "renewal-race", to)
	if err := r.PlayAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Seek(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := r.SetKnobs(ctx, to); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Seek(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if got, want := r.View(), fresh.View(); !reflect.DeepEqual(got, want) {
		t.Fatalf("toggled after a step back:\n%+v\nfresh under the new knobs:\n%+v", got, want)
	}
	if err := r.PlayAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Seek(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := r.PlayAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := fresh.PlayAll(ctx); err != nil {
		t.Fatal(err)
	}
	a, _ := r.Transcript()
	b, _ := fresh.Transcript()
	if a.Digest != b.Digest {
		t.Errorf("toggled, stepped back and on: digest %s; fresh under the new knobs %s", a.Digest, b.Digest)
	}
}
