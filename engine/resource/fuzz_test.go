package resource_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/resource"
	"github.com/leaserace/leaserace/scenario"
)

// fuzzResource starts one DB-backed resource per fuzzing process.
func resFuzzStart(f *testing.F) *resource.Service {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := resource.Start(ctx, resource.Config{DSN: pgtest.DSN(f), AppName: "leaserace resource fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = res.Close(ctx)
	})
	return res
}

func resServe(h http.Handler, method, path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// snapshot reads the whole state, trimming the log now and then so reads
// stay cheap over a long run.
func resSnapshot(t *testing.T, h http.Handler) []byte {
	t.Helper()
	rec := resServe(h, http.MethodGet, "/state", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /state: %d %s", rec.Code, rec.Body)
	}
	var v resource.View
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("GET /state answered %s: %v", rec.Body, err)
	}
	if len(v.Effects) < 64 {
		return rec.Body.Bytes()
	}
	if r := resServe(h, http.MethodPut, "/state", []byte(`{"epoch":10,"value":"fuzz"}`)); r.Code != http.StatusOK {
		t.Fatalf("reset: %d %s", r.Code, r.Body)
	}
	return resServe(h, http.MethodGet, "/state", nil).Body.Bytes()
}

// checkAnswer holds every answer to the invariant: one of the expected
// statuses, a JSON body, and an error message on every refusal but 409.
func resCheckAnswer(t *testing.T, rec *httptest.ResponseRecorder, body []byte, allowed ...int) {
	t.Helper()
	ok := false
	for _, s := range allowed {
		ok = ok || rec.Code == s
	}
	if !ok {
		t.Fatalf("body %q: status %d (%s)", body, rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("body %q: Content-Type %q", body, ct)
	}
	var reply map[string]any
	if err := resDecode(rec.Body.Bytes(), &reply); err != nil {
		t.Fatalf("body %q: answer is not JSON: %s", body, rec.Body)
	}
	if rec.Code >= 400 && rec.Code != http.StatusConflict {
		if msg, _ := reply["error"].(string); msg == "" {
			t.Fatalf("body %q: %d without an error message: %s", body, rec.Code, rec.Body)
		}
	}
}

// resDecode keeps numbers as written: a value such as 2e700 is valid JSON
// that no float64 holds.
func resDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// FuzzResourceWrite feeds arbitrary bodies to POST /writes (put false) and
// PUT /state (put true) through the real handler and database. An answer is
// 200, 409, 400 or 413, never a 5xx or a panic, and a refused request leaves
// the state and the effects log exactly as they were.
func FuzzResourceWrite(f *testing.F) {
	for _, s := range []string{
		`{"epoch":10,"value":"current"}`,
		`{"epoch":9,"value":"stale","actor":"old"}`,
		`{"epoch":0,"value":null}`,
		`{"epoch":9223372036854775807,"value":{"a":[1,2,{"b":null}]}}`,
		`{"epoch":9007199254740993,"value":1e308}`,
		`{"epoch":1.5,"value":1}`,
		`{"epoch":"7","value":1}`,
		`{"epoch":-1,"value":1}`,
		`{"epoch":1}`,
		`{"epoch":1,"value":"\u0000"}`,
		`{"epoch":1,"value":1} trailing`,
		`{"epoch":1,"value":1,"extra":0}`,
	} {
		f.Add(false, []byte(s))
		f.Add(true, []byte(s))
	}
	res := resFuzzStart(f)
	h := res.Handler()
	f.Fuzz(func(t *testing.T, put bool, body []byte) {
		before := resSnapshot(t, h)
		method, path, allowed := http.MethodPost, "/writes", []int{http.StatusOK, http.StatusConflict, http.StatusBadRequest, http.StatusRequestEntityTooLarge}
		if put {
			method, path, allowed = http.MethodPut, "/state", []int{http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge}
		}
		rec := resServe(h, method, path, body)
		resCheckAnswer(t, rec, body, allowed...)
		after := resServe(h, http.MethodGet, "/state", nil).Body.Bytes()
		switch rec.Code {
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			if !bytes.Equal(before, after) {
				t.Fatalf("body %q: refused with %d but the state changed:\n before %s\n after  %s", body, rec.Code, before, after)
			}
		case http.StatusOK, http.StatusConflict:
			var v resource.View
			if err := json.Unmarshal(after, &v); err != nil {
				t.Fatal(err)
			}
			if put {
				if len(v.Effects) != 0 {
					t.Fatalf("body %q: reset left %d effects", body, len(v.Effects))
				}
				return
			}
			var wr resource.WriteResult
			if err := resDecode(rec.Body.Bytes(), &wr); err != nil {
				t.Fatal(err)
			}
			last := v.Effects[len(v.Effects)-1]
			if last.Seq != wr.Effect.Seq || last.Accepted != wr.Accepted || wr.Accepted != (rec.Code == http.StatusOK) ||
				wr.Accepted != resAdmits(v.Fencing, wr.Effect.StoredFence, wr.Effect.Fence) || v.Fence != wr.Fence {
				t.Fatalf("body %q: answered %s but the log ends with %+v and the state is %d", body, rec.Body, last, v.Fence)
			}
		}
	})
}

// FuzzResourceRequest sends arbitrary methods, paths and bodies: whatever
// arrives, the answer is a JSON reply with a 2xx, 400, 404, 405, 409 or 413.
func FuzzResourceRequest(f *testing.F) {
	f.Add("GET", "/state", []byte(nil))
	f.Add("PUT", "/fencing", []byte(`{"fencing":"strict"}`))
	f.Add("PUT", "/fencing", []byte(`{"fencing":"lax"}`))
	f.Add("GET", "/healthz", []byte(nil))
	f.Add("DELETE", "/writes", []byte(`{}`))
	f.Add("GET", "/nowhere", []byte(nil))
	f.Add("POST", "/writes", []byte(`{"epoch":3,"value":[],"actor":"x"}`))
	res := resFuzzStart(f)
	h := res.Handler()
	f.Fuzz(func(t *testing.T, method, path string, body []byte) {
		if !resValidMethod(method) || len(path) == 0 || path[0] != '/' || !resValidPath(path) {
			t.Skip()
		}
		resSnapshot(t, h)
		rec := resServe(h, method, path, body)
		resCheckAnswer(t, rec, body, http.StatusOK, http.StatusBadRequest, http.StatusNotFound,
			http.StatusMethodNotAllowed, http.StatusConflict, http.StatusRequestEntityTooLarge)
		if rec.Code == http.StatusMethodNotAllowed && rec.Header().Get("Allow") == "" {
			t.Fatalf("%s %s: 405 without Allow", method, path)
		}
		if f, err := scenario.ParseFencing(string(res.Fencing())); err != nil || f != res.Fencing() {
			t.Fatalf("fencing became %q", res.Fencing())
		}
	})
}

// validMethod and validPath keep to what httptest.NewRequest can carry.
func resValidMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, c := range []byte(m) {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

func resValidPath(p string) bool {
	for _, c := range []byte(p) {
		if c <= ' ' || c >= 0x7f || c == '#' || c == '?' || c == '%' {
			return false
		}
	}
	return true
}
