package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/exploremap"
	"github.com/leaserace/leaserace/tui/export"
	"github.com/leaserace/leaserace/tui/screen"
)

// opTimeout bounds one engine call. A local step takes milliseconds; this
// is only there so a server that stopped answering cannot hang a command.
const opTimeout = 30 * time.Second

// opKind is one thing the presenter asked the engine to do.
type opKind int

const (
	opNext opKind = iota
	opPrev
	opTickNext
	opTickPrev
	opStart
	opEnd
	opRenewal
	opFencing
	opReconnect
	opExport
	opOpen
	opWalk
	opExplore
	opJump
	opPlayMove
	opFollow
)

func (k opKind) String() string {
	return [...]string{"next", "previous", "tick forward", "tick back", "start", "end",
		"renewal toggle", "fencing cycle", "reconnect", "export", "open scenario", "session walk",
		"explore map", "explore jump", "move", "follow"}[k]
}

// op is a queued request; name is the scenario for opOpen and the varied
// time for opJump, index the session entry (1-based) for opWalk; at and
// knobs are the map cell opJump goes to.
type op struct {
	kind  opKind
	name  string
	index int
	at    int64
	knobs scenario.Knobs
	// move is what opPlayMove plays; asked is set once the op passed its
	// question (answered or skipped), so it is not asked again.
	move  scenario.Move
	asked bool
	// lead is where opFollow takes the run.
	lead room.Lead
}

// doneMsg is what an engine command reports back to Update.
type doneMsg struct {
	op   op
	run  *engine.Run // set when the command opened a new run
	snap screen.Snapshot
	// moved is false when the command left the run where it was (at the
	// start already, past the last event).
	moved  bool
	step   *transcript.Step
	change *engine.Change
	paths  []string
	info   string
	err    error
	// grid is the map an opExplore swept.
	grid *exploremap.Grid
}

// opEnv is what a command needs, copied from the model when it starts.
type opEnv struct {
	s         *session
	run       *engine.Run
	shown     screen.Snapshot
	log       []transcript.PresenterEntry
	asks      transcript.AskTally
	exportDir string
	now       time.Time
	noColor   bool
	// replay is set when the TUI shows recorded runs: s opens recordings,
	// not live runs. home is the replay it opened with.
	replay bool
	home   *engine.Run
	// walk is the session entry an opWalk goes to.
	walk transcript.PresenterEntry
	// playing is set in play mode; reached are the session's goals.
	playing bool
	reached []sessionGoal
}

// exec runs f as a Bubble Tea command: with its own deadline, registered
// with the session so Close waits for it, and with a panic inside the
// engine turned into an error shown in place instead of a crash.
func (e opEnv) exec(o op, f func(ctx context.Context) doneMsg) tea.Cmd {
	return func() (msg tea.Msg) {
		if !e.s.begin() {
			return nil
		}
		defer e.s.end()
		ctx, cancel := context.WithTimeout(e.s.ctx, opTimeout)
		defer cancel()
		var err error
		defer func() {
			if err != nil {
				msg = doneMsg{op: o, err: fmt.Errorf("during %s: %w", o.kind, err)}
			}
		}()
		defer engine.CatchPanic(&err)
		d := f(ctx)
		d.op = o
		return d
	}
}

// command builds the engine call for o.
func (e opEnv) command(o op) tea.Cmd {
	r := e.run
	return e.exec(o, func(ctx context.Context) doneMsg {
		switch o.kind {
		case opNext:
			st, err := r.Next(ctx)
			if errors.Is(err, engine.ErrEnd) {
				return doneMsg{snap: screen.SnapshotOf(r), info: "That was the last event: G jumps to the end of the window, g back to the start."}
			}
			if err != nil {
				return doneMsg{err: err}
			}
			return doneMsg{snap: screen.SnapshotOf(r), moved: true, step: &st}
		case opFollow:
			return e.follow(ctx, o.lead)
		case opPlayMove:
			st, err := r.Play(ctx, o.move)
			if err != nil {
				return doneMsg{err: err}
			}
			return doneMsg{snap: screen.SnapshotOf(r), moved: true, step: &st}
		case opPrev:
			pos, now := r.Pos(), r.Now()
			if pos == 0 {
				if now <= r.Start() {
					return doneMsg{snap: screen.SnapshotOf(r), info: "Already at the start: → runs the first event."}
				}
				return e.seek(ctx, r, func() error { return r.Seek(ctx, 0) })
			}
			target := pos - 1
			if now > r.Log()[pos-1].T {
				// The cursor was ticked past the last event: go back to it.
				target = pos
			}
			return e.seek(ctx, r, func() error { return r.Seek(ctx, target) })
		case opTickNext:
			if r.Now() >= r.End() && r.Pos() >= r.Len() {
				return doneMsg{snap: screen.SnapshotOf(r), info: "At the end of the window."}
			}
			now := r.Now()
			return e.seek(ctx, r, func() error { return r.SeekTime(ctx, now+1) })
		case opTickPrev:
			now := r.Now()
			if now <= r.Start() {
				return doneMsg{snap: screen.SnapshotOf(r), info: "Already at the start of the window."}
			}
			return e.seek(ctx, r, func() error { return r.SeekTime(ctx, now-1) })
		case opStart:
			return e.seek(ctx, r, func() error { return r.Seek(ctx, 0) })
		case opEnd:
			end := r.End()
			return e.seek(ctx, r, func() error { return r.SeekTime(ctx, end) })
		case opRenewal, opFencing:
			k := r.Knobs()
			if o.kind == opRenewal {
				k.Renewal = k.Renewal.Toggle()
			} else {
				k.Fencing = k.Fencing.Next()
			}
			ch, err := r.SetKnobs(ctx, k)
			if err != nil {
				return doneMsg{err: err}
			}
			return doneMsg{snap: screen.SnapshotOf(r), moved: true, change: &ch}
		case opReconnect:
			return e.reconnect(ctx, r)
		case opExport:
			paths, info, err := e.export(ctx)
			if err != nil {
				return doneMsg{err: err}
			}
			return doneMsg{snap: screen.SnapshotOf(r), paths: paths, info: info}
		case opOpen:
			return e.open(ctx, o.name)
		case opWalk:
			return e.walkTo(ctx, e.walk)
		case opExplore:
			return e.explore(ctx)
		case opJump:
			return e.jump(ctx, o)
		}
		return doneMsg{err: fmt.Errorf("unknown request %d", o.kind)}
	})
}

// export writes the run on screen, with the presenter's session log and
// the questions' tally, in every format into the export directory. A
// played run also gets its goals against par and those the session
// reached under other settings; info says which run the files hold.
func (e opEnv) export(ctx context.Context) ([]string, string, error) {
	tr, err := e.run.Transcript()
	if err != nil {
		return nil, "", fmt.Errorf("could not build the transcript: %w", err)
	}
	tr.Presenter = e.log
	if e.asks.Asked > 0 {
		asks := e.asks
		tr.Asks = &asks
	}
	info := ""
	if e.playing || tr.Played != nil {
		info = e.playedGoals(&tr)
	}
	paths, err := export.Files(ctx, tr, e.exportDir, e.now, e.noColor)
	return paths, info, err
}

// playedGoals fills in the transcript's goals: the run's own against
// par, where a search found it, and those reached in this session under
// other settings. It says in words which run the files hold.
func (e opEnv) playedGoals(tr *transcript.Transcript) string {
	sc := e.run.Scenario()
	p := tr.PlayedOf()
	p.Goals = e.withPar(sc, world.GoalRecords(sc, tr.Knobs, tr.Steps))
	var others []string
	for _, g := range e.reached {
		if g.scenario == sc.Name && g.rec.Knobs != tr.Knobs {
			p.Elsewhere = append(p.Elsewhere, e.withPar(sc, []transcript.GoalRecord{g.rec})...)
			others = append(others, fmt.Sprintf("%s under %s", g.rec.ID, g.rec.Knobs))
		}
	}
	var mine []string
	for _, g := range p.Goals {
		if g.Reached {
			mine = append(mine, g.ID)
		}
	}
	s := fmt.Sprintf("the run on screen, %s", transcript.SettingWords(tr.Knobs))
	if len(mine) > 0 {
		s += ", reached " + strings.Join(mine, ", ")
	} else {
		s += ", no goal reached"
	}
	if len(others) > 0 {
		s += "; the files also list the moves of " + strings.Join(others, ", ") + ", reached earlier (not this run)"
	}
	return s
}

// withPar adds par to goal records from searches the session already made.
func (e opEnv) withPar(sc *scenario.Scenario, recs []transcript.GoalRecord) []transcript.GoalRecord {
	o := e.s.searched()
	if o == nil || len(recs) == 0 {
		return recs
	}
	if res, ok := o.Cached(sc, recs[0].Knobs); ok {
		return res.WithPar(recs)
	}
	return recs
}

func (e opEnv) seek(_ context.Context, r *engine.Run, f func() error) doneMsg {
	if err := f(); err != nil {
		return doneMsg{err: err}
	}
	return doneMsg{snap: screen.SnapshotOf(r), moved: true}
}

// reconnect dials again and brings the run back to exactly the state the
// screen shows, which may differ from the engine's if a step failed midway.
func (e opEnv) reconnect(ctx context.Context, r *engine.Run) doneMsg {
	if err := r.Reconnect(ctx); err != nil {
		return doneMsg{err: err}
	}
	pos, now := e.shown.View.Pos, e.shown.View.Now
	if e.shown.Scenario != r.Scenario() {
		return doneMsg{snap: screen.SnapshotOf(r), moved: true}
	}
	if r.Pos() != pos || r.Now() != now {
		if err := goTo(ctx, r, pos, now); err != nil {
			return doneMsg{err: err}
		}
	}
	return doneMsg{snap: screen.SnapshotOf(r), moved: true}
}

// goTo brings r to pos events taken with the cursor at now: by event when
// now is that event's time (or the start), by time when it was ticked.
func goTo(ctx context.Context, r *engine.Run, pos int, now int64) error {
	log := r.Log()
	if (pos == 0 && now <= r.Start()) || (pos > 0 && pos <= len(log) && log[pos-1].T == now) {
		return r.Seek(ctx, pos)
	}
	return r.SeekTime(ctx, now)
}

// follow takes the run where the presenter's lead is: the scenario, the
// knobs, then the position.
func (e opEnv) follow(ctx context.Context, l room.Lead) doneMsg {
	name, k, pos, t := followTarget(l)
	r := e.run
	var opened *engine.Run
	if r.Scenario().Name != name {
		d := e.open(ctx, name)
		if d.err != nil {
			return d
		}
		r, opened = d.run, d.run
	}
	if r.Knobs() != k {
		if _, err := r.SetKnobs(ctx, k); err != nil {
			return doneMsg{err: err, run: opened, snap: screen.SnapshotOf(r)}
		}
	}
	if err := goTo(ctx, r, pos, t); err != nil {
		return doneMsg{err: err, run: opened, snap: screen.SnapshotOf(r)}
	}
	return doneMsg{run: opened, snap: screen.SnapshotOf(r), moved: true}
}

// open starts the named scenario on the same server with the same knobs
// and, once it is ready, closes the run it replaces.
func (e opEnv) open(ctx context.Context, name string) doneMsg {
	k := e.shown.View.Knobs
	if e.run != nil {
		k = e.run.Knobs()
	}
	if e.replay {
		return e.openRecorded(ctx, name, k)
	}
	sc, err := scenario.Load(name)
	if err != nil {
		return doneMsg{err: err}
	}
	nr, err := engine.Open(ctx, engine.Config{
		DSN: e.s.dsn, Scenario: sc, Knobs: k, Host: e.s.host, Who: e.s.who,
		Provider: e.s.provider, ServerVersion: e.s.serverVersion,
	})
	if err != nil {
		return doneMsg{err: fmt.Errorf("could not open scenario %s: %w", name, err)}
	}
	if !e.s.adopt(nr) {
		// The TUI is closing; nobody will show this run.
		_ = nr.Close(context.WithoutCancel(ctx))
		return doneMsg{err: errors.New("leaserace is shutting down")}
	}
	d := doneMsg{run: nr, snap: screen.SnapshotOf(nr), moved: true}
	if e.run != nil && e.run != nr {
		if err := e.s.release(ctx, e.run); err != nil {
			d.info = err.Error()
		}
	}
	return d
}

// openRecorded shows the recordings of a scenario at its start with knobs
// k: the replay the TUI opened with when it is of that scenario (so a
// file's own recordings come back), else the shipped ones.
func (e opEnv) openRecorded(ctx context.Context, name string, k scenario.Knobs) doneMsg {
	var r *engine.Run
	info := ""
	if e.home != nil && e.home.Scenario().Name == name {
		r = e.home
		if r.Knobs() != k {
			if _, err := r.SetKnobs(ctx, k); err != nil {
				info = fmt.Sprintf("no recording with %s here, so %s", k, r.Knobs())
			}
		}
	} else {
		rp, err := engine.ShippedReplay(name, k)
		if err != nil {
			return doneMsg{err: fmt.Errorf("could not open scenario %s: %w", name, err)}
		}
		r = rp
	}
	if err := r.Seek(ctx, 0); err != nil {
		return doneMsg{err: err}
	}
	return e.switchTo(ctx, r, info)
}

// switchTo makes r the run on show, releasing the one it replaces unless
// that is the replay the TUI opened with.
func (e opEnv) switchTo(ctx context.Context, r *engine.Run, info string) doneMsg {
	if r != e.home && !e.s.adopt(r) {
		_ = r.Close(context.WithoutCancel(ctx))
		return doneMsg{err: errors.New("leaserace is shutting down")}
	}
	d := doneMsg{run: r, snap: screen.SnapshotOf(r), moved: true, info: info}
	if e.run != nil && e.run != r && e.run != e.home {
		if err := e.s.release(ctx, e.run); err != nil {
			d.info = err.Error()
		}
	}
	return d
}

// walkTo shows one entry of a recorded session: its scenario, its knobs
// and its time. What the recordings cannot show (a setting with no
// recording, a step past a recording's end) is said in info, and the walk
// goes on from the nearest state they can.
func (e opEnv) walkTo(ctx context.Context, en transcript.PresenterEntry) doneMsg {
	r := e.run
	var notes []string
	opened := false
	if en.Scenario != "" && en.Scenario != r.Scenario().Name {
		d := e.openRecorded(ctx, en.Scenario, en.Knobs)
		if d.err != nil {
			return doneMsg{snap: screen.SnapshotOf(r), info: fmt.Sprintf("no recording of scenario %s to show", en.Scenario)}
		}
		r, opened = d.run, true
		if d.info != "" {
			notes = append(notes, d.info)
		}
	}
	var change *engine.Change
	if r.Knobs() != en.Knobs {
		ch, err := r.SetKnobs(ctx, en.Knobs)
		if err != nil {
			notes = append(notes, fmt.Sprintf("no recording with %s here, so %s", en.Knobs, r.Knobs()))
		} else {
			change = &ch
		}
	}
	if err := goTo(ctx, r, en.Pos, en.T); err != nil {
		return doneMsg{err: err}
	}
	if r.Pos() < en.Pos {
		notes = append(notes, fmt.Sprintf("the recording ends at event %d", r.Pos()))
	}
	d := doneMsg{snap: screen.SnapshotOf(r), moved: true, change: change, info: strings.Join(notes, "; ")}
	if opened {
		d.run = r
	}
	return d
}
