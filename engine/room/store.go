package room

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/leaserace/leaserace/assets"
	"github.com/leaserace/leaserace/engine/pgdsn"
	"github.com/leaserace/leaserace/scenario"
)

// Channel is the one LISTEN/NOTIFY channel of every room: a payload names
// its room, so rooms on one server share the channel.
const Channel = "leaserace_room"

// SchemaPrefix starts the name of a room's schema; the room's name follows.
const SchemaPrefix = "lr_room_"

// Limits on names.
const (
	MaxRoomName = 40
	MaxSeatName = 64
)

var (
	// ErrRoomName is a room name Open refuses.
	ErrRoomName = errors.New("a room name is 1 to 40 lowercase letters, digits or underscores")
	// ErrIdleTooShort is an Options.Idle Open refuses: the store beats
	// every third of it, and a shorter one would beat faster than a busy
	// server can answer.
	ErrIdleTooShort = errors.New("too short: the store beats every third of it; use " + minIdle.String() + " or more")
	// ErrSeatName is an attendee name Join refuses.
	ErrSeatName = errors.New("an attendee name is 1 to 64 bytes of printable UTF-8")
	// ErrNoSeat is a seat that is not in the room: it left, or its serve
	// process went silent for longer than its idle bound and was swept.
	// Joining again gives a new seat.
	ErrNoSeat = errors.New("no such seat in the room")
	// ErrEnded is a room whose tables are gone: the presenter ended it.
	ErrEnded = errors.New("the room has ended")
	// ErrClosed is a Store used after Close.
	ErrClosed = errors.New("the room store is closed")
)

var roomName = regexp.MustCompile(`^[a-z0-9_]{1,40}$`)

// ValidRoom reports whether name can name a room: 1 to 40 lowercase
// letters, digits or underscores. Only such a name reaches SQL, as a
// parameter or quoted as the identifier of the room's schema.
func ValidRoom(name string) error {
	if !roomName.MatchString(name) {
		return fmt.Errorf("room name %q: %w", name, ErrRoomName)
	}
	return nil
}

// ValidIdle reports whether d can be Options.Idle: 0 (the default, one
// minute) or long enough for the store to beat every third of it.
func ValidIdle(d time.Duration) error {
	if d != 0 && d < minIdle {
		return fmt.Errorf("an idle bound of %s is %w", d, ErrIdleTooShort)
	}
	return nil
}

// validSeatName keeps what the presenter's board will print to a terminal
// free of escape sequences and of unbounded size.
func validSeatName(name string) error {
	if !printable(name, MaxSeatName) {
		return fmt.Errorf("attendee name %q: %w", name, ErrSeatName)
	}
	return nil
}

// printable says whether name is 1 to max bytes of printable UTF-8.
func printable(name string, max int) bool {
	if name == "" || len(name) > max || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// Options tune a Store; the zero value is good for a workshop.
type Options struct {
	// Idle is how long this process may go without a sign of life before
	// the other processes of the room sweep its seats, as those of a serve
	// process that died. The store beats, sweeps and checks its LISTEN
	// connection every Idle/3. Default one minute; at least 300 ms.
	Idle time.Duration
	// Conns is the size of the pool for reads and writes: 1 (the default)
	// or 2. The LISTEN connection is one more.
	Conns int
	// Debounce coalesces board changes that arrive within it into one
	// BoardChanged event. Default 100 ms.
	Debounce time.Duration
	// OnError hears what goes wrong in the background: the LISTEN
	// connection lost and reconnected (a *ListenError), a beat or sweep that
	// failed, a subscriber that panicked. Calls never overlap. Nil discards.
	OnError func(error)
}

const (
	defaultIdle     = time.Minute
	minIdle         = 300 * time.Millisecond
	defaultDebounce = 100 * time.Millisecond
	maxConns        = 2
)

// Store is one process's handle on a room's shared state in PostgreSQL.
// It holds at most Options.Conns+1 connections: a pool for reads and
// writes, and one that LISTENs. Its methods are safe for concurrent use.
type Store struct {
	room, schema string
	// serverID is this Store's own, unique; serverName is what the board
	// shows for it.
	serverID, serverName string
	opts                 Options
	sql                  roomSQL
	pool                 *pgxpool.Pool
	listenCfg            *pgx.ConnConfig
	// boardPayload and endedPayload are the room's NOTIFY payloads that
	// carry no data, made once.
	boardPayload, endedPayload string

	ended   atomic.Bool
	closed  atomic.Bool
	errMu   sync.Mutex
	stop    context.CancelFunc
	wg      sync.WaitGroup
	events  chan Event
	subsMu  sync.Mutex
	subs    map[*subscription]struct{}
	closeMu sync.Mutex
	closeE  error
	closeD  bool
}

// roomSQL holds the room's statements, read once from assets.
type roomSQL struct {
	lock, bind, schema, beat, sweep, serverLeave, join, report, leave, vote,
	reached, setLead, lead, seats, votes, goals, notify string
}

func loadRoomSQL() (roomSQL, error) {
	var q roomSQL
	err := assets.LoadSQL(map[string]*string{
		"room_lock": &q.lock, "room_bind": &q.bind, "room_schema": &q.schema,
		"room_beat": &q.beat, "room_sweep": &q.sweep, "room_server_leave": &q.serverLeave,
		"room_join": &q.join, "room_report": &q.report, "room_leave": &q.leave,
		"room_vote": &q.vote, "room_reached": &q.reached, "room_set_lead": &q.setLead,
		"room_lead": &q.lead, "room_seats": &q.seats, "room_votes": &q.votes,
		"room_goals": &q.goals, "room_notify": &q.notify,
	})
	return q, err
}

// Open joins this process to a room on the PostgreSQL server dsn reaches,
// creating the room's schema and tables if they are missing; server names
// this process on the board (host:pid, say). Two processes may open the
// same room at once. Open removes the seats of processes that went silent,
// and LISTENs before it returns, so every change made after Open returns
// reaches Subscribe's callbacks. The caller must Close the Store.
func Open(ctx context.Context, dsn, room, server string, opts Options) (_ *Store, err error) {
	if err := ValidRoom(room); err != nil {
		return nil, err
	}
	// The board prints it, as it prints attendees' names.
	if !printable(server, MaxSeatName) {
		return nil, fmt.Errorf("the name of this process, %q, must be 1 to %d bytes of printable UTF-8", server, MaxSeatName)
	}
	if err := ValidIdle(opts.Idle); err != nil {
		return nil, fmt.Errorf("room %s: %w", room, err)
	}
	if opts.Idle == 0 {
		opts.Idle = defaultIdle
	}
	if opts.Debounce <= 0 {
		opts.Debounce = defaultDebounce
	}
	if opts.Conns <= 0 {
		opts.Conns = 1
	}
	if opts.Conns > maxConns {
		return nil, fmt.Errorf("a room store uses at most %d pooled connections, not %d", maxConns, opts.Conns)
	}
	q, err := loadRoomSQL()
	if err != nil {
		return nil, err
	}
	id, err := randomID()
	if err != nil {
		return nil, err
	}
	s := &Store{
		room: room, schema: SchemaPrefix + room, serverID: id, serverName: server,
		opts: opts, sql: q, events: make(chan Event, 256), subs: map[*subscription]struct{}{},
	}
	if s.boardPayload, err = payload(room, kindBoard, nil); err != nil {
		return nil, err
	}
	if s.endedPayload, err = payload(room, kindEnded, nil); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("cannot read the connection string for room %s: %s", room, pgdsn.Redact(err.Error()))
	}
	pc.MaxConns = int32(opts.Conns)
	pc.ConnConfig.RuntimeParams["application_name"] = "leaserace room " + room
	pc.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{s.schema}.Sanitize()
	s.listenCfg = pc.ConnConfig.Copy()
	s.listenCfg.RuntimeParams["application_name"] = "leaserace room " + room + " listen"
	if s.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return nil, fmt.Errorf("cannot set up connections to PostgreSQL for room %s: %w", room, err)
	}
	defer func() {
		if err != nil {
			s.pool.Close()
		}
	}()
	if err := s.create(ctx); err != nil {
		return nil, err
	}
	// Listening before Open returns: a change made by anyone after that
	// is heard.
	conn, err := s.connectListener(ctx)
	if err != nil {
		// Our server row would otherwise stay until someone sweeps it.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = s.pool.Exec(cctx, s.sql.serverLeave, s.serverID)
		return nil, err
	}
	bg, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.wg.Add(3)
	go s.listen(bg, conn)
	go s.dispatch(bg)
	go s.maintain(bg)
	return s, nil
}

func randomID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("cannot make an id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// create makes the room's schema and tables if missing, registers this
// process and sweeps the silent ones, in one transaction under the room's
// advisory lock.
func (s *Store) create(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.sql.lock, s.schema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{s.schema}.Sanitize()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.sql.bind, pgx.Identifier{s.schema}.Sanitize()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.sql.schema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.sql.beat, s.serverID, s.serverName, s.opts.Idle.Milliseconds()); err != nil {
			return err
		}
		var swept int64
		if err := tx.QueryRow(ctx, s.sql.sweep).Scan(&swept); err != nil {
			return err
		}
		if swept > 0 {
			if _, err := tx.Exec(ctx, s.sql.notify, Channel, s.boardPayload); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot set up room %s in PostgreSQL: %w", s.room, err)
	}
	return nil
}

// Room is the room's name.
func (s *Store) Room() string { return s.room }

// Schema is the name of the room's schema.
func (s *Store) Schema() string { return s.schema }

// MaxConns is the most PostgreSQL connections the Store holds at once:
// its pool and its LISTEN connection.
func (s *Store) MaxConns() int { return s.opts.Conns + 1 }

// fail words an error of the room's for a person, and marks a room whose
// tables are gone with ErrEnded.
func (s *Store) fail(what string, err error) error {
	if s.closed.Load() || errors.Is(err, ErrClosed) {
		return fmt.Errorf("cannot %s: %w", what, ErrClosed)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") {
		return fmt.Errorf("cannot %s: room %s: %w: %w", what, s.room, ErrEnded, err)
	}
	return fmt.Errorf("cannot %s in room %s: %w", what, s.room, err)
}

// send runs b on a pooled connection (one round trip, one transaction)
// and hands its results to read.
func (s *Store) send(ctx context.Context, b *pgx.Batch, read func(pgx.BatchResults) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	br := s.pool.SendBatch(ctx, b)
	var err error
	if read != nil {
		err = read(br)
	}
	return errors.Join(err, br.Close())
}

// notifyBoard queues the room's "board changed" NOTIFY in b.
func (s *Store) notifyBoard(b *pgx.Batch) {
	b.Queue(s.sql.notify, Channel, s.boardPayload)
}

// Join seats an attendee, named by their SSH user name, on this process
// and returns the seat with a fresh ID.
func (s *Store) Join(ctx context.Context, name string) (Seat, error) {
	if err := validSeatName(name); err != nil {
		return Seat{}, err
	}
	id, err := randomID()
	if err != nil {
		return Seat{}, err
	}
	seat := Seat{ID: id, Name: name, Server: s.serverName}
	b := &pgx.Batch{}
	// Beat first: a process whose row was swept while it was cut off
	// comes back with it.
	b.Queue(s.sql.beat, s.serverID, s.serverName, s.opts.Idle.Milliseconds())
	b.Queue(s.sql.join, id, s.serverID, name)
	s.notifyBoard(b)
	err = s.send(ctx, b, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		return br.QueryRow().Scan(&seat.Joined, &seat.Seen)
	})
	if err != nil {
		return Seat{}, s.fail("seat "+name, err)
	}
	return seat, nil
}

// Report records where a seat's attendee is: scenario, knobs, position and
// whether they follow the presenter. It moves the seat's Seen on. A seat
// that is gone gives ErrNoSeat.
func (s *Store) Report(ctx context.Context, seat Seat) error {
	b := &pgx.Batch{}
	b.Queue(s.sql.report, seat.ID, seat.Scenario, string(seat.Knobs.Renewal), string(seat.Knobs.Fencing),
		seat.Pos, seat.T, seat.Following)
	s.notifyBoard(b)
	var seen time.Time
	err := s.send(ctx, b, func(br pgx.BatchResults) error {
		return br.QueryRow().Scan(&seen)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("cannot report seat %s in room %s: %w", seat.ID, s.room, ErrNoSeat)
	}
	if err != nil {
		return s.fail("report seat "+seat.ID, err)
	}
	return nil
}

// ReportMany is Report for several seats at once: one round trip, one
// transaction and one notice to the room for all of them. errs[i] is seat
// i's own result: ErrNoSeat for a seat that is gone. err is the batch's:
// nothing was recorded.
func (s *Store) ReportMany(ctx context.Context, seats []Seat) (errs []error, err error) {
	b := &pgx.Batch{}
	for _, seat := range seats {
		b.Queue(s.sql.report, seat.ID, seat.Scenario, string(seat.Knobs.Renewal), string(seat.Knobs.Fencing),
			seat.Pos, seat.T, seat.Following)
	}
	s.notifyBoard(b)
	errs = make([]error, len(seats))
	err = s.send(ctx, b, func(br pgx.BatchResults) error {
		for i, seat := range seats {
			var seen time.Time
			err := br.QueryRow().Scan(&seen)
			if errors.Is(err, pgx.ErrNoRows) {
				errs[i] = fmt.Errorf("cannot report seat %s in room %s: %w", seat.ID, s.room, ErrNoSeat)
				continue
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.fail(fmt.Sprintf("report %d seats", len(seats)), err)
	}
	return errs, nil
}

// Leave removes a seat with its votes and goals. Leaving a seat that is
// already gone is no error.
func (s *Store) Leave(ctx context.Context, seatID string) error {
	b := &pgx.Batch{}
	b.Queue(s.sql.leave, seatID)
	s.notifyBoard(b)
	if err := s.send(ctx, b, nil); err != nil {
		return s.fail("remove seat "+seatID, err)
	}
	return nil
}

// Vote records a seat's choice for a question; a new choice replaces the
// seat's old one. A seat that is gone gives ErrNoSeat.
func (s *Store) Vote(ctx context.Context, v Vote) error {
	b := &pgx.Batch{}
	b.Queue(s.sql.vote, v.Seat, v.Question, v.Choice)
	s.notifyBoard(b)
	if err := s.send(ctx, b, nil); err != nil {
		if isForeignKey(err) {
			return fmt.Errorf("cannot record the vote of seat %s in room %s: %w", v.Seat, s.room, ErrNoSeat)
		}
		return s.fail("record the vote of seat "+v.Seat, err)
	}
	return nil
}

// Reached records that a seat reached a goal of a scenario in moves moves;
// reaching it again keeps the fewest. A seat that is gone gives ErrNoSeat.
func (s *Store) Reached(ctx context.Context, seat, scenarioName, goal string, moves int) error {
	if moves < 0 {
		return fmt.Errorf("cannot record goal %s: %d moves", goal, moves)
	}
	b := &pgx.Batch{}
	b.Queue(s.sql.reached, seat, scenarioName, goal, moves)
	s.notifyBoard(b)
	if err := s.send(ctx, b, nil); err != nil {
		if isForeignKey(err) {
			return fmt.Errorf("cannot record goal %s of seat %s in room %s: %w", goal, seat, s.room, ErrNoSeat)
		}
		return s.fail("record goal "+goal+" of seat "+seat, err)
	}
	return nil
}

func isForeignKey(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}

// SetLead records where the presenter is and tells every process of the
// room. It returns the lead with its Seq, one more than the last lead's;
// the LeadChanged events carry the same.
func (s *Store) SetLead(ctx context.Context, l Lead) (Lead, error) {
	if s.closed.Load() {
		return Lead{}, ErrClosed
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, s.sql.setLead, l.Scenario, string(l.Knobs.Renewal),
			string(l.Knobs.Fencing), l.Pos, l.T, l.Push).Scan(&l.Seq); err != nil {
			return err
		}
		// The payload carries the whole lead, Seq included, so a pushed
		// lead reaches everyone even when a newer one follows at once.
		p, err := payload(s.room, kindLead, &l)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, s.sql.notify, Channel, p)
		return err
	})
	if err != nil {
		return Lead{}, s.fail("set the lead", err)
	}
	return l, nil
}

// Lead returns where the presenter is, or nil before any lead was set.
func (s *Store) Lead(ctx context.Context) (*Lead, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	l, err := scanLead(s.pool.QueryRow(ctx, s.sql.lead))
	if err != nil {
		return nil, s.fail("read the lead", err)
	}
	return l, nil
}

func scanLead(row pgx.Row) (*Lead, error) {
	var l Lead
	var renewal, fencing string
	err := row.Scan(&l.Seq, &l.Scenario, &renewal, &fencing, &l.Pos, &l.T, &l.Push)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l.Knobs = scenario.Knobs{Renewal: scenario.Renewal(renewal), Fencing: scenario.Fencing(fencing)}
	return &l, nil
}

// Board reads the room at a glance: the lead, the seats in join order, the
// votes tallied and the goals counted.
func (s *Store) Board(ctx context.Context) (Board, error) {
	bd := Board{Room: s.room, Seats: []Seat{}, Votes: map[string]map[string]int{}, Goals: map[string]int{}}
	b := &pgx.Batch{}
	b.Queue(s.sql.lead)
	b.Queue(s.sql.seats)
	b.Queue(s.sql.votes)
	b.Queue(s.sql.goals)
	err := s.send(ctx, b, func(br pgx.BatchResults) error {
		var err error
		if bd.Lead, err = scanLead(br.QueryRow()); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var renewal, fencing string
		var seat Seat
		_, err = pgx.ForEachRow(rows, []any{&seat.ID, &seat.Name, &seat.Server, &seat.Scenario,
			&renewal, &fencing, &seat.Pos, &seat.T, &seat.Following, &seat.Joined, &seat.Seen}, func() error {
			seat.Knobs = scenario.Knobs{Renewal: scenario.Renewal(renewal), Fencing: scenario.Fencing(fencing)}
			bd.Seats = append(bd.Seats, seat)
			return nil
		})
		if err != nil {
			return err
		}
		if rows, err = br.Query(); err != nil {
			return err
		}
		var question, choice string
		var n int
		_, err = pgx.ForEachRow(rows, []any{&question, &choice, &n}, func() error {
			if bd.Votes[question] == nil {
				bd.Votes[question] = map[string]int{}
			}
			bd.Votes[question][choice] = n
			return nil
		})
		if err != nil {
			return err
		}
		if rows, err = br.Query(); err != nil {
			return err
		}
		var scen, goal string
		_, err = pgx.ForEachRow(rows, []any{&scen, &goal, &n}, func() error {
			bd.Goals[scen+"/"+goal] = n
			return nil
		})
		return err
	})
	if err != nil {
		return Board{}, s.fail("read the board", err)
	}
	return bd, nil
}

// Drop ends the room: it drops the room's schema with every table in it and
// tells every process of the room (a RoomEnded event). The Store must
// still be closed.
func (s *Store) Drop(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.sql.lock, s.schema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s.schema}.Sanitize()+" CASCADE"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, s.sql.notify, Channel, s.endedPayload)
		return err
	})
	if err != nil {
		return fmt.Errorf("cannot end room %s: %w", s.room, err)
	}
	s.ended.Store(true)
	return nil
}

// Close removes this process's seats (with their votes and goals), stops
// listening and closes every connection. Later calls return the first
// call's result.
func (s *Store) Close(ctx context.Context) error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closeD {
		return s.closeE
	}
	s.closeD = true
	s.stop()
	s.wg.Wait()
	s.stopSubscriptions()
	var err error
	if !s.ended.Load() {
		b := &pgx.Batch{}
		b.Queue(s.sql.serverLeave, s.serverID)
		s.notifyBoard(b)
		if err = s.send(ctx, b, nil); err != nil {
			err = s.fail("remove this process's seats", err)
			if errors.Is(err, ErrEnded) {
				err = nil // someone ended the room: nothing of ours is left
			}
		}
	}
	s.closed.Store(true)
	s.pool.Close()
	s.closeE = err
	return err
}

// report hands a background error to Options.OnError, one call at a time.
func (s *Store) report(err error) {
	if s.opts.OnError == nil || err == nil {
		return
	}
	s.errMu.Lock()
	defer s.errMu.Unlock()
	s.opts.OnError(err)
}

// maintain beats and sweeps every Idle/3 until ctx ends.
func (s *Store) maintain(ctx context.Context) {
	defer s.wg.Done()
	tick := time.NewTicker(s.opts.Idle / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if s.ended.Load() {
			return
		}
		err := s.beatAndSweep(ctx)
		switch {
		case err == nil || ctx.Err() != nil:
		case errors.Is(err, ErrEnded):
			// Ended by someone unheard: the listener's catch-up says so.
			s.ended.Store(true)
			return
		default:
			s.report(err)
		}
	}
}

// beatAndSweep moves this process's beat on and removes the processes
// that stopped beating, telling the room if any went. A panic is an error:
// the next tick tries again, as a process that stops beating loses its
// seats.
func (s *Store) beatAndSweep(ctx context.Context) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError("the room's upkeep", v)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, s.opts.Idle/3)
	defer cancel()
	b := &pgx.Batch{}
	b.Queue(s.sql.beat, s.serverID, s.serverName, s.opts.Idle.Milliseconds())
	b.Queue(s.sql.sweep)
	var swept int64
	err = s.send(ctx, b, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		return br.QueryRow().Scan(&swept)
	})
	if err != nil {
		return s.fail("keep this process's seats alive", err)
	}
	if swept > 0 {
		if _, err := s.pool.Exec(ctx, s.sql.notify, Channel, s.boardPayload); err != nil {
			return s.fail("announce the seats swept", err)
		}
	}
	return nil
}

// notice is a NOTIFY payload: the room, what changed, and the new lead.
type notice struct {
	Room string `json:"room"`
	Kind string `json:"kind"`
	Lead *Lead  `json:"lead,omitempty"`
}

const (
	kindLead  = "lead"
	kindBoard = "board"
	kindEnded = "ended"
)

func payload(room, kind string, l *Lead) (string, error) {
	b, err := json.Marshal(notice{Room: room, Kind: kind, Lead: l})
	if err != nil {
		return "", fmt.Errorf("cannot encode the room's notice: %w", err)
	}
	return string(b), nil
}
