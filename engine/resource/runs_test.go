package resource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/resource"
	"github.com/leaserace/leaserace/scenario"
)

// TestResourceRunsAPI drives /runs over raw HTTP, as another client than
// leaserace's own would: runs are created, named, refused, isolated from
// each other with fencing of their own, removed with their schema, and
// whatever is left goes with Close.
func TestResourceRunsAPI(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t) // before the deadline: it may start the cluster
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := resource.Start(ctx, resource.Config{DSN: dsn, Fencing: scenario.FencingMonotonic, AppName: "leaserace resource test"})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = res.Close(context.Background())
		}
	}()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	schemaExists := func(name string) bool {
		t.Helper()
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	u := res.URL()
	// A name of this test's own, so runs of other tests on the shared
	// server cannot collide with it.
	alpha := fmt.Sprintf("lr_t_alpha_%d", rand.Uint32())

	// Created with the fencing asked for, on a schema of its name.
	got := resCall(t, http.MethodPost, u+"/runs", `{"run":"`+alpha+`","fencing":"strict"}`)
	if got.status != http.StatusCreated || !resSameJSON(t, got.body, json.RawMessage(`{"run":"`+alpha+`","fencing":"strict"}`)) {
		t.Fatalf("POST /runs: %d %s", got.status, got.body)
	}
	if !schemaExists(alpha) {
		t.Fatalf("run %s has no schema", alpha)
	}
	// Without a name: a fresh one, fencing monotonic.
	got = resCall(t, http.MethodPost, u+"/runs", `{}`)
	var anon struct{ Run, Fencing string }
	if err := json.Unmarshal(got.body, &anon); err != nil || got.status != http.StatusCreated {
		t.Fatalf("POST /runs {}: %d %s (%v)", got.status, got.body, err)
	}
	if !strings.HasPrefix(anon.Run, "lr_res_") || anon.Fencing != "monotonic" || !schemaExists(anon.Run) {
		t.Errorf("an unnamed run: %+v (schema there: %v), want lr_res_… with monotonic fencing", anon, schemaExists(anon.Run))
	}

	// Refused: a taken name, a name that is no schema name, a bad fencing.
	for _, tc := range []struct {
		body   string
		status int
		says   string
	}{
		{`{"run":"` + alpha + `"}`, http.StatusConflict, "already exists"},
		{`{"run":"Alpha-1"}`, http.StatusBadRequest, "run name"},
		{`{"run":"1abc"}`, http.StatusBadRequest, "run name"},
		{`{"run":"` + strings.Repeat("a", 64) + `"}`, http.StatusBadRequest, "at most 63"},
		{`{"run":"lr_t_x","fencing":"sometimes"}`, http.StatusBadRequest, "fencing"},
		{`{"run":"lr_t_x","extra":1}`, http.StatusBadRequest, "extra"},
	} {
		got := resCall(t, http.MethodPost, u+"/runs", tc.body)
		if got.status != tc.status || !strings.Contains(got.errorText(t), tc.says) {
			t.Errorf("POST /runs %s: %d %s, want %d saying %q", tc.body, got.status, got.body, tc.status, tc.says)
		}
	}
	if schemaExists("lr_t_x") {
		t.Error("a refused run left a schema")
	}

	// Isolation: both runs start at epoch 5; an epoch-5 write is refused
	// by alpha (strict) and accepted by the default run (monotonic), and
	// neither run sees the other's effects.
	for _, base := range []string{u, u + "/runs/" + alpha} {
		if got := resCall(t, http.MethodPut, base+"/state", `{"epoch":5,"value":"v0"}`); got.status != http.StatusOK {
			t.Fatalf("PUT %s/state: %d %s", base, got.status, got.body)
		}
	}
	if got := resCall(t, http.MethodPost, u+"/runs/"+alpha+"/writes", `{"actor":"B","epoch":5,"value":"b"}`); got.status != http.StatusConflict {
		t.Errorf("alpha (strict) took epoch 5 over stored 5: %d %s", got.status, got.body)
	}
	if got := resCall(t, http.MethodPost, u+"/writes", `{"actor":"B","epoch":5,"value":"b"}`); got.status != http.StatusOK {
		t.Errorf("the default run (monotonic) refused epoch 5 over stored 5: %d %s", got.status, got.body)
	}
	if got := resCall(t, http.MethodPost, u+"/runs/"+alpha+"/writes", `{"actor":"A","epoch":6,"value":"a"}`); got.status != http.StatusOK {
		t.Errorf("alpha refused epoch 6: %d %s", got.status, got.body)
	}
	var def, al resource.View
	for _, x := range []struct {
		base string
		v    *resource.View
	}{{u, &def}, {u + "/runs/" + alpha, &al}} {
		got := resCall(t, http.MethodGet, x.base+"/state", "")
		if got.status != http.StatusOK {
			t.Fatalf("GET %s/state: %d %s", x.base, got.status, got.body)
		}
		if err := json.Unmarshal(got.body, x.v); err != nil {
			t.Fatal(err)
		}
	}
	if def.Fence != 5 || len(def.Effects) != 1 || def.Effects[0].Actor != "B" {
		t.Errorf("default run: epoch %d, effects %+v; want 5 with B's one write", def.Fence, def.Effects)
	} else if !def.Effects[0].Accepted {
		t.Errorf("default run: B's write was refused: %+v", def.Effects[0])
	}
	if al.Fence != 6 || len(al.Effects) != 2 || al.Effects[0].Accepted || !al.Effects[1].Accepted || al.Effects[1].Actor != "A" {
		t.Errorf("alpha: epoch %d, effects %+v; want 6 with B's write refused and A's accepted", al.Fence, al.Effects)
	}
	// Fencing is per run, and switching one leaves the other.
	if got := resCall(t, http.MethodPut, u+"/runs/"+alpha+"/fencing", `{"fencing":"off"}`); got.status != http.StatusOK {
		t.Fatalf("PUT alpha's fencing: %d %s", got.status, got.body)
	}
	if got := resCall(t, http.MethodGet, u+"/fencing", ""); !resSameJSON(t, got.body, json.RawMessage(`{"fencing":"monotonic"}`)) {
		t.Errorf("the default run's fencing after alpha's changed: %s", got.body)
	}

	// Unknown runs are 404 on every endpoint, and say how to make one.
	for _, p := range []struct{ method, path string }{
		{http.MethodGet, "/runs/lr_t_nope/state"},
		{http.MethodPost, "/runs/lr_t_nope/writes"},
		{http.MethodGet, "/runs/lr_t_nope/fencing"},
		{http.MethodDelete, "/runs/lr_t_nope"},
	} {
		body := ""
		if p.method == http.MethodPost {
			body = `{"epoch":1,"value":1}`
		}
		got := resCall(t, p.method, u+p.path, body)
		if got.status != http.StatusNotFound || !strings.Contains(got.errorText(t), `no run named "lr_t_nope": create one with POST /runs`) {
			t.Errorf("%s %s: %d %s, want 404 naming the run", p.method, p.path, got.status, got.body)
		}
	}
	// The default run is not removable.
	if got := resCall(t, http.MethodDelete, u+"/runs/"+res.Schema(), ""); got.status != http.StatusBadRequest {
		t.Errorf("DELETE the default run: %d %s, want 400", got.status, got.body)
	}
	if n := res.Runs(); n != 3 {
		t.Errorf("%d runs, want 3 (default, alpha, the unnamed one)", n)
	}

	// DELETE drops alpha's schema; alpha is then unknown, the rest untouched.
	if got := resCall(t, http.MethodDelete, u+"/runs/"+alpha, ""); got.status != http.StatusOK {
		t.Fatalf("DELETE alpha: %d %s", got.status, got.body)
	}
	if schemaExists(alpha) {
		t.Errorf("schema %s is still there after DELETE", alpha)
	}
	if got := resCall(t, http.MethodGet, u+"/runs/"+alpha+"/state", ""); got.status != http.StatusNotFound {
		t.Errorf("alpha after DELETE: %d %s", got.status, got.body)
	}
	if got := resCall(t, http.MethodGet, u+"/state", ""); got.status != http.StatusOK {
		t.Errorf("the default run after alpha's DELETE: %d %s", got.status, got.body)
	}

	// Close drops what is left: the default run's schema and the unnamed run's.
	closed = true
	if err := res.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{res.Schema(), anon.Run} {
		if schemaExists(s) {
			t.Errorf("schema %s is still there after Close", s)
		}
	}
}
