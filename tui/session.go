package tui

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/search"
)

// session owns what the TUI started on the server: every run (an
// *engine.Run: a live run, or a replay that holds nothing
// open) and the pgserver.Server. Bubble Tea copies models by value, so the model holds a
// pointer to one session and Close can find everything from any copy.
type session struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
	runs   []*engine.Run
	server *pgserver.Server

	dsn           string
	provider      string
	serverVersion string
	// host and who, in a room: runs opened here share the room's pool
	// and resource, named for the attendee.
	host *engine.Host
	who  string
	// searcher searches schedules for the goal panel; ownSearch is set when
	// the session made it (and closes it).
	searcher  *search.Searcher
	ownSearch bool
	// lent, when set, is taken on first use instead of a search of the
	// session's own, and left open: this package's tests lend every
	// model one, so that a scenario is searched once for all of them.
	lent *search.Searcher
}

// searchFor is the session's schedule search, made on first use.
func (s *session) searchFor() *search.Searcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.searcher == nil && !s.closed && s.lent != nil {
		s.searcher = s.lent
	}
	if s.searcher == nil && !s.closed && (s.dsn != "" || s.host != nil) {
		s.searcher = search.New(search.Config{Host: s.host, DSN: s.dsn, Lanes: 1})
		s.ownSearch = true
	}
	return s.searcher
}

// searched is the session's schedule search if it has one, without
// making one: its cache answers par for an export.
func (s *session) searched() *search.Searcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.searcher
}

func newSession(ctx context.Context) *session {
	ctx, cancel := context.WithCancel(ctx)
	return &session{ctx: ctx, cancel: cancel}
}

// begin registers a command that is about to use the engine. It fails once
// Close has started, so no command opens anything behind Close's back.
func (s *session) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *session) end() { s.wg.Done() }

// adopt records a run so Close will close it. It reports false when the
// session is already closing; the caller must then close the run itself.
func (s *session) adopt(r *engine.Run) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.runs = append(s.runs, r)
	return true
}

// adoptServer records the server the TUI started, like adopt.
func (s *session) adoptServer(srv *pgserver.Server) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.server = srv
	s.dsn, s.provider, s.serverVersion = srv.DSN, srv.Provider, srv.Version
	return true
}

// release closes one run the session owns and forgets it.
func (s *session) release(ctx context.Context, r *engine.Run) error {
	s.mu.Lock()
	for i, x := range s.runs {
		if x == r {
			s.runs = append(s.runs[:i:i], s.runs[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	if err := r.Close(ctx); err != nil {
		return fmt.Errorf("could not clean up the previous scenario's run: %w", err)
	}
	return nil
}

// Close stops every command in flight, then closes every run and finally
// the server. It is safe to call more than once.
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	// Cancel first: a step blocked on a dead server must give up before
	// we wait for it.
	s.cancel()
	s.wg.Wait()

	s.mu.Lock()
	runs, srv := s.runs, s.server
	s.runs, s.server = nil, nil
	searcher := s.searcher
	if !s.ownSearch {
		searcher = nil
	}
	s.mu.Unlock()

	var errs []error
	for _, r := range runs {
		if err := r.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("could not clean up a run on the server: %w", err))
		}
	}
	if searcher != nil {
		if err := searcher.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("could not stop the schedule search: %w", err))
		}
	}
	if srv != nil {
		if err := srv.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("could not stop the %s PostgreSQL server: %w", srv.Provider, err))
		}
	}
	return errors.Join(errs...)
}
