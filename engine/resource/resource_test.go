package resource_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/assets"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/resource"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/scenario/fixtures"
)

// startTestResource starts a resource on a fresh schema of the test server
// and closes it when the test ends.
func resStart(t testing.TB, f scenario.Fencing) (*resource.Service, *resource.Client) {
	t.Helper()
	// The first test to ask starts the package's cluster: that start-up
	// is not the resource's, so it is not in the resource's deadline.
	dsn := pgtest.DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := resource.Start(ctx, resource.Config{DSN: dsn, Fencing: f, AppName: "leaserace resource test"})
	if err != nil {
		t.Fatalf("StartResource: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := res.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}}
	t.Cleanup(hc.CloseIdleConnections)
	return res, resource.NewClient(res.URL(), hc)
}

// testConn opens a plain session on the resource's schema, for looking
// underneath the HTTP API.
func resConn(t testing.TB, res *resource.Service) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	cc, err := pgx.ParseConfig(pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	cc.RuntimeParams["search_path"] = pgx.Identifier{res.Schema()}.Sanitize()
	cc.RuntimeParams["application_name"] = "leaserace resource test probe"
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

type resReply struct {
	status int
	header http.Header
	body   []byte
}

// call sends a raw request, so tests see exactly the bytes on the wire.
func resCall(t testing.TB, method, u, body string) resReply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resReply{resp.StatusCode, resp.Header, b}
}

func (h resReply) errorText(t testing.TB) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(h.body, &e); err != nil || e.Error == "" {
		t.Fatalf("HTTP %d body is not {\"error\":...}: %s", h.status, h.body)
	}
	return e.Error
}

// resSQL is an embedded statement as the resource runs it.
func resSQL(t testing.TB, name string) string {
	t.Helper()
	b, err := fs.ReadFile(assets.FS, "sql/"+name+".sql")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// resNull is how the client sends a missing value.
func resNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

func resSameJSON(t testing.TB, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// admits is the seed's rule for each policy, the oracle the tests hold the
// SQL to.
func resAdmits(f scenario.Fencing, stored, epoch int64) bool {
	switch f {
	case scenario.FencingStrict:
		return epoch > stored
	case scenario.FencingMonotonic:
		return epoch >= stored
	}
	return true
}

// TestResourceFixtures plays the revoked-writer case's six checks, variants
// 1 to 3, under each policy over HTTP: off and strict fail exactly the checks
// the seed says they fail, monotonic passes all.
func TestResourceFixtures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, rc := resStart(t, scenario.FencingMonotonic)
	wantFailed := map[scenario.Fencing][]string{
		scenario.FencingOff:       {"late revoked writer", "new holder then old arrival"},
		scenario.FencingStrict:    {"same holder writes twice", "initial epoch may be zero"},
		scenario.FencingMonotonic: nil,
	}
	for _, f := range scenario.Fencings() {
		if err := rc.SetFencing(ctx, f); err != nil {
			t.Fatal(err)
		}
		for n := int64(1); n <= 3; n++ {
			fixtures, err := fixtures.RevokedWriterFixtures(n)
			if err != nil {
				t.Fatal(err)
			}
			var failed []string
			for _, fx := range fixtures {
				v, err := rc.Reset(ctx, fx.Initial.Fence, fx.Initial.Value)
				if err != nil {
					t.Fatal(err)
				}
				if v.Fence != fx.Initial.Fence || len(v.Effects) != 0 || v.Effects == nil {
					t.Fatalf("%s/%d %q: reset gave %+v", f, n, fx.Check, v)
				}
				stored := fx.Initial.Fence
				for i, w := range fx.Writes {
					wr, err := rc.Write(ctx, "writer", w.Fence, w.Value)
					if err != nil {
						t.Fatal(err)
					}
					want := resAdmits(f, stored, w.Fence)
					if wr.Accepted != want || wr.Effect.StoredFence != stored || wr.Effect.Seq != int64(i+1) || wr.Fencing != f {
						t.Errorf("%s/%d %q write %d (%d): got accepted=%v stored=%d seq=%d fencing=%s, want accepted=%v stored=%d seq=%d",
							f, n, fx.Check, i, w.Fence, wr.Accepted, wr.Effect.StoredFence, wr.Effect.Seq, wr.Fencing, want, stored, i+1)
					}
					if want {
						stored = w.Fence
						if wr.Tag != "UPDATE 1" || wr.Rows != 1 || wr.Reason != "" {
							t.Errorf("accepted write: tag %q rows %d reason %q", wr.Tag, wr.Rows, wr.Reason)
						}
					} else if wr.Tag != "UPDATE 0" || wr.Rows != 0 || wr.Reason == "" {
						t.Errorf("refused write: tag %q rows %d reason %q", wr.Tag, wr.Rows, wr.Reason)
					}
				}
				v, err = rc.State(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(v.Effects) != len(fx.Writes) {
					t.Errorf("%s/%d %q: %d effects, want %d", f, n, fx.Check, len(v.Effects), len(fx.Writes))
				}
				if v.Fence != fx.Expected.Fence || !resSameJSON(t, v.Value, resNull(fx.Expected.Value)) {
					failed = append(failed, fx.Check)
				}
			}
			if !slices.Equal(failed, wantFailed[f]) {
				t.Errorf("%s fencing, variant %d: failed %q, want %q", f, n, failed, wantFailed[f])
			}
		}
	}
}

func TestResourceRejectReasons(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, rc := resStart(t, scenario.FencingMonotonic)
	if _, err := rc.Reset(ctx, 2, json.RawMessage(`"x"`)); err != nil {
		t.Fatal(err)
	}
	wr, err := rc.Write(ctx, "old", 1, json.RawMessage(`"stale"`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "fence 1 is below the resource's highest fence accepted, 2: monotonic fencing accepts a fence at or above it"; wr.Reason != want || wr.Effect.Reason != want {
		t.Errorf("monotonic reason %q, want %q", wr.Reason, want)
	}
	if err := rc.SetFencing(ctx, scenario.FencingStrict); err != nil {
		t.Fatal(err)
	}
	wr, err = rc.Write(ctx, "holder", 2, json.RawMessage(`"again"`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "fence 2 is not above the resource's highest fence accepted, 2: strict fencing accepts only a fence above it"; wr.Reason != want {
		t.Errorf("strict reason %q, want %q", wr.Reason, want)
	}
	if wr.Fence != 2 || string(wr.Value) != `"x"` || wr.Effect.Actor != "holder" || string(wr.Effect.Value) != `"again"` {
		t.Errorf("refused write reports %+v", wr)
	}
}

func TestResourceWriteReportsItsSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, rc := resStart(t, scenario.FencingMonotonic)
	for _, f := range scenario.Fencings() {
		want := resSQL(t, "resource_write_"+string(f))
		if err := rc.SetFencing(ctx, f); err != nil {
			t.Fatal(err)
		}
		wr, err := rc.Write(ctx, "", 5, json.RawMessage(`{"b": 1, "a": [true, null]}`))
		if err != nil {
			t.Fatal(err)
		}
		if wr.SQL != want {
			t.Errorf("%s: SQL %q, want %q", f, wr.SQL, want)
		}
		if len(wr.Args) != 2 || wr.Args[0] != int64(5) || string(wr.Args[1].(json.RawMessage)) != `{"b":1,"a":[true,null]}` {
			t.Errorf("%s: args %#v", f, wr.Args)
		}
		if wr.Effect.Actor != "anonymous" {
			t.Errorf("actor defaulted to %q", wr.Effect.Actor)
		}
	}
}

func TestResourceBoundaryEpochs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	res, rc := resStart(t, scenario.FencingMonotonic)
	u := res.URL()
	// 2^53 + 1: the first integer a float64 cannot hold.
	const big = "9007199254740993"
	for _, epoch := range []string{"0", big, strconv.FormatInt(math.MaxInt64, 10)} {
		t.Run(epoch, func(t *testing.T) {
			h := resCall(t, http.MethodPut, u+"/state", `{"fence":`+epoch+`,"value":{"at":"`+epoch+`"}}`)
			if h.status != http.StatusOK || !bytes.Contains(h.body, []byte(`"fence":`+epoch+`,`)) {
				t.Fatalf("reset: %d %s", h.status, h.body)
			}
			// The holder writes again at the same epoch: monotonic accepts it.
			h = resCall(t, http.MethodPost, u+"/writes", `{"fence":`+epoch+`,"value":"same","actor":"holder"}`)
			if h.status != http.StatusOK || !bytes.Contains(h.body, []byte(`"fence":`+epoch+`,`)) || !bytes.Contains(h.body, []byte(`"args":[`+epoch+`,"same"]`)) {
				t.Fatalf("write: %d %s", h.status, h.body)
			}
			h = resCall(t, http.MethodGet, u+"/state", "")
			if h.status != http.StatusOK || !bytes.Contains(h.body, []byte(`{"fence":`+epoch+`,"value":"same"`)) ||
				!bytes.Contains(h.body, []byte(`"stored_fence":`+epoch+`}`)) {
				t.Fatalf("read back: %d %s", h.status, h.body)
			}
			want, _ := strconv.ParseInt(epoch, 10, 64)
			v, err := rc.State(ctx)
			if err != nil || v.Fence != want || v.Effects[0].StoredFence != want {
				t.Fatalf("client read %+v, %v; want epoch %d", v, err, want)
			}
			wr, err := rc.Write(ctx, "client", want, json.RawMessage(`1`))
			if err != nil || !wr.Accepted || wr.Fence != want || wr.Args[0] != want {
				t.Fatalf("client write %+v, %v", wr, err)
			}
		})
	}
	if err := rc.SetFencing(ctx, scenario.FencingStrict); err != nil {
		t.Fatal(err)
	}
	wr, err := rc.Write(ctx, "holder", math.MaxInt64, json.RawMessage(`"again"`))
	if err != nil || wr.Accepted || !strings.Contains(wr.Reason, "fence 9223372036854775807 is not above the resource's highest fence accepted, 9223372036854775807") {
		t.Fatalf("strict at MaxInt64: %+v, %v", wr, err)
	}
}

func TestResourceValuesAnyJSON(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, rc := resStart(t, scenario.FencingOff)
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	for i, v := range []string{`null`, `true`, `0`, `-1.5e3`, `"é \" \\ ☃"`, `[]`, `{}`, `{"z":1,"a":{"b":[1,"2",null]}}`, `123456789012345678901234567890`, deep} {
		wr, err := rc.Write(ctx, "w", int64(i), json.RawMessage(v))
		if err != nil {
			t.Fatalf("%.40s: %v", v, err)
		}
		got, err := rc.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !wr.Accepted || !resSameJSON(t, got.Value, json.RawMessage(v)) || !resSameJSON(t, wr.Value, json.RawMessage(v)) {
			t.Errorf("%.40s: stored %.40s, write answered %.40s", v, got.Value, wr.Value)
		}
	}
}

// TestResourceValueBeyondFloat64: 2e700 is valid JSON and a valid jsonb
// number, but no float64; the client must carry it as written.
func TestResourceValueBeyondFloat64(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, rc := resStart(t, scenario.FencingMonotonic)
	wr, err := rc.Write(ctx, "w", 1, json.RawMessage(`2e700`))
	if err != nil || !wr.Accepted {
		t.Fatalf("write: %+v, %v", wr, err)
	}
	want := "2" + strings.Repeat("0", 700)
	if string(wr.Value) != want || string(wr.Args[1].(json.RawMessage)) != "2e700" {
		t.Errorf("value %.20s… (%d bytes), args %v", wr.Value, len(wr.Value), wr.Args)
	}
	v, err := rc.State(ctx)
	if err != nil || string(v.Value) != want || string(v.Effects[0].Value) != want {
		t.Errorf("state %+v, %v", v, err)
	}
}

func TestResourceResetClearsEffects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, rc := resStart(t, scenario.FencingMonotonic)
	for round := 0; round < 2; round++ {
		if _, err := rc.Reset(ctx, 3, nil); err != nil {
			t.Fatal(err)
		}
		for i := int64(1); i <= 3; i++ {
			wr, err := rc.Write(ctx, "a", 3+i, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Seq counts from 1 after every reset, so replays number alike.
			if wr.Effect.Seq != i {
				t.Errorf("round %d: seq %d, want %d", round, wr.Effect.Seq, i)
			}
		}
		v, err := rc.State(ctx)
		if err != nil || len(v.Effects) != 3 || v.Fence != 6 || string(v.Value) != "null" {
			t.Fatalf("state %+v, %v", v, err)
		}
	}
}

// TestResourceBadInput sends every kind of bad request and checks each is
// refused with a message and leaves the state and effects exactly as they were.
func TestResourceBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	res, rc := resStart(t, scenario.FencingMonotonic)
	u := res.URL()
	if _, err := rc.Reset(ctx, 7, json.RawMessage(`"seed"`)); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Write(ctx, "w", 8, json.RawMessage(`{"k":"v"}`)); err != nil {
		t.Fatal(err)
	}
	before := resCall(t, http.MethodGet, u+"/state", "")
	if before.status != http.StatusOK {
		t.Fatal(before.status)
	}
	huge := `{"fence":9,"value":"` + strings.Repeat("x", 70<<10) + `"}`
	cases := []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", "/writes", ``, 400, "request body is empty"},
		{"POST", "/writes", `{"fence":9,`, 400, "ends in the middle"},
		{"POST", "/writes", `{fence:9}`, 400, "not valid JSON at byte 2"},
		{"POST", "/writes", `[9,"v"]`, 400, "want a JSON object"},
		{"POST", "/writes", `"9"`, 400, "want a JSON object"},
		{"POST", "/writes", `null`, 400, "fence is missing"},
		{"POST", "/writes", `{"value":1}`, 400, "fence is missing"},
		{"POST", "/writes", `{"epoch":null,"value":1}`, 400, "fence is missing"},
		{"POST", "/writes", `{"epoch":-1,"value":1}`, 400, "fence -1 is negative"},
		{"POST", "/writes", `{"fence":1.5,"value":1}`, 400, "fence 1.5 is not a whole number"},
		{"POST", "/writes", `{"fence":9.0,"value":1}`, 400, "not a whole number"},
		{"POST", "/writes", `{"fence":1e3,"value":1}`, 400, "fence 1e3 is not a whole number"},
		{"POST", "/writes", `{"epoch":"7","value":1}`, 400, `fence "7" is not an integer`},
		{"POST", "/writes", `{"fence":true,"value":1}`, 400, "not an integer"},
		{"POST", "/writes", `{"fence":9223372036854775808,"value":1}`, 400, "does not fit in a signed 64-bit integer"},
		{"POST", "/writes", `{"fence":-9223372036854775809,"value":1}`, 400, "does not fit"},
		{"POST", "/writes", `{"epoch":9,"value":1,"extra":true}`, 400, `unknown field "extra"`},
		{"POST", "/writes", `{"fence":9}`, 400, "value is missing"},
		{"POST", "/writes", huge, 413, "larger than 64 KiB"},
		{"POST", "/writes", `{"fence":9,"value":1} x`, 400, "more data after the JSON object"},
		{"POST", "/writes", `{"fence":9,"value":1}{"fence":10,"value":2}`, 400, "more data after the JSON object"},
		{"POST", "/writes", `{"fence":9,"value":1,"actor":5}`, 400, `field "actor" is a JSON number`},
		{"POST", "/writes", `{"fence":9,"value":1,"actor":"` + strings.Repeat("é", 65) + `"}`, 400, "actor is 65 characters long; at most 64"},
		{"POST", "/writes", `{"fence":9,"value":1,"actor":"a\nb"}`, 400, "control character"},
		// Acceptable epochs with values jsonb refuses: the transaction rolls
		// back, so not even a refused effect is recorded.
		{"POST", "/writes", `{"fence":9,"value":"\u0000"}`, 400, "value cannot be stored as jsonb: unsupported Unicode escape sequence"},
		{"POST", "/writes", `{"fence":9,"value":"\ud800"}`, 400, "value cannot be stored as jsonb"},
		{"POST", "/writes", `{"fence":9,"value":1e999999}`, 400, "value cannot be stored as jsonb: value overflows numeric format"},
		{"POST", "/writes", `{"fence":9,"value":"` + "\xff" + `"}`, 400, "value is not valid UTF-8"},
		{"POST", "/writes", strings.Repeat("[", 10001) + strings.Repeat("]", 10001), 400, "not valid JSON"},
		{"PUT", "/state", `{"fence":1}`, 400, "value is missing"},
		{"PUT", "/state", `{"fence":1,"value":1,"actor":"a"}`, 400, `unknown field "actor"`},
		{"PUT", "/state", `{"epoch":-5,"value":1}`, 400, "negative"},
		{"PUT", "/state", `{"fence":1,"value":"\u0000"}`, 400, "value cannot be stored as jsonb"},
		{"PUT", "/state", `{"fence":1,"value":1}]`, 400, "more data after the JSON object"},
		{"PUT", "/state", huge, 413, "larger than 64 KiB"},
		// The fence's old name is read, but not beside the new one.
		{"POST", "/writes", `{"fence":9,"epoch":9,"value":1}`, 400, `send the fence once, as "fence"; "epoch" is its old name`},
		{"PUT", "/state", `{"epoch":9,"fence":9,"value":1}`, 400, `send the fence once`},
		{"PUT", "/fencing", `{"fencing":"lax"}`, 400, `unknown fencing "lax"`},
		{"PUT", "/fencing", `{}`, 400, "fencing is missing"},
		{"PUT", "/fencing", `{"fencing":"off","x":1}`, 400, `unknown field "x"`},
	}
	for _, c := range cases {
		h := resCall(t, c.method, u+c.path, c.body)
		if msg := h.errorText(t); h.status != c.status || !strings.Contains(msg, c.want) {
			t.Errorf("%s %s %.60q: got %d %q, want %d containing %q", c.method, c.path, c.body, h.status, msg, c.status, c.want)
		}
		if ct := h.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", c.method, c.path, ct)
		}
		after := resCall(t, http.MethodGet, u+"/state", "")
		if !bytes.Equal(after.body, before.body) {
			t.Errorf("%s %s %.60q changed the state:\n before %s\n after  %s", c.method, c.path, c.body, before.body, after.body)
		}
	}
	// Refused writes that got as far as the database rolled back cleanly:
	// the connections they used still work.
	for range 8 {
		wr, err := rc.Write(ctx, "w", 9, json.RawMessage(`"ok"`))
		if err != nil || !wr.Accepted || wr.Effect.Seq < 2 {
			t.Fatalf("write after the bad ones: %+v, %v", wr, err)
		}
	}
	if f, err := rc.Fencing(ctx); err != nil || f != scenario.FencingMonotonic {
		t.Errorf("fencing after bad input: %q, %v", f, err)
	}
}

func TestResourceMethodsAndPaths(t *testing.T) {
	t.Parallel()
	res, _ := resStart(t, scenario.FencingMonotonic)
	u := res.URL()
	for _, c := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/writes", 405, "POST"},
		{"PUT", "/writes", 405, "POST"},
		{"DELETE", "/state", 405, "GET, PUT"},
		{"POST", "/state", 405, "GET, PUT"},
		{"PATCH", "/fencing", 405, "GET, PUT"},
		{"POST", "/healthz", 405, "GET"},
		{"GET", "/", 404, ""},
		{"GET", "/nope", 404, ""},
		{"GET", "/state/", 404, ""},
		{"GET", "/State", 404, ""},
	} {
		h := resCall(t, c.method, u+c.path, "")
		msg := h.errorText(t)
		if h.status != c.status || h.header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d Allow %q (%s), want %d Allow %q", c.method, c.path, h.status, h.header.Get("Allow"), msg, c.status, c.allow)
		}
	}
	h := resCall(t, http.MethodGet, u+"/healthz", "")
	if h.status != 200 || strings.TrimSpace(string(h.body)) != `{"ok":true}` {
		t.Errorf("healthz: %d %s", h.status, h.body)
	}
}

func TestResourceFencingSwitchLive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	res, rc := resStart(t, scenario.FencingStrict)
	if f, err := rc.Fencing(ctx); err != nil || f != scenario.FencingStrict {
		t.Fatalf("fencing %q, %v", f, err)
	}
	if _, err := rc.Reset(ctx, 5, nil); err != nil {
		t.Fatal(err)
	}
	step := func(epoch int64, accepted bool, f scenario.Fencing) {
		t.Helper()
		wr, err := rc.Write(ctx, "a", epoch, nil)
		if err != nil || wr.Accepted != accepted || wr.Fencing != f {
			t.Fatalf("write %d under %s: %+v, %v; want accepted=%v", epoch, f, wr, err, accepted)
		}
	}
	step(5, false, scenario.FencingStrict)
	h := resCall(t, http.MethodPut, res.URL()+"/fencing", `{"fencing":"monotonic"}`)
	if h.status != 200 || strings.TrimSpace(string(h.body)) != `{"fencing":"monotonic"}` {
		t.Fatalf("PUT /fencing: %d %s", h.status, h.body)
	}
	step(5, true, scenario.FencingMonotonic)
	step(4, false, scenario.FencingMonotonic)
	if err := rc.SetFencing(ctx, scenario.FencingOff); err != nil {
		t.Fatal(err)
	}
	step(1, true, scenario.FencingOff)
	if v, err := rc.State(ctx); err != nil || v.Fence != 1 || v.Fencing != scenario.FencingOff {
		t.Fatalf("state %+v, %v", v, err)
	}

	// Switching while writes run is safe (run with -race to see it).
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for f := scenario.FencingOff; ; f = f.Next() {
			select {
			case <-stop:
				return
			default:
			}
			if err := rc.SetFencing(ctx, f); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := range 50 {
		wr, err := rc.Write(ctx, "racer", int64(i), nil)
		if err != nil {
			t.Fatal(err)
		}
		if wr.Accepted != resAdmits(wr.Fencing, wr.Effect.StoredFence, int64(i)) {
			t.Errorf("write %d under %s against %d: accepted=%v", i, wr.Fencing, wr.Effect.StoredFence, wr.Accepted)
		}
	}
	close(stop)
	wg.Wait()
}

// TestResourceConcurrentWriters has eight writers race with random epochs
// under monotonic fencing. Whatever the interleaving, the log must read as if
// the writes ran one at a time.
func TestResourceConcurrentWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, rc := resStart(t, scenario.FencingMonotonic)
	if _, err := rc.Reset(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 40
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results []resource.WriteResult
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for range each {
				e := rng.Int64N(200)
				wr, err := rc.Write(ctx, fmt.Sprintf("w%d", w), e, json.RawMessage(strconv.FormatInt(e, 10)))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				results = append(results, wr)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	v, err := rc.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Effects) != writers*each || len(results) != writers*each {
		t.Fatalf("%d effects, %d results; want %d", len(v.Effects), len(results), writers*each)
	}
	var maxAccepted, high int64 = -1, 0
	for i, e := range v.Effects {
		if e.Seq != int64(i+1) {
			t.Fatalf("effect %d has seq %d", i, e.Seq)
		}
		// Each write was compared against what the previous accepted write left.
		if e.StoredFence != high {
			t.Errorf("seq %d compared against %d, but the stored epoch was %d", e.Seq, e.StoredFence, high)
		}
		if e.Accepted != (e.Fence >= high) {
			t.Errorf("seq %d: epoch %d against %d accepted=%v", e.Seq, e.Fence, high, e.Accepted)
		}
		if e.Accepted {
			if e.Fence < maxAccepted {
				t.Errorf("seq %d accepted epoch %d after %d had been accepted", e.Seq, e.Fence, maxAccepted)
			}
			maxAccepted, high = e.Fence, e.Fence
		}
	}
	if v.Fence != maxAccepted || string(v.Value) != strconv.FormatInt(maxAccepted, 10) {
		t.Errorf("stored (%d, %s); the highest accepted epoch is %d", v.Fence, v.Value, maxAccepted)
	}
	bySeq := map[int64]resource.WriteResult{}
	for _, r := range results {
		bySeq[r.Effect.Seq] = r
	}
	for _, e := range v.Effects {
		r, ok := bySeq[e.Seq]
		if !ok || r.Accepted != e.Accepted || r.Effect.Fence != e.Fence || r.Effect.StoredFence != e.StoredFence {
			t.Errorf("seq %d: the writer was told %+v, the log says %+v", e.Seq, r.Effect, e)
		}
	}
}

// waitForLockWait blocks until the backend pid is waiting on a lock.
func resWaitForLockWait(t *testing.T, probe *pgx.Conn, pid uint32, app string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		err := probe.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND (pid = $1 OR ($1 = 0 AND application_name = $2))`, int64(pid), app).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("the second writer never waited for the row lock")
}

// TestFencingStatementRechecksAfterLockWait shows the claim the tool teaches:
// the monotonic UPDATE alone, under READ COMMITTED, stays correct when it had
// to wait. Writer B checks epoch 7 against a snapshot holding 5, waits for A
// (who writes 10), then re-checks against 10 and changes nothing.
func TestFencingStatementRechecksAfterLockWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	res, rc := resStart(t, scenario.FencingMonotonic)
	if _, err := rc.Reset(ctx, 5, json.RawMessage(`"five"`)); err != nil {
		t.Fatal(err)
	}
	stmt := resSQL(t, "resource_write_monotonic")
	a, b, probe := resConn(t, res), resConn(t, res), resConn(t, res)
	txA, err := a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tag, err := txA.Exec(ctx, stmt, int64(10), json.RawMessage(`"ten"`)); err != nil || tag.String() != "UPDATE 1" {
		t.Fatalf("A: %v %v", tag, err)
	}
	pidB := b.PgConn().PID()
	tagB := make(chan string, 1)
	go func() {
		tag, err := b.Exec(ctx, stmt, int64(7), json.RawMessage(`"seven"`))
		if err != nil {
			t.Error(err)
		}
		tagB <- tag.String()
	}()
	resWaitForLockWait(t, probe, pidB, "")
	if err := txA.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tag := <-tagB; tag != "UPDATE 0" {
		t.Errorf("B, after waiting for A: %s, want UPDATE 0", tag)
	}
	v, err := rc.State(ctx)
	if err != nil || v.Fence != 10 || string(v.Value) != `"ten"` {
		t.Fatalf("state %+v, %v", v, err)
	}

	// The same race through the HTTP API: the refused write names the
	// epoch it really lost to.
	txA, err = a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txA.Exec(ctx, stmt, int64(12), json.RawMessage(`"twelve"`)); err != nil {
		t.Fatal(err)
	}
	got := make(chan resource.WriteResult, 1)
	go func() {
		wr, err := rc.Write(ctx, "late", 11, json.RawMessage(`"eleven"`))
		if err != nil {
			t.Error(err)
		}
		got <- wr
	}()
	// Each request names its run and actor in application_name.
	resWaitForLockWait(t, probe, 0, "leaserace resource test "+res.Schema()+" late")
	if err := txA.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wr := <-got
	if wr.Accepted || wr.Effect.StoredFence != 12 || wr.Fence != 12 ||
		wr.Reason != "fence 11 is below the resource's highest fence accepted, 12: monotonic fencing accepts a fence at or above it" {
		t.Errorf("late write: %+v", wr)
	}
}

// TestFencingStatementUnderContention runs only the monotonic statement from
// eight sessions that hold the row a while before committing, so many of
// them wait and re-check. The stored epoch must end at the highest epoch any
// of them was allowed to write.
func TestFencingStatementUnderContention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	res, rc := resStart(t, scenario.FencingMonotonic)
	if _, err := rc.Reset(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	stmt := resSQL(t, "resource_write_monotonic")
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted []int64
	)
	for w := range 8 {
		c := resConn(t, res)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range 25 {
				e := rng.Int64N(1000)
				err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
					tag, err := tx.Exec(ctx, stmt, e, json.RawMessage(strconv.FormatInt(e, 10)))
					if err != nil {
						return err
					}
					if tag.RowsAffected() == 1 {
						mu.Lock()
						accepted = append(accepted, e)
						mu.Unlock()
					}
					_, err = tx.Exec(ctx, "SELECT pg_sleep(0.0005)")
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	v, err := rc.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if top := slices.Max(accepted); v.Fence != top || string(v.Value) != strconv.FormatInt(top, 10) {
		t.Errorf("stored (%d, %s), highest accepted epoch %d", v.Fence, v.Value, top)
	}
}

func TestResourceCloseDropsSchemaAndFreesPort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	res, err := resource.Start(ctx, resource.Config{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	schema := res.Schema()
	if !strings.HasPrefix(schema, "lr_res_") {
		t.Errorf("schema %q", schema)
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	exists := func() bool {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", schema).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	if !exists() {
		t.Fatalf("schema %s was not created", schema)
	}
	rc := resource.NewClient(res.URL(), nil)
	if err := rc.Healthy(ctx); err != nil {
		t.Fatal(err)
	}
	if err := res.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if exists() {
		t.Errorf("schema %s is still there after Close", schema)
	}
	var tables int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", schema).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("%d tables left in %s (%v)", tables, schema, err)
	}
	if err := res.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	addr := strings.TrimPrefix(res.URL(), "http://")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Errorf("port still taken after Close: %v", err)
	} else {
		ln.Close()
	}
	_, err = rc.State(ctx)
	if err == nil || !strings.Contains(err.Error(), "resource at "+res.URL()+" refused the connection: is it running?") {
		t.Errorf("client after Close: %v", err)
	}
}

func TestResourceNamedSchemaIsKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	schema := fmt.Sprintf("lr_res_kept_%d", time.Now().UnixNano())
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		_ = c.Close(context.Background())
	})
	for round := range 2 {
		res, err := resource.Start(ctx, resource.Config{DSN: dsn, Schema: schema, Fencing: scenario.FencingStrict})
		if err != nil {
			t.Fatal(err)
		}
		rc := resource.NewClient(res.URL(), nil)
		if round == 0 {
			if _, err := rc.Write(ctx, "a", 4, json.RawMessage(`"kept"`)); err != nil {
				t.Fatal(err)
			}
		}
		v, err := rc.State(ctx)
		if err != nil || v.Fence != 4 || string(v.Value) != `"kept"` || len(v.Effects) != 1 {
			t.Errorf("round %d: %+v, %v", round, v, err)
		}
		if err := res.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := resource.Start(ctx, resource.Config{DSN: dsn, Schema: strings.Repeat("s", 64)}); err == nil || !strings.Contains(err.Error(), "at most 63") {
		t.Errorf("64-byte schema name: %v", err)
	}
}

// A named schema kept by a leaserace from before the columns were named
// fence (epoch, stored_epoch) is taken over: its state and effects stay,
// and writes are judged and recorded as before.
func TestResourceNamedSchemaWithOldColumnNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	schema := fmt.Sprintf("lr_res_old_%d", time.Now().UnixNano())
	ident := pgx.Identifier{schema}.Sanitize()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+ident+" CASCADE")
		_ = c.Close(context.Background())
	})
	// The tables as resource_schema.sql made them before the rename.
	old := "CREATE SCHEMA " + ident + `;
		CREATE TABLE ` + ident + `.resource_state (id int PRIMARY KEY CHECK (id = 1),
			epoch bigint NOT NULL CHECK (epoch >= 0), value jsonb NOT NULL);
		CREATE TABLE ` + ident + `.effects (seq bigint PRIMARY KEY, actor text NOT NULL,
			epoch bigint NOT NULL, value jsonb NOT NULL, accepted boolean NOT NULL,
			reason text NOT NULL, stored_epoch bigint NOT NULL);
		INSERT INTO ` + ident + `.resource_state VALUES (1, 3, '"old"');
		INSERT INTO ` + ident + `.effects VALUES (1, 'a', 3, '"old"', true, 'accepted', 0)`
	if _, err := c.Exec(ctx, old); err != nil {
		t.Fatal(err)
	}

	res, err := resource.Start(ctx, resource.Config{DSN: dsn, Schema: schema, Fencing: scenario.FencingMonotonic})
	if err != nil {
		t.Fatalf("start on the old tables: %v", err)
	}
	t.Cleanup(func() { res.Close(context.Background()) })
	rc := resource.NewClient(res.URL(), nil)
	v, err := rc.State(ctx)
	if err != nil || v.Fence != 3 || string(v.Value) != `"old"` || len(v.Effects) != 1 || v.Effects[0].Fence != 3 {
		t.Fatalf("state kept from the old tables: %+v, %v", v, err)
	}
	if w, err := rc.Write(ctx, "b", 2, json.RawMessage(`"stale"`)); err != nil || w.Accepted {
		t.Errorf("fence 2 below the stored 3: %+v, %v", w, err)
	}
	w, err := rc.Write(ctx, "b", 4, json.RawMessage(`"new"`))
	if err != nil || !w.Accepted || w.Fence != 4 {
		t.Errorf("fence 4 above the stored 3: %+v, %v", w, err)
	}
	var cols []string
	rows, _ := c.Query(ctx, `SELECT table_name || '.' || column_name FROM information_schema.columns
		WHERE table_schema = $1 AND column_name LIKE '%fence' OR table_schema = $1 AND column_name LIKE '%epoch'
		ORDER BY 1`, schema)
	cols, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"effects.fence", "effects.stored_fence", "resource_state.fence"}; !slices.Equal(cols, want) {
		t.Errorf("columns after the start: %v, want %v", cols, want)
	}
	v, err = rc.State(ctx)
	if err != nil || len(v.Effects) != 3 || v.Effects[2].StoredFence != 3 {
		t.Errorf("effects after two writes: %+v, %v", v, err)
	}
}

func TestStartResourceChecksItsConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// No server behind this DSN: each refusal must come before any connection.
	nowhere := "host=/nonexistent/leaserace user=u password=sekrit-pw dbname=d connect_timeout=2"
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:8080", "example.com:80", "[::]:0"} {
		_, err := resource.Start(ctx, resource.Config{DSN: nowhere, Listen: addr})
		if err == nil || !strings.Contains(err.Error(), strconv.Quote(addr)) || !strings.Contains(err.Error(), "not a loopback address") {
			t.Errorf("Listen %q: %v", addr, err)
		}
	}
	if _, err := resource.Start(ctx, resource.Config{DSN: nowhere, Fencing: "lax"}); err == nil || !strings.Contains(err.Error(), `unknown fencing "lax"`) {
		t.Errorf("fencing lax: %v", err)
	}
	_, err := resource.Start(ctx, resource.Config{DSN: nowhere})
	if err == nil || strings.Contains(err.Error(), "sekrit-pw") {
		t.Errorf("unreachable server: %v", err)
	}
	t.Logf("unreachable server: %v", err)

	dsn := pgtest.DSN(t)
	for _, addr := range []string{"localhost:0", "127.0.0.2:0"} {
		res, err := resource.Start(ctx, resource.Config{DSN: dsn, Listen: addr})
		if err != nil {
			t.Errorf("Listen %q: %v", addr, err)
			continue
		}
		if u, err := url.Parse(res.URL()); err != nil || !net.ParseIP(u.Hostname()).IsLoopback() {
			t.Errorf("URL %q", res.URL())
		}
		if err := res.Close(ctx); err != nil {
			t.Error(err)
		}
	}
}

func TestResourceStoreUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The DSN's password (or one added, which a trust server ignores) must
	// appear in no answer.
	dsn := pgtest.DSN(t)
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	secret := cc.Password
	if secret == "" {
		secret = "sekrit-pw"
		if strings.Contains(dsn, "://") {
			u, err := url.Parse(dsn)
			if err != nil {
				t.Fatal(err)
			}
			u.User = url.UserPassword(u.User.Username(), secret)
			dsn = u.String()
		} else {
			dsn += " password=" + secret
		}
	}
	res, err := resource.Start(ctx, resource.Config{DSN: dsn})
	if err != nil {
		t.Fatalf("StartResource with a password: %v", err)
	}
	t.Cleanup(func() { _ = res.Close(context.Background()) })
	rc := resource.NewClient(res.URL(), nil)
	// Pull the tables out from under the resource: every store call fails.
	c := resConn(t, res)
	if _, err := c.Exec(ctx, "DROP TABLE effects, resource_state"); err != nil {
		t.Fatal(err)
	}
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/state", ""},
		{"PUT", "/state", `{"epoch":1,"value":1}`},
		{"POST", "/writes", `{"epoch":1,"value":1}`},
	} {
		h := resCall(t, req.method, res.URL()+req.path, req.body)
		if msg := h.errorText(t); h.status != 503 || !strings.HasPrefix(msg, "resource store unavailable: ") || strings.Contains(msg, secret) {
			t.Errorf("%s %s: %d %s", req.method, req.path, h.status, msg)
		}
	}
	_, err = rc.Write(ctx, "a", 1, nil)
	var re *resource.CallError
	if !errors.As(err, &re) || re.Status != 503 || !strings.Contains(err.Error(), "resource at "+res.URL()+" refused the write: resource store unavailable") {
		t.Errorf("client: %v", err)
	}
	if h := resCall(t, "GET", res.URL()+"/healthz", ""); h.status != 200 {
		t.Errorf("healthz without tables: %d %s", h.status, h.body)
	}
}

// TestResourceOutlivesDeadSessions: when its idle sessions die (as they do
// when PostgreSQL restarts) the resource notices before it uses them and
// connects again, so the next request still succeeds.
func TestResourceOutlivesDeadSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	app := fmt.Sprintf("leaserace resource test %d", time.Now().UnixNano())
	res, err := resource.Start(ctx, resource.Config{DSN: dsn, AppName: app})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Close(context.Background()) })
	rc := resource.NewClient(res.URL(), nil)
	if _, err := rc.Write(ctx, "before", 3, nil); err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	time.Sleep(1100 * time.Millisecond)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE starts_with(application_name, $1)", app+" ").Scan(&n); err != nil || n == 0 {
		t.Fatalf("terminated %d sessions: %v", n, err)
	}
	wr, err := rc.Write(ctx, "after", 4, nil)
	if err != nil || !wr.Accepted || wr.Effect.Seq != 2 {
		t.Fatalf("write after its sessions died: %+v, %v", wr, err)
	}
}

func TestResourceClientErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	rc := resource.NewClient(dead+"/", nil)
	_, err = rc.Write(ctx, "a", 1, nil)
	if err == nil || err.Error() != "resource at "+dead+" refused the connection: is it running? ("+errors.Unwrap(err).Error()+")" {
		t.Errorf("dead resource: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := rc.State(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}

	_, live := resStart(t, scenario.FencingMonotonic)
	if err := live.SetFencing(ctx, "lax"); err == nil || !strings.Contains(err.Error(), `refused the fencing change: fencing: unknown fencing "lax"`) || !strings.Contains(err.Error(), "(HTTP 400)") {
		t.Errorf("bad fencing: %v", err)
	}
	if _, err := live.Write(ctx, strings.Repeat("a", 65), 1, nil); err == nil || !strings.Contains(err.Error(), "refused the write: actor is 65 characters long") {
		t.Errorf("long actor: %v", err)
	}
	if _, err := live.Reset(ctx, -1, nil); err == nil || !strings.Contains(err.Error(), "refused the reset: fence -1 is negative") {
		t.Errorf("negative reset: %v", err)
	}
}

// BenchmarkResourceWrite is one POST /writes over HTTP on loopback, with its
// transaction on the test server. Under accepted, x-raw is the write's time
// over its statements sent raw, as the service sends them (BEGIN, the lock
// and the fencing statement; then the effect and COMMIT), on a plain
// session on the same schema; no-sql is a request that reaches no database
// (GET /fencing): what HTTP alone costs.
func BenchmarkResourceWrite(b *testing.B) {
	ctx := context.Background()
	res, rc := resStart(b, scenario.FencingMonotonic)
	val := json.RawMessage(`{"by":"bench"}`)
	reset := func(b *testing.B) {
		if _, err := rc.Reset(ctx, 0, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("accepted", func(b *testing.B) {
		reset(b)
		sq := map[string]string{}
		for _, name := range []string{"resource_begin", "resource_lock", "resource_write_monotonic", "resource_record", "resource_commit"} {
			q, err := assets.SQL(name)
			if err != nil {
				b.Fatal(err)
			}
			sq[name] = q
		}
		raw := resConn(b, res)
		var e int64
		var httpNs, rawNs, hopNs time.Duration
		for b.Loop() {
			e++
			t0 := time.Now()
			if wr, err := rc.Write(ctx, "bench", e, val); err != nil || !wr.Accepted {
				b.Fatal(wr, err)
			}
			t1 := time.Now()
			e++
			fence := &pgx.Batch{}
			fence.Queue(sq["resource_begin"])
			fence.Queue(sq["resource_lock"])
			fence.Queue(sq["resource_write_monotonic"], e, val)
			if err := raw.SendBatch(ctx, fence).Close(); err != nil {
				b.Fatal(err)
			}
			record := &pgx.Batch{}
			record.Queue(sq["resource_record"], "bench", e, val, true, "", e-1)
			record.Queue(sq["resource_commit"])
			if err := raw.SendBatch(ctx, record).Close(); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			// The HTTP hop alone, right after a wait on PostgreSQL as in
			// a replay: unlike no-sql's loop of requests, every goroutine
			// on both sides has gone to sleep and must be woken.
			if _, err := rc.Fencing(ctx); err != nil {
				b.Fatal(err)
			}
			hopNs += time.Since(t2)
			httpNs += t1.Sub(t0)
			rawNs += t2.Sub(t1)
		}
		// ns/op holds all three; write-ns is the write over HTTP alone.
		b.ReportMetric(float64(httpNs.Nanoseconds())/float64(b.N), "write-ns")
		b.ReportMetric(float64(rawNs.Nanoseconds())/float64(b.N), "raw-ns")
		b.ReportMetric(float64(hopNs.Nanoseconds())/float64(b.N), "hop-ns")
		b.ReportMetric(float64(httpNs)/float64(rawNs), "x-raw")
	})
	// What a hop costs, taken apart: each right after a wait on
	// PostgreSQL, as in a replay. pg is a SELECT 1 on a plain session;
	// echo a few bytes to a goroutine over loopback TCP and back; wire
	// GET /fencing written and read in the calling goroutine on one
	// kept-alive connection (net/http's own request writer and response
	// reader); client the same request through the resource's Client, on
	// net/http's Transport.
	b.Run("hop", func(b *testing.B) {
		raw := resConn(b, res)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			_, _ = io.Copy(c, c)
		}()
		echo, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer echo.Close()
		wire, err := net.Dial("tcp", strings.TrimPrefix(res.URL(), "http://"))
		if err != nil {
			b.Fatal(err)
		}
		defer wire.Close()
		wr := bufio.NewReader(wire)
		req, err := http.NewRequest(http.MethodGet, res.URL()+"/fencing", nil)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 8)
		kinds := []struct {
			name string
			do   func() error
		}{
			{"pg", func() error { var one int; return raw.QueryRow(ctx, "SELECT 1").Scan(&one) }},
			{"echo", func() error {
				if _, err := echo.Write(buf); err != nil {
					return err
				}
				_, err := io.ReadFull(echo, buf)
				return err
			}},
			{"wire", func() error {
				if err := req.Write(wire); err != nil {
					return err
				}
				resp, err := http.ReadResponse(wr, req)
				if err != nil {
					return err
				}
				_, err = io.Copy(io.Discard, resp.Body)
				return errors.Join(err, resp.Body.Close())
			}},
			{"client", func() error { _, err := rc.Fencing(ctx); return err }},
		}
		took := make([]time.Duration, len(kinds))
		for b.Loop() {
			for i, k := range kinds {
				var one int
				if err := raw.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				if err := k.do(); err != nil {
					b.Fatalf("%s: %v", k.name, err)
				}
				took[i] += time.Since(t0)
			}
		}
		for i, k := range kinds {
			b.ReportMetric(float64(took[i].Nanoseconds())/float64(b.N), k.name+"-ns")
		}
	})
	b.Run("no-sql", func(b *testing.B) {
		for b.Loop() {
			if _, err := rc.Fencing(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("refused", func(b *testing.B) {
		reset(b)
		if _, err := rc.Write(ctx, "bench", 1, val); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if wr, err := rc.Write(ctx, "bench", 0, val); err != nil || wr.Accepted {
				b.Fatal(wr, err)
			}
		}
	})
	// What a step-back replay asks of the resource: a reset and two writes.
	b.Run("reset+2writes", func(b *testing.B) {
		for b.Loop() {
			if _, err := rc.Reset(ctx, 10, val); err != nil {
				b.Fatal(err)
			}
			if _, err := rc.Write(ctx, "a", 11, val); err != nil {
				b.Fatal(err)
			}
			if _, err := rc.Write(ctx, "b", 10, val); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestResourceRunOutlivesARemovedRun: runs share the service's pooled
// connections, and a removed run's schema goes while a connection may still
// point at it. With one connection it is surely the same one: a run that
// writes for the first time afterwards must still be served.
func TestResourceRunOutlivesARemovedRun(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t) // before the deadline: it may start the cluster
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := resource.Start(ctx, resource.Config{DSN: dsn, MaxConns: 1, AppName: "leaserace resource test"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := res.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer hc.CloseIdleConnections()
	def := resource.NewClient(res.URL(), hc)
	keep, err := def.AddRun(ctx, "", scenario.FencingMonotonic)
	if err != nil {
		t.Fatal(err)
	}
	gone, err := def.AddRun(ctx, "", scenario.FencingMonotonic)
	if err != nil {
		t.Fatal(err)
	}
	// The reset leaves the connection pointed at gone's schema.
	if _, err := gone.Reset(ctx, 1, json.RawMessage(`"x"`)); err != nil {
		t.Fatal(err)
	}
	if err := gone.RemoveRun(ctx); err != nil {
		t.Fatal(err)
	}
	// The lock and the fencing statement are new to the connection.
	w, err := keep.Write(ctx, "A", 3, json.RawMessage(`"a"`))
	if err != nil {
		t.Fatalf("a write to a run after another run was removed: %v", err)
	}
	v, err := keep.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !w.Accepted || v.Fence != 3 || len(v.Effects) != 1 || v.Effects[0].Actor != "A" {
		t.Errorf("write %+v, state %+v: want epoch 3 with A's one effect", w, v)
	}
}
