package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/leaserace/leaserace/scenario"
)

// ResourceConfig says where the protected resource keeps its state and
// where it listens.
type ResourceConfig struct {
	// DSN reaches the PostgreSQL server that holds the state. It may hold a
	// password, which never appears in errors or responses.
	DSN string
	// Schema holds the resource's tables. Empty means a fresh random schema
	// that Close drops; a named schema is created if missing and kept.
	Schema string
	// Listen is the HTTP address; default "127.0.0.1:0".
	Listen string
	// AllowNonLoopback lets Listen name a non-loopback address. The resource
	// has no authentication, so it stays on loopback unless told otherwise.
	AllowNonLoopback bool
	// Fencing is the starting policy; default monotonic.
	Fencing scenario.Fencing
	// AppName is application_name for its connections; default
	// "leaserace resource".
	AppName string
}

// Effect is one write the resource saw, accepted or not.
type Effect struct {
	Seq      int64           `json:"seq"`
	Actor    string          `json:"actor"`
	Epoch    int64           `json:"epoch"`
	Value    json.RawMessage `json:"value"`
	Accepted bool            `json:"accepted"`
	Reason   string          `json:"reason,omitempty"`
	// StoredEpoch is the stored epoch the write was compared against.
	StoredEpoch int64 `json:"stored_epoch"`
}

// ResourceView is the resource's state and every effect since the last reset.
type ResourceView struct {
	Epoch   int64            `json:"epoch"`
	Value   json.RawMessage  `json:"value"`
	Fencing scenario.Fencing `json:"fencing"`
	// Effects is in seq order and never nil.
	Effects []Effect `json:"effects"`
}

// WriteResult is what one POST /writes did.
type WriteResult struct {
	Accepted bool   `json:"accepted"`
	Reason   string `json:"reason,omitempty"`
	// Epoch and Value are what the resource stores after the write.
	Epoch   int64            `json:"epoch"`
	Value   json.RawMessage  `json:"value"`
	Effect  Effect           `json:"effect"`
	Fencing scenario.Fencing `json:"fencing"`
	// SQL is the fencing statement exactly as executed, Args its arguments
	// [epoch, value], Tag the server's command tag and Rows the rows it changed.
	SQL  string `json:"sql"`
	Args []any  `json:"args"`
	Tag  string `json:"tag"`
	Rows int64  `json:"rows"`
}

const (
	defaultListen  = "127.0.0.1:0"
	defaultAppName = "leaserace resource"
	// maxBody bounds every request body.
	maxBody = 64 << 10
	// maxActor bounds the actor name, in characters.
	maxActor = 64
	// maxSchema is PostgreSQL's identifier length; longer names would be
	// truncated silently and then not match on DROP.
	maxSchema = 63
)

// resourceSQL holds the resource's statements, read once from assets.
type resourceSQL struct {
	schema, reset, clear, lock, record, view, ping string
	begin, commit, rollback                        string
	write                                          map[scenario.Fencing]string
}

func loadResourceSQL() (resourceSQL, error) {
	s := resourceSQL{write: map[scenario.Fencing]string{}}
	for _, x := range []struct {
		name string
		dst  *string
	}{
		{"resource_schema", &s.schema},
		{"resource_reset", &s.reset},
		{"resource_clear", &s.clear},
		{"resource_lock", &s.lock},
		{"resource_record", &s.record},
		{"resource_view", &s.view},
		{"resource_ping", &s.ping},
		{"resource_begin", &s.begin},
		{"resource_commit", &s.commit},
		{"resource_rollback", &s.rollback},
	} {
		q, err := loadSQL(x.name)
		if err != nil {
			return s, err
		}
		*x.dst = q
	}
	for _, f := range scenario.Fencings() {
		q, err := loadSQL("resource_write_" + string(f))
		if err != nil {
			return s, err
		}
		s.write[f] = q
	}
	return s, nil
}

// Resource is the protected resource: a small HTTP service that keeps one
// [epoch, value] pair in PostgreSQL and applies a fencing policy to writes.
type Resource struct {
	sql         resourceSQL
	pool        *connPool
	schema      string
	dropOnClose bool
	// password is scrubbed from any database error before it is shown.
	password string
	fencing  atomic.Pointer[scenario.Fencing]

	srv     *http.Server
	handler http.Handler
	url     string
	// stopBase cancels the context of requests still running when Close
	// gives up waiting for them.
	stopBase context.CancelFunc
	served   chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// StartResource creates the resource's schema and tables and starts its HTTP
// server on a real listener. The caller must Close it.
func StartResource(ctx context.Context, cfg ResourceConfig) (*Resource, error) {
	if cfg.Listen == "" {
		cfg.Listen = defaultListen
	}
	if cfg.AppName == "" {
		cfg.AppName = defaultAppName
	}
	if cfg.Fencing == "" {
		cfg.Fencing = scenario.FencingMonotonic
	}
	f, err := scenario.ParseFencing(string(cfg.Fencing))
	if err != nil {
		return nil, fmt.Errorf("resource: %w", err)
	}
	if !cfg.AllowNonLoopback {
		if err := checkLoopback(cfg.Listen); err != nil {
			return nil, err
		}
	}
	r := &Resource{schema: cfg.Schema}
	r.fencing.Store(&f)
	if r.sql, err = loadResourceSQL(); err != nil {
		return nil, err
	}
	if r.schema == "" {
		r.schema, err = randomSchema()
		if err != nil {
			return nil, err
		}
		r.dropOnClose = true
	} else if len(r.schema) > maxSchema {
		return nil, fmt.Errorf("resource schema %q is %d bytes long; PostgreSQL allows at most %d", r.schema, len(r.schema), maxSchema)
	}

	cc, err := pgx.ParseConfig(cfg.DSN)
	if err != nil {
		// pgconn already hides the password in this message.
		return nil, fmt.Errorf("resource: cannot read the connection string: %w", err)
	}
	r.password = cc.Password
	cc.RuntimeParams["application_name"] = cfg.AppName
	// Only the resource's schema: its tables can never be confused with
	// same-named tables elsewhere on the server.
	cc.RuntimeParams["search_path"] = pgx.Identifier{r.schema}.Sanitize()
	r.pool = newConnPool(cc, poolSize)
	if err := r.createSchema(ctx); err != nil {
		r.pool.close(ctx)
		return nil, err
	}
	if err := r.listen(cfg); err != nil {
		r.cleanupStore(ctx)
		return nil, err
	}
	return r, nil
}

func randomSchema() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("resource: cannot pick a random schema name: %w", err)
	}
	return "lr_res_" + hex.EncodeToString(b), nil
}

// createSchema runs once at start, so no request ever runs DDL.
func (r *Resource) createSchema(ctx context.Context) error {
	ident := pgx.Identifier{r.schema}.Sanitize()
	create := "CREATE SCHEMA IF NOT EXISTS " + ident
	if r.dropOnClose {
		// A fresh name must really be fresh: Close drops what it created.
		create = "CREATE SCHEMA " + ident
	}
	if err := r.pool.exec(ctx, create); err != nil {
		return fmt.Errorf("resource: cannot create schema %s: %w", r.schema, r.scrub(err))
	}
	if err := r.pool.exec(ctx, r.sql.schema); err != nil {
		err = fmt.Errorf("resource: cannot create its tables in schema %s: %w", r.schema, r.scrub(err))
		if r.dropOnClose {
			err = errors.Join(err, r.dropSchema(ctx))
		}
		return err
	}
	return nil
}

func (r *Resource) dropSchema(ctx context.Context) error {
	if err := r.pool.exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{r.schema}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("resource: cannot drop its schema %s: %w", r.schema, r.scrub(err))
	}
	return nil
}

// cleanupStore undoes createSchema and closes the pool after a failed start.
func (r *Resource) cleanupStore(ctx context.Context) {
	if r.dropOnClose {
		_ = r.dropSchema(ctx)
	}
	r.pool.close(ctx)
}

// checkLoopback refuses addresses other machines could reach.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("resource listen address %q: want host:port, e.g. 127.0.0.1:0: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("resource listen address %q is not a loopback address: the resource has no authentication, so it listens on 127.0.0.1 or ::1 unless non-loopback listening is allowed explicitly", addr)
}

func (r *Resource) listen(cfg ResourceConfig) error {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("resource: cannot listen on %s: %w", cfg.Listen, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !cfg.AllowNonLoopback && !tcp.IP.IsLoopback() {
		_ = ln.Close()
		return fmt.Errorf("resource listen address %q resolved to %s, which is not a loopback address", cfg.Listen, tcp.IP)
	}
	r.url = "http://" + ln.Addr().String()
	r.handler = http.HandlerFunc(r.serveHTTP)
	base, stop := context.WithCancel(context.Background())
	r.stopBase = stop
	r.srv = &http.Server{
		Handler:           r.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
		// The terminal belongs to the TUI: stray server log lines would
		// corrupt its screen.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	r.served = make(chan struct{})
	go func() {
		defer close(r.served)
		_ = r.srv.Serve(ln)
	}()
	return nil
}

// URL is where the resource listens, e.g. "http://127.0.0.1:4321".
func (r *Resource) URL() string { return r.url }

// Handler is the handler the server uses, for driving it without a socket.
func (r *Resource) Handler() http.Handler { return r.handler }

// Schema is the PostgreSQL schema that holds the resource's tables.
func (r *Resource) Schema() string { return r.schema }

// Fencing is the policy in force.
func (r *Resource) Fencing() scenario.Fencing { return *r.fencing.Load() }

// SetFencing changes the policy for every write that starts afterwards.
func (r *Resource) SetFencing(f scenario.Fencing) error {
	f, err := scenario.ParseFencing(string(f))
	if err != nil {
		return err
	}
	r.fencing.Store(&f)
	return nil
}

// Close stops the HTTP server, drops the schema if the resource created it
// and closes its connections. Later calls return the first call's result.
func (r *Resource) Close(ctx context.Context) error {
	r.closeOnce.Do(func() {
		var errs []error
		if err := r.srv.Shutdown(ctx); err != nil {
			// Requests still running: cancel them rather than leave them
			// holding connections the pool is about to close.
			r.stopBase()
			_ = r.srv.Close()
			errs = append(errs, fmt.Errorf("resource: requests were still running at shutdown: %w", err))
		}
		r.stopBase()
		<-r.served
		if r.dropOnClose {
			errs = append(errs, r.dropSchema(ctx))
		}
		r.pool.close(ctx)
		r.closeErr = errors.Join(errs...)
	})
	return r.closeErr
}

// scrub removes the password from an error's text; the error chain is kept
// for errors.Is/As.
func (r *Resource) scrub(err error) error {
	if err == nil || r.password == "" || !strings.Contains(err.Error(), r.password) {
		return err
	}
	return scrubbedError{msg: strings.ReplaceAll(err.Error(), r.password, "xxxxx"), err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e scrubbedError) Error() string { return e.msg }
func (e scrubbedError) Unwrap() error { return e.err }

// The store: every method is one transaction.

// reset sets the state and clears the effects log.
func (r *Resource) reset(ctx context.Context, epoch int64, value json.RawMessage) (ResourceView, error) {
	v := ResourceView{Fencing: r.Fencing(), Effects: []Effect{}}
	// One batch is one implicit transaction and one round trip. The UPDATE
	// comes first: it waits for any write holding the row, so the DELETE
	// (with a newer snapshot under READ COMMITTED) also clears that write's
	// effect.
	b := &pgx.Batch{}
	b.Queue(r.sql.reset, epoch, value)
	b.Queue(r.sql.clear)
	err := r.pool.with(ctx, func(c *pgx.Conn) error {
		br := c.SendBatch(ctx, b)
		err := br.QueryRow().Scan(&v.Epoch, &v.Value)
		if err == nil {
			_, err = br.Exec()
		}
		return errors.Join(err, br.Close())
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return v, errMissingRow
	}
	return v, err
}

var errMissingRow = errors.New("the resource's state row is missing from its table")

// view reads the state and the effects log from one snapshot.
func (r *Resource) view(ctx context.Context) (ResourceView, error) {
	v := ResourceView{Fencing: r.Fencing(), Effects: []Effect{}}
	err := r.pool.with(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, r.sql.view)
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
				v.Epoch, v.Value, first = epoch, value, false
				continue
			}
			if seq == nil || actor == nil || accepted == nil || reason == nil || stored == nil {
				return errors.New("the effects table holds a row with missing columns")
			}
			v.Effects = append(v.Effects, Effect{
				Seq: *seq, Actor: *actor, Epoch: epoch, Value: value,
				Accepted: *accepted, Reason: *reason, StoredEpoch: *stored,
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

// write applies the fencing policy to one write and records the effect, all
// in one transaction. BeginFunc would cost two extra round trips (a lone
// BEGIN and a lone COMMIT, about half a write's time on loopback), so the
// transaction is pipelined instead: BEGIN, the lock and the fencing statement
// go in one round trip; the effect and COMMIT in the next.
func (r *Resource) write(ctx context.Context, actor string, epoch int64, value json.RawMessage) (WriteResult, error) {
	f := r.Fencing()
	res := WriteResult{Fencing: f, SQL: r.sql.write[f], Args: []any{epoch, value}}
	err := r.pool.with(ctx, func(c *pgx.Conn) error {
		err := r.fence(ctx, c, actor, epoch, value, &res)
		if err != nil && !c.IsClosed() && c.PgConn().TxStatus() != 'I' {
			// If this fails too, the pool drops the connection, and the
			// server rolls back when it goes.
			_, _ = c.Exec(ctx, r.sql.rollback)
		}
		return err
	})
	if err != nil {
		return WriteResult{}, err
	}
	return res, nil
}

// fence runs res.SQL in a transaction of its own and records what it did.
func (r *Resource) fence(ctx context.Context, c *pgx.Conn, actor string, epoch int64, value json.RawMessage, res *WriteResult) error {
	// Locking first makes the reported stored epoch exactly the one the
	// fencing statement compares against. The statement alone would still
	// be safe: under READ COMMITTED an UPDATE that waited for the row
	// lock re-checks its WHERE against the newest version.
	b := &pgx.Batch{}
	b.Queue(r.sql.begin)
	b.Queue(r.sql.lock)
	b.Queue(res.SQL, epoch, value)
	br := c.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		return errors.Join(err, br.Close())
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
		if err := rows.Scan(&res.Epoch, &res.Value); err != nil {
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
		res.Epoch, res.Value = stored, storedValue
		res.Reason = rejectReason(res.Fencing, epoch, stored)
	}
	res.Effect = Effect{Actor: actor, Epoch: epoch, Accepted: res.Accepted, Reason: res.Reason, StoredEpoch: stored}

	b = &pgx.Batch{}
	b.Queue(r.sql.record, actor, epoch, value, res.Accepted, res.Reason, stored)
	b.Queue(r.sql.commit)
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

// rejectReason says, for a person, why the policy refused the write.
func rejectReason(f scenario.Fencing, epoch, stored int64) string {
	switch f {
	case scenario.FencingStrict:
		return fmt.Sprintf("epoch %d is not above the stored epoch %d: strict fencing accepts only epoch > stored", epoch, stored)
	case scenario.FencingMonotonic:
		return fmt.Sprintf("epoch %d is below the stored epoch %d: monotonic fencing accepts epoch >= stored", epoch, stored)
	}
	return fmt.Sprintf("epoch %d was refused under %s fencing (stored epoch %d)", epoch, f, stored)
}

// HTTP.

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

func (r *Resource) serveHTTP(w http.ResponseWriter, req *http.Request) {
	type route map[string]func(http.ResponseWriter, *http.Request) reply
	var rt route
	switch req.URL.Path {
	case "/state":
		rt = route{http.MethodGet: r.getState, http.MethodPut: r.putState}
	case "/writes":
		rt = route{http.MethodPost: r.postWrite}
	case "/fencing":
		rt = route{http.MethodGet: r.getFencing, http.MethodPut: r.putFencing}
	case "/healthz":
		rt = route{http.MethodGet: r.getHealth}
	default:
		send(w, fail(http.StatusNotFound, "no such endpoint %s: the resource serves /state, /writes, /fencing and /healthz", clipText(req.URL.Path)))
		return
	}
	h, ok := rt[req.Method]
	if !ok {
		allow := make([]string, 0, len(rt))
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut} {
			if rt[m] != nil {
				allow = append(allow, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		send(w, fail(http.StatusMethodNotAllowed, "%s %s is not supported: use %s", clipText(req.Method), req.URL.Path, strings.Join(allow, " or ")))
		return
	}
	send(w, h(w, req))
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
func (r *Resource) storeFailure(err error) reply {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "54")) {
		msg := pe.Message
		if pe.Detail != "" {
			msg += " (" + strings.TrimSuffix(pe.Detail, ".") + ")"
		}
		return fail(http.StatusBadRequest, "value cannot be stored as jsonb: %s", msg)
	}
	return fail(http.StatusServiceUnavailable, "resource store unavailable: %v", r.scrub(err))
}

func (r *Resource) getState(_ http.ResponseWriter, req *http.Request) reply {
	v, err := r.view(req.Context())
	if err != nil {
		return r.storeFailure(err)
	}
	return reply{http.StatusOK, v}
}

func (r *Resource) putState(w http.ResponseWriter, req *http.Request) reply {
	var in struct {
		Epoch json.RawMessage `json:"epoch"`
		Value json.RawMessage `json:"value"`
	}
	if rep, ok := decodeBody(w, req, &in); !ok {
		return rep
	}
	epoch, value, rep, ok := checkPair(in.Epoch, in.Value)
	if !ok {
		return rep
	}
	v, err := r.reset(req.Context(), epoch, value)
	if err != nil {
		return r.storeFailure(err)
	}
	return reply{http.StatusOK, v}
}

func (r *Resource) postWrite(w http.ResponseWriter, req *http.Request) reply {
	var in struct {
		Epoch json.RawMessage `json:"epoch"`
		Value json.RawMessage `json:"value"`
		Actor *string         `json:"actor"`
	}
	if rep, ok := decodeBody(w, req, &in); !ok {
		return rep
	}
	epoch, value, rep, ok := checkPair(in.Epoch, in.Value)
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
	res, err := r.write(req.Context(), actor, epoch, value)
	if err != nil {
		return r.storeFailure(err)
	}
	if !res.Accepted {
		return reply{http.StatusConflict, res}
	}
	return reply{http.StatusOK, res}
}

func (r *Resource) getFencing(http.ResponseWriter, *http.Request) reply {
	return reply{http.StatusOK, fencingBody{Fencing: r.Fencing()}}
}

func (r *Resource) putFencing(w http.ResponseWriter, req *http.Request) reply {
	var in struct {
		Fencing *string `json:"fencing"`
	}
	if rep, ok := decodeBody(w, req, &in); !ok {
		return rep
	}
	if in.Fencing == nil {
		return fail(http.StatusBadRequest, `fencing is missing: want {"fencing":"off"|"strict"|"monotonic"}`)
	}
	if err := r.SetFencing(scenario.Fencing(*in.Fencing)); err != nil {
		return fail(http.StatusBadRequest, "fencing: %v", err)
	}
	return reply{http.StatusOK, fencingBody{Fencing: r.Fencing()}}
}

func (r *Resource) getHealth(_ http.ResponseWriter, req *http.Request) reply {
	err := r.pool.with(req.Context(), func(c *pgx.Conn) error {
		var one int
		return c.QueryRow(req.Context(), r.sql.ping).Scan(&one)
	})
	if err != nil {
		return r.storeFailure(err)
	}
	return reply{http.StatusOK, map[string]bool{"ok": true}}
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
		return fail(http.StatusBadRequest, `request body is empty: want a JSON object such as {"epoch":1,"value":"x"}`)
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

// checkPair validates epoch and value; value is required but may be null.
func checkPair(rawEpoch, rawValue json.RawMessage) (int64, json.RawMessage, reply, bool) {
	epoch, err := scenario.ParseEpoch(rawEpoch)
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
	return epoch, buf.Bytes(), reply{}, true
}

func clipText(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// poolSize bounds the resource's connections: enough for a few concurrent
// writers, few enough to leave room on a small server.
const poolSize = 4

// connPool keeps up to size connections open for reuse, so a request costs
// no connection setup and pgx's per-connection statement cache stays warm.
type connPool struct {
	cfg   *pgx.ConnConfig
	slots chan struct{}
	idle  chan idleConn

	mu     sync.Mutex
	closed bool
}

type idleConn struct {
	c     *pgx.Conn
	since time.Time
}

// pingAfter is how long a connection may sit idle before it is checked
// before use: a server restart leaves idle connections dead, and a statement
// sent into one fails. Back-to-back requests (a replay) never pay for it.
const pingAfter = time.Second

var errPoolClosed = errors.New("the resource is shutting down")

func newConnPool(cfg *pgx.ConnConfig, size int) *connPool {
	return &connPool{cfg: cfg, slots: make(chan struct{}, size), idle: make(chan idleConn, size)}
}

// with runs fn on a connection of its own.
func (p *connPool) with(ctx context.Context, fn func(*pgx.Conn) error) error {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-p.slots }()
	c, err := p.take(ctx)
	if err != nil {
		return err
	}
	err = fn(c)
	p.put(ctx, c)
	return err
}

func (p *connPool) take(ctx context.Context) (*pgx.Conn, error) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, errPoolClosed
	}
	for {
		select {
		case ic := <-p.idle:
			if ic.c.IsClosed() {
				continue
			}
			if time.Since(ic.since) > pingAfter {
				if err := ic.c.Ping(ctx); err != nil {
					_ = ic.c.Close(ctx)
					continue
				}
			}
			return ic.c, nil
		default:
			c, err := pgx.ConnectConfig(ctx, p.cfg)
			if err != nil {
				return nil, fmt.Errorf("cannot connect to PostgreSQL: %w", err)
			}
			return c, nil
		}
	}
}

// put keeps a healthy idle connection and closes anything else, e.g. one a
// cancelled query left broken or mid-transaction.
func (p *connPool) put(ctx context.Context, c *pgx.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && !c.IsClosed() && c.PgConn().TxStatus() == 'I' {
		select {
		case p.idle <- idleConn{c: c, since: time.Now()}:
			return
		default:
		}
	}
	_ = c.Close(ctx)
}

func (p *connPool) exec(ctx context.Context, sql string) error {
	return p.with(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, sql)
		return err
	})
}

// close closes the idle connections; busy ones are closed when returned.
func (p *connPool) close(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for {
		select {
		case ic := <-p.idle:
			_ = ic.c.Close(ctx)
		default:
			return
		}
	}
}
