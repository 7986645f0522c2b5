package resource

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/scenario/fixtures"
)

// HTTP: /state, /writes and /fencing act on the default run; the same
// under /runs/NAME act on run NAME, which POST /runs creates and
// DELETE /runs/NAME removes.

type errorBody struct {
	Error string `json:"error"`
}

type fencingBody struct {
	Fencing scenario.Fencing `json:"fencing"`
}

// reply is a status and the value to send as JSON.
type reply struct {
	status int
	body   any
}

func fail(status int, format string, args ...any) reply {
	return reply{status, errorBody{Error: fmt.Sprintf(format, args...)}}
}

// handler answers one request for one run.
type handler func(w http.ResponseWriter, req *http.Request, run string) reply

func (s *Service) serveHTTP(w http.ResponseWriter, req *http.Request) {
	s.requests.Add(1)
	type route map[string]handler
	path, name := req.URL.Path, s.def
	if rest, ok := strings.CutPrefix(path, "/runs/"); ok {
		name, path, _ = strings.Cut(rest, "/")
		path = "/" + path
		if path == "/" {
			path = "/run"
		}
	}
	var rt route
	switch path {
	case "/state":
		rt = route{http.MethodGet: s.getState, http.MethodPut: s.putState}
	case "/writes":
		rt = route{http.MethodPost: s.postWrite}
	case "/fencing":
		rt = route{http.MethodGet: s.getFencing, http.MethodPut: s.putFencing}
	case "/healthz":
		rt = route{http.MethodGet: s.getHealth}
	case "/runs":
		rt = route{http.MethodPost: s.postRun}
	case "/run":
		rt = route{http.MethodDelete: s.deleteRun}
	default:
		send(w, fail(http.StatusNotFound, "no such endpoint %s: the resource serves /state, /writes, /fencing and /healthz, and the same under /runs/NAME", clipText(req.URL.Path)))
		return
	}
	h, ok := rt[req.Method]
	if !ok {
		allow := make([]string, 0, len(rt))
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			if rt[m] != nil {
				allow = append(allow, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		send(w, fail(http.StatusMethodNotAllowed, "%s %s is not supported: use %s", clipText(req.Method), req.URL.Path, strings.Join(allow, " or ")))
		return
	}
	send(w, h(w, req, name))
}

func send(w http.ResponseWriter, rep reply) {
	b, err := scenario.MarshalPlain(rep.body)
	if err != nil {
		rep.status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Error: "the resource cannot encode its answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(rep.status)
	_, _ = w.Write(append(b, '\n'))
}

// storeFailure turns a database error into a reply. Data errors come from a
// value PostgreSQL's jsonb cannot hold (e.g. "\u0000"): the client's fault,
// and the transaction rolled back, so nothing changed.
func (s *Service) storeFailure(err error) reply {
	var re *RequestError
	if errors.As(err, &re) {
		return fail(re.Status, "%s", re.Msg)
	}
	if errors.Is(err, errClosed) {
		return fail(http.StatusServiceUnavailable, "%v", err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "54")) {
		msg := pe.Message
		if pe.Detail != "" {
			msg += " (" + strings.TrimSuffix(pe.Detail, ".") + ")"
		}
		return fail(http.StatusBadRequest, "value cannot be stored as jsonb: %s", msg)
	}
	return fail(http.StatusServiceUnavailable, "resource store unavailable: %v", s.scrub(err))
}

func (s *Service) getState(_ http.ResponseWriter, req *http.Request, name string) reply {
	r, err := s.lookup(name)
	if err != nil {
		return s.storeFailure(err)
	}
	v, err := s.view(req.Context(), r)
	if err != nil {
		return s.storeFailure(err)
	}
	return reply{http.StatusOK, v}
}

func (s *Service) putState(w http.ResponseWriter, req *http.Request, name string) reply {
	var in struct {
		Fence json.RawMessage `json:"fence"`
		Epoch json.RawMessage `json:"epoch"` // the fence's old name
		Value json.RawMessage `json:"value"`
		// Keep, when given, keeps the first Keep effects instead of
		// clearing them all: a step back.
		Keep *int64 `json:"keep"`
	}
	if rep, ok := decodeBody(w, req, &in); !ok {
		return rep
	}
	epoch, value, rep, ok := checkPair(in.Fence, in.Epoch, in.Value)
	if !ok {
		return rep
	}
	if in.Keep != nil && *in.Keep < 0 {
		return fail(http.StatusBadRequest, "\"keep\" is how many effects to keep: 0 or more, not %d", *in.Keep)
	}
	r, err := s.lookup(name)
	if err != nil {
		return s.storeFailure(err)
	}
	v, err := s.reset(req.Context(), r, epoch, value, in.Keep)
	if err != nil {
		return s.storeFailure(err)
	}
	return reply{http.StatusOK, v}
}

func (s *Service) postWrite(w http.ResponseWriter, req *http.Request, name string) reply {
	var in struct {
		Fence json.RawMessage `json:"fence"`
		Epoch json.RawMessage `json:"epoch"` // the fence's old name
		Value json.RawMessage `json:"value"`
		Actor *string         `json:"actor"`
	}
	if rep, ok := decodeBody(w, req, &in); !ok {
		return rep
	}
	epoch, value, rep, ok := checkPair(in.Fence, in.Epoch, in.Value)
	if !ok {
		return rep
	}
	actor := "anonymous"
	if in.Actor != nil && *in.Actor != "" {
		actor = *in.Actor
		if n := utf8.RuneCountInString(actor); n > maxActor {
			return fail(http.StatusBadRequest, "actor is %d characters long; at most %d", n, maxActor)
		}
		if strings.IndexFunc(actor, unicode.IsControl) >= 0 {
			return fail(http.StatusBadRequest, "actor %q contains a control character", actor)
		}
	}
	r, err := s.lookup(name)
	if err != nil {
		return s.storeFailure(err)
	}
	res, err := s.write(req.Context(), r, actor, epoch, value)
	if err != nil {
		return s.storeFailure(err)
	}
	if !res.Accepted {
		return reply{http.StatusConflict, res}
	}
	return reply{http.StatusOK, res}
}

func (s *Service) getFencing(_ http.ResponseWriter, _ *http.Request, name string) reply {
	f, err := s.fencingOf(name)
	if err != nil {
		return s.storeFailure(err)
	}
	return reply{http.StatusOK, fencingBody{Fencing: f}}
}

func (s *Service) putFencing(w http.ResponseWriter, req *http.Request, name string) reply {
	var in struct {
		Fencing *string `json:"fencing"`
	}
	if rep, ok := decodeBody(w, req, &in); !ok {
		return rep
	}
	if in.Fencing == nil {
		return fail(http.StatusBadRequest, `fencing is missing: want {"fencing":"off"|"strict"|"monotonic"}`)
	}
	if err := s.setFencing(name, scenario.Fencing(*in.Fencing)); err != nil {
		var re *RequestError
		if errors.As(err, &re) {
			return s.storeFailure(err)
		}
		return fail(http.StatusBadRequest, "fencing: %v", err)
	}
	return s.getFencing(w, req, name)
}

func (s *Service) getHealth(_ http.ResponseWriter, req *http.Request, _ string) reply {
	if err := s.ping(req.Context()); err != nil {
		return s.storeFailure(err)
	}
	return reply{http.StatusOK, map[string]bool{"ok": true}}
}

// runBody is what POST /runs takes and answers.
type runBody struct {
	Run     string           `json:"run"`
	Fencing scenario.Fencing `json:"fencing"`
}

func (s *Service) postRun(w http.ResponseWriter, req *http.Request, _ string) reply {
	var in struct {
		Run     *string `json:"run"`
		Fencing *string `json:"fencing"`
	}
	if rep, ok := decodeBody(w, req, &in); !ok {
		return rep
	}
	name, f := "", scenario.FencingMonotonic
	if in.Run != nil {
		name = *in.Run
	}
	if in.Fencing != nil {
		var err error
		if f, err = scenario.ParseFencing(*in.Fencing); err != nil {
			return fail(http.StatusBadRequest, "fencing: %v", err)
		}
	}
	name, err := s.AddRun(req.Context(), name, f)
	if err != nil {
		return s.storeFailure(err)
	}
	return reply{http.StatusCreated, runBody{Run: name, Fencing: f}}
}

func (s *Service) deleteRun(_ http.ResponseWriter, req *http.Request, name string) reply {
	if err := s.RemoveRun(req.Context(), name); err != nil {
		return s.storeFailure(err)
	}
	return reply{http.StatusOK, map[string]string{"removed": name}}
}

// decodeBody reads one JSON object, at most maxBody bytes, with no unknown
// fields and nothing after it.
func decodeBody(w http.ResponseWriter, req *http.Request, dst any) (reply, bool) {
	body := http.MaxBytesReader(w, req.Body, maxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var tooBig *http.MaxBytesError
	if err := dec.Decode(dst); err != nil {
		if errors.As(err, &tooBig) {
			drainRefused(w, req)
		}
		return bodyError(err), false
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return fail(http.StatusBadRequest, "request body has more data after the JSON object: send exactly one object"), false
		}
		if errors.As(err, &tooBig) {
			drainRefused(w, req)
			return bodyError(err), false
		}
		return fail(http.StatusBadRequest, "request body has more data after the JSON object: %v", err), false
	}
	return reply{}, true
}

// A body refused as too large is still read, up to drainMax bytes or for
// drainTime, before the 413 goes out. Many clients (Python's urllib, curl
// without Expect: 100-continue) write the whole body before they read, and a
// server that closes with their data unread makes the kernel send a reset:
// the client sees a broken pipe, never the 413. The bound keeps a huge or
// trickling body from holding the handler; beyond it the connection closes.
const (
	drainMax  = 16 << 20
	drainTime = 2 * time.Second
)

// drainRefused discards what is left of a refused body, within the bounds.
// The server closes the connection after the reply either way.
func drainRefused(w http.ResponseWriter, req *http.Request) {
	// Only reading all of it helps: any byte left unread at close means a
	// reset. A body declared longer than the bound is not read at all.
	if req.ContentLength > drainMax {
		return
	}
	// Without a read deadline (no real connection underneath) a slow body
	// could hold the handler without bound, so nothing is read then.
	if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(drainTime)); err != nil {
		return
	}
	_, _ = io.CopyN(io.Discard, req.Body, drainMax)
}

func bodyError(err error) reply {
	var (
		tooBig *http.MaxBytesError
		syn    *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooBig):
		return fail(http.StatusRequestEntityTooLarge, "request body is larger than %d KiB", maxBody>>10)
	case errors.Is(err, io.EOF):
		return fail(http.StatusBadRequest, `request body is empty: want a JSON object such as {"fence":1,"value":"x"}`)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fail(http.StatusBadRequest, "request body ends in the middle of its JSON")
	case errors.As(err, &syn):
		return fail(http.StatusBadRequest, "request body is not valid JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fail(http.StatusBadRequest, "request body is a JSON %s: want a JSON object", typ.Value)
		}
		return fail(http.StatusBadRequest, "field %q is a JSON %s: want a %s", typ.Field, typ.Value, jsonKind(typ.Type.Kind().String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fail(http.StatusBadRequest, "request body has an unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return fail(http.StatusBadRequest, "request body is not a JSON object: %v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string", "ptr":
		return "string"
	case "bool":
		return "boolean"
	}
	return goKind
}

// checkPair validates the fence and value; value is required but may be null.
func checkPair(rawFence, rawEpoch, rawValue json.RawMessage) (int64, json.RawMessage, reply, bool) {
	// "epoch", the fence's name before this release, is still read, so
	// that no script written for it stops working.
	if rawFence == nil {
		rawFence = rawEpoch
	} else if rawEpoch != nil {
		return 0, nil, fail(http.StatusBadRequest, `send the fence once, as "fence"; "epoch" is its old name`), false
	}
	fence, err := fixtures.ParseFence(rawFence)
	if err != nil {
		return 0, nil, fail(http.StatusBadRequest, "%v", err), false
	}
	if len(rawValue) == 0 {
		return 0, nil, fail(http.StatusBadRequest, "value is missing: send any JSON value, or null for none"), false
	}
	if !utf8.Valid(rawValue) {
		return 0, nil, fail(http.StatusBadRequest, "value is not valid UTF-8"), false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, rawValue); err != nil {
		return 0, nil, fail(http.StatusBadRequest, "value is not valid JSON: %v", err), false
	}
	return fence, buf.Bytes(), reply{}, true
}

func clipText(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return fmt.Sprintf("%q", s)
}
