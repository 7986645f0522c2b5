// Package resource is the protected resource: a small HTTP service that
// keeps an [epoch, value] pair per run in PostgreSQL and applies a fencing
// policy to every write with one conditional statement. One service serves
// any number of runs, each in a schema of its own; Client speaks to it.
package resource

import (
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
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leaserace/leaserace/assets"
	"github.com/leaserace/leaserace/internal/reword"
	"github.com/leaserace/leaserace/scenario"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config says where the resource keeps its state and where it listens.
type Config struct {
	// DSN reaches the PostgreSQL server that holds the state. It may hold a
	// password, which never appears in errors or responses.
	DSN string
	// Schema holds the default run's tables: the run /state, /writes and
	// /fencing act on. Empty means a fresh random schema that Close drops;
	// a named schema is created if missing and kept.
	Schema string
	// Listen is the HTTP address; default "127.0.0.1:0".
	Listen string
	// AllowNonLoopback lets Listen name a non-loopback address. The resource
	// has no authentication, so it stays on loopback unless told otherwise.
	AllowNonLoopback bool
	// Fencing is the default run's starting policy; default monotonic.
	Fencing scenario.Fencing
	// AppName starts application_name for its connections; default
	// "leaserace resource". Each request adds the run and actor it acts for.
	AppName string
	// MaxConns bounds its PostgreSQL connections; default 4.
	MaxConns int32
}

// View is a run's state and every effect since its last reset.
type View struct {
	Fence   int64            `json:"fence"`
	Value   json.RawMessage  `json:"value"`
	Fencing scenario.Fencing `json:"fencing"`
	// Effects is in seq order and never nil.
	Effects []scenario.Effect `json:"effects"`
}

// WriteResult is what one POST /writes did.
type WriteResult struct {
	Accepted bool   `json:"accepted"`
	Reason   string `json:"reason,omitempty"`
	// Fence and Value are what the resource stores after the write.
	Fence   int64            `json:"fence"`
	Value   json.RawMessage  `json:"value"`
	Effect  scenario.Effect  `json:"effect"`
	Fencing scenario.Fencing `json:"fencing"`
	// SQL is the fencing statement exactly as executed, Args its arguments
	// [epoch, value], Tag the server's command tag and Rows the rows it changed.
	SQL  string `json:"sql"`
	Args []any  `json:"args"`
	Tag  string `json:"tag"`
	Rows int64  `json:"rows"`
}

const (
	defaultListen   = "127.0.0.1:0"
	defaultAppName  = "leaserace resource"
	defaultMaxConns = 4
	// maxBody bounds every request body.
	maxBody = 64 << 10
	// maxActor bounds the actor name, in characters.
	maxActor = 64
	// maxSchema is PostgreSQL's identifier length; longer names would be
	// truncated silently and then not match on DROP.
	maxSchema = 63
	// maxRuns bounds the runs one service holds at once.
	maxRuns = 10000
)

// runNameRE is what a run's name (its schema) may look like: plain enough
// to need no quoting anywhere it is shown.
var runNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// statements holds the resource's SQL, read once from assets.
type statements struct {
	schema, migrate, bind, reset, clear, rewind, lock, record, view, ping string
	begin, commit, rollback                                               string
	write                                                                 map[scenario.Fencing]string
}

func loadStatements() (statements, error) {
	s := statements{write: map[scenario.Fencing]string{}}
	err := assets.LoadSQL(map[string]*string{
		"resource_schema": &s.schema, "resource_migrate": &s.migrate, "resource_bind": &s.bind, "resource_reset": &s.reset,
		"resource_clear": &s.clear, "resource_rewind": &s.rewind, "resource_lock": &s.lock, "resource_record": &s.record,
		"resource_view": &s.view, "resource_ping": &s.ping, "resource_begin": &s.begin,
		"resource_commit": &s.commit, "resource_rollback": &s.rollback,
	})
	if err != nil {
		return s, err
	}
	for _, f := range scenario.Fencings() {
		q, err := assets.SQL("resource_write_" + string(f))
		if err != nil {
			return s, err
		}
		s.write[f] = q
	}
	return s, nil
}

// Renamed lists the resource's statements as an earlier release recorded
// them, before its columns took the screen's word: fence and stored_fence
// were epoch and stored_epoch. A transcript recorded then, from any
// scenario, is read through these so that it still verifies against a
// live run. They match JSON text, where < is written \u003c.
func Renamed() []scenario.Renaming {
	return []scenario.Renaming{
		{Was: regexp.MustCompile(`UPDATE resource_state SET epoch = \$1, value = \$2`), Now: "UPDATE resource_state SET fence = $$1, value = $$2"},
		{Was: regexp.MustCompile(`WHERE id = 1 AND epoch (<|\\u003c)`), Now: "WHERE id = 1 AND fence ${1}"},
		{Was: regexp.MustCompile(`RETURNING epoch, value`), Now: "RETURNING fence, value"},
	}
}

// run is one run the service holds: its schema and its fencing policy.
type run struct {
	schema string
	// fencing is the policy. PUT /fencing changes it while writes are
	// being judged on other goroutines, so it is only loaded and stored
	// atomically, and each request loads it once: a write is judged under
	// the one policy it loaded, from its SQL to its reason.
	fencing atomic.Pointer[scenario.Fencing]
	// dropOnClose is set for schemas the service created.
	dropOnClose bool
}

func newRun(schema string, f scenario.Fencing, dropOnClose bool) *run {
	r := &run{schema: schema, dropOnClose: dropOnClose}
	r.setPolicy(f)
	return r
}

// policy is the fencing policy in force now.
func (r *run) policy() scenario.Fencing { return *r.fencing.Load() }

// setPolicy puts f in force for every request that loads it afterwards.
func (r *run) setPolicy(f scenario.Fencing) { r.fencing.Store(&f) }

// Service is the protected resource's HTTP service.
type Service struct {
	// requests counts the requests served (Requests).
	requests atomic.Int64

	sql     statements
	pool    *pgxpool.Pool
	appName string
	// password is scrubbed from any database error before it is shown.
	password string

	mu   sync.Mutex
	runs map[string]*run
	// def is the default run's name.
	def string

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

// Start creates the default run's schema and tables and starts the HTTP
// server on a real listener. The caller must Close it.
func Start(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Listen == "" {
		cfg.Listen = defaultListen
	}
	if cfg.AppName == "" {
		cfg.AppName = defaultAppName
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = defaultMaxConns
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
	s := &Service{appName: cfg.AppName, runs: map[string]*run{}}
	if s.sql, err = loadStatements(); err != nil {
		return nil, err
	}
	def := newRun(cfg.Schema, f, false)
	if def.schema == "" {
		if def.schema, err = randomName("lr_res_"); err != nil {
			return nil, err
		}
		def.dropOnClose = true
	} else if len(def.schema) > maxSchema {
		return nil, fmt.Errorf("resource schema %q is %d bytes long; PostgreSQL allows at most %d", def.schema, len(def.schema), maxSchema)
	}

	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		// pgconn already hides the password in this message.
		return nil, fmt.Errorf("resource: cannot read the connection string: %w", err)
	}
	s.password = pc.ConnConfig.Password
	pc.MaxConns = cfg.MaxConns
	pc.ConnConfig.RuntimeParams["application_name"] = cfg.AppName
	// Every batch points its connection at its run's schema first, but
	// pgx prepares a batch's statements before it runs any of them: the
	// default run's tables, alike in every run's schema, let them prepare.
	pc.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{def.schema}.Sanitize()
	if s.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return nil, fmt.Errorf("resource: cannot set up its connections: %w", s.scrub(err))
	}
	if err := s.createSchema(ctx, def, def.dropOnClose); err != nil {
		s.pool.Close()
		return nil, err
	}
	s.def = def.schema
	s.runs[def.schema] = def
	if err := s.listen(cfg); err != nil {
		s.dropRuns(ctx)
		s.pool.Close()
		return nil, err
	}
	return s, nil
}

func randomName(prefix string) (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("resource: cannot pick a random schema name: %w", err)
	}
	return prefix + hex.EncodeToString(b), nil
}

// createSchema makes a run's schema and tables, so no write runs DDL. A
// random name must really be fresh (Close drops what it created); a name
// a client chose may be there already, from a service before this one.
//
// It runs to its end even when ctx is cancelled (Detached), then undoes
// it if ctx was; a failed start drops what it may have made, on a context
// of its own.
func (s *Service) createSchema(ctx context.Context, r *run, fresh bool) error {
	ident := pgx.Identifier{r.schema}.Sanitize()
	create := "CREATE SCHEMA IF NOT EXISTS " + ident
	if fresh {
		create = "CREATE SCHEMA " + ident
	}
	undo := func(err error) error {
		if !r.dropOnClose {
			return err
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
		defer cancel()
		return errors.Join(err, s.dropSchema(dctx, r.schema))
	}
	dctx, cancel := Detached(ctx)
	defer cancel()
	if _, err := s.pool.Exec(dctx, create); err != nil {
		return undo(fmt.Errorf("resource: cannot create schema %s: %w", r.schema, s.scrub(err)))
	}
	err := s.on(dctx, r.schema, "", func(c *pgx.Conn) error {
		// Only a schema a client named can hold tables from before.
		if !fresh {
			if _, err := c.Exec(dctx, s.sql.migrate); err != nil {
				return err
			}
		}
		_, err := c.Exec(dctx, s.sql.schema)
		return err
	})
	if err != nil {
		return undo(fmt.Errorf("resource: cannot create its tables in schema %s: %w", r.schema, s.scrub(err)))
	}
	if err := ctx.Err(); err != nil {
		return undo(err)
	}
	return nil
}

// undoTimeout bounds dropping a half-made run's schema after a failure,
// and making one once begun (Detached).
const undoTimeout = 10 * time.Second

// Detached is the context for creating a schema: ctx's values without its
// cancellation, bounded by undoTimeout. A statement cancelled on the
// client may still commit on the server after pgx has given up on it, and
// a DROP SCHEMA sent meanwhile finds nothing to drop: the schema outlived
// the run (a run opened while another lane panicked left one, about once
// in 150). So a creation runs to its end, and the caller then sees ctx's
// error and drops what it made.
func Detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
}

func (s *Service) dropSchema(ctx context.Context, schema string) error {
	if _, err := s.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("resource: cannot drop schema %s: %w", schema, s.scrub(err))
	}
	return nil
}

// AddRun starts a run of its own for a client: a fresh schema named name
// (a random one when name is empty) with fencing f. Its state starts at
// epoch 0, value null, until the first reset.
func (s *Service) AddRun(ctx context.Context, name string, f scenario.Fencing) (string, error) {
	f, err := scenario.ParseFencing(string(f))
	if err != nil {
		return "", err
	}
	fresh := name == ""
	if fresh {
		if name, err = randomName("lr_res_"); err != nil {
			return "", err
		}
	}
	if !runNameRE.MatchString(name) {
		return "", &RequestError{Status: http.StatusBadRequest, Msg: fmt.Sprintf("run name %q: want lowercase letters, digits and _, at most 63, not starting with a digit", name)}
	}
	s.mu.Lock()
	switch {
	case s.runs == nil:
		s.mu.Unlock()
		return "", errClosed
	case s.runs[name] != nil:
		s.mu.Unlock()
		return "", &RequestError{Status: http.StatusConflict, Msg: fmt.Sprintf("run %s already exists", name)}
	case len(s.runs) >= maxRuns:
		s.mu.Unlock()
		return "", &RequestError{Status: http.StatusServiceUnavailable, Msg: fmt.Sprintf("the resource holds %d runs already", maxRuns)}
	}
	r := newRun(name, f, true)
	// Reserved now, so a second request for the name is refused at once.
	s.runs[name] = r
	s.mu.Unlock()
	if err := s.createSchema(ctx, r, fresh); err != nil {
		s.mu.Lock()
		delete(s.runs, name)
		s.mu.Unlock()
		return "", err
	}
	return name, nil
}

// RemoveRun drops a run's schema and forgets it. The default run stays.
func (s *Service) RemoveRun(ctx context.Context, name string) error {
	s.mu.Lock()
	r := s.runs[name]
	if r == nil || name == s.def {
		s.mu.Unlock()
		if name == s.def {
			return &RequestError{Status: http.StatusBadRequest, Msg: "the default run cannot be removed"}
		}
		return noRun(name)
	}
	delete(s.runs, name)
	s.mu.Unlock()
	return s.dropSchema(ctx, r.schema)
}

// Conns is how many PostgreSQL connections the service holds now.
// Requests is how many HTTP requests the service has taken so far.
func (s *Service) Requests() int64 { return s.requests.Load() }

func (s *Service) Conns() int { return int(s.pool.Stat().TotalConns()) }

// Runs is how many runs the service holds, the default one included.
func (s *Service) Runs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}

// lookup finds a run by name.
func (s *Service) lookup(name string) (*run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs == nil {
		return nil, errClosed
	}
	r := s.runs[name]
	if r == nil {
		return nil, noRun(name)
	}
	return r, nil
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

func (s *Service) listen(cfg Config) error {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("resource: cannot listen on %s: %w", cfg.Listen, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !cfg.AllowNonLoopback && !tcp.IP.IsLoopback() {
		_ = ln.Close()
		return fmt.Errorf("resource listen address %q resolved to %s, which is not a loopback address", cfg.Listen, tcp.IP)
	}
	s.url = "http://" + ln.Addr().String()
	s.handler = http.HandlerFunc(s.serveHTTP)
	base, stop := context.WithCancel(context.Background())
	s.stopBase = stop
	s.srv = &http.Server{
		Handler:           s.handler,
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
	s.served = make(chan struct{})
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln)
	}()
	return nil
}

// URL is where the resource listens, e.g. "http://127.0.0.1:4321".
func (s *Service) URL() string { return s.url }

// Handler is the handler the server uses, for driving it without a socket.
func (s *Service) Handler() http.Handler { return s.handler }

// Schema is the PostgreSQL schema that holds the default run's tables.
func (s *Service) Schema() string { return s.def }

// Fencing is the default run's policy.
func (s *Service) Fencing() scenario.Fencing {
	f, _ := s.fencingOf(s.def)
	return f
}

// SetFencing changes the default run's policy for every write that starts
// afterwards.
func (s *Service) SetFencing(f scenario.Fencing) error { return s.setFencing(s.def, f) }

func (s *Service) fencingOf(name string) (scenario.Fencing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[name]
	if r == nil {
		return "", noRun(name)
	}
	return r.policy(), nil
}

func (s *Service) setFencing(name string, f scenario.Fencing) error {
	f, err := scenario.ParseFencing(string(f))
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[name]
	if r == nil {
		return noRun(name)
	}
	r.setPolicy(f)
	return nil
}

// Kill closes the listener and every open connection at once, as if the
// process had died; requests fail until a new service starts. Close still
// cleans up afterwards.
func (s *Service) Kill() { _ = s.srv.Close() }

// Close stops the HTTP server, drops every schema the service created and
// closes its connections. Later calls return the first call's result.
func (s *Service) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		var errs []error
		if err := s.srv.Shutdown(ctx); err != nil {
			// Requests still running: cancel them rather than leave them
			// holding connections the pool is about to close.
			s.stopBase()
			_ = s.srv.Close()
			errs = append(errs, fmt.Errorf("resource: requests were still running at shutdown: %w", err))
		}
		s.stopBase()
		<-s.served
		errs = append(errs, s.dropRuns(ctx))
		s.pool.Close()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// dropRuns drops the schemas the service created and forgets every run.
func (s *Service) dropRuns(ctx context.Context) error {
	s.mu.Lock()
	runs := s.runs
	s.runs = nil
	s.mu.Unlock()
	var errs []error
	for _, r := range runs {
		if r.dropOnClose {
			errs = append(errs, s.dropSchema(ctx, r.schema))
		}
	}
	return errors.Join(errs...)
}

// scrub removes the password from an error's text; the error chain is kept
// for errors.Is/As.
func (s *Service) scrub(err error) error {
	if err == nil || s.password == "" || !strings.Contains(err.Error(), s.password) {
		return err
	}
	return reword.Error(strings.ReplaceAll(err.Error(), s.password, "xxxxx"), err)
}

// RequestError is a request the service refuses for what it asks, not for
// a failure of its store: an unknown run, a taken name.
type RequestError struct {
	Status int
	Msg    string
}

func (e *RequestError) Error() string { return e.Msg }

// noRun is the refusal for a run name the service does not hold.
func noRun(name string) *RequestError {
	return &RequestError{Status: http.StatusNotFound, Msg: fmt.Sprintf("no run named %s: create one with POST /runs", clipText(name))}
}

var errClosed = errors.New("the resource is shutting down")
