package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/engine/search"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/tui/export"
	"github.com/leaserace/leaserace/tui/screen"
	"github.com/leaserace/leaserace/tui/text"
)

// playEvery is the pace of space/play: one event per beat, slow enough to
// talk over.
const playEvery = 700 * time.Millisecond

// maxQueue bounds key presses that wait while a step runs.
const maxQueue = 16

// Config builds a Model around a run that is already open.
type Config struct {
	// Run is the run to show: a live run, or a replay of
	// recorded transcripts. The model owns it from now on: Close closes it,
	// and so does switching to another scenario.
	Run *engine.Run
	// DSN reaches the server Run uses; s opens other scenarios there.
	DSN string
	// Provider and ServerVersion label the runs s opens.
	Provider      string
	ServerVersion string
	// ExportDir is where e writes ("" = current directory).
	ExportDir string
	// Renderer draws the styles; nil means NO_COLOR-aware stdout.
	Renderer *lipgloss.Renderer
	// Now stamps export file names; nil means time.Now.
	Now func() time.Time
	// Offline is why no PostgreSQL could start, shown in the REPLAY banner
	// when Run is a replay standing in for a live run.
	Offline string
	// Host is the pool and resource a room's runs share; Who names the
	// attendee in pg_stat_activity. Scenarios opened with s use them.
	Host *engine.Host
	Who  string
	// Room, when set, is the workshop room this TUI is part of: as the
	// presenter, or as the attendee in Seat (Follow: following at first).
	Room      Room
	Seat      room.Seat
	Presenter bool
	Follow    bool
	// Play opens in play mode; NoAsk skips the questions.
	Play, NoAsk bool
	// Search searches every schedule for the goal panel's par; nil means
	// one of the model's own, on DSN (none for a Remote TUI, which would
	// start searches for every attendee: a room shares one).
	Search *search.Searcher
	// Remote marks a TUI served to someone else's terminal (over SSH):
	// nothing is written to this machine's disk (no export), no psql line
	// and no explore map, which would start runs of its own.
	Remote bool
	// Frames, when set, shares the sections of frames with every other
	// TUI drawing through it (a room's attendees): those at one snapshot,
	// width and colour profile draw them once. Nil draws every frame alone.
	Frames *screen.Shared
}

// Model is the Bubble Tea model of the TUI. It is a value; everything it
// started on the server lives in a shared session so any copy can Close.
// What a frame shows is its Screen; the fields below are what only the
// model needs to change it.
type Model struct {
	screen.Screen
	s *session

	run *engine.Run
	// busyOp is the op under way while Running is set; queue holds
	// those asked for meanwhile.
	busyOp  op
	queue   []op
	playGen int
	log     []transcript.PresenterEntry
	// reached is every goal reached in this session, first under each
	// setting, with the moves that reached it: an export in play mode
	// names those reached under other settings than its own.
	reached []export.Reached

	exportDir string
	now       func() time.Time
	// every schedules play's beats; tea.Tick outside tests.
	every func(time.Duration, func(time.Time) tea.Msg) tea.Cmd

	width, height int
	// startup starts PostgreSQL and opens the first run (Run only);
	// bootListen waits for the provider's next progress line meanwhile.
	startup, bootListen tea.Cmd
	// bootErr is why start-up failed; Run returns it after the program ends.
	bootErr error
	// noAsk skips the predict-then-reveal questions; startPlay opens in
	// play mode once a live run is on screen.
	noAsk, startPlay bool
	// held is the op the question on screen holds back until a choice is
	// made.
	held op
	// home is the replay the TUI opened with, in replay mode; s and the
	// session walk come back to it for its own scenario rather than to the
	// shipped recordings. walkWant is the session entry the last ] or [
	// asked for, ahead of Replay.WalkAt while walks wait in the queue.
	home     *engine.Run
	walkWant int
	// link is the room this TUI reports to, with Room; nil outside one.
	link *roomLink

	// stderr, when set, gets the psql line each time a live run comes on
	// screen; stderrTTY says it is a terminal (Run sets both).
	stderr    io.Writer
	stderrTTY bool

	// remote is set for a TUI served over SSH.
	remote   bool
	quitting bool
}

// NewModel wraps an open run. ctx bounds every engine call the model makes;
// cancelling it stops them. Call Close when done, also after tea.Program.Run.
func NewModel(ctx context.Context, cfg Config) (Model, error) {
	if cfg.Run == nil {
		return Model{}, errors.New("tui.NewModel needs an open run")
	}
	m := newModel(ctx, cfg.Renderer, cfg.ExportDir, cfg.Now)
	m.s.dsn, m.s.provider, m.s.serverVersion = cfg.DSN, cfg.Provider, cfg.ServerVersion
	if !m.s.adopt(cfg.Run) {
		return Model{}, errors.New("the session is already closed")
	}
	m.s.host, m.s.who, m.s.searcher = cfg.Host, cfg.Who, cfg.Search
	m.run, m.Snap, m.Phase = cfg.Run, screen.SnapshotOf(cfg.Run), screen.PhaseReady
	m.noAsk, m.remote = cfg.NoAsk, cfg.Remote
	m.Shared = cfg.Frames
	m.Play.On = cfg.Play && m.Snap.Live
	if m.Play.On {
		m.Status = playHint()
	}
	// A search started now reports once the program runs (Init).
	m, m.startup = m.searchGoals()
	if !cfg.Remote {
		m.Psql = psqlOf(cfg.Run, m.s.provider)
	}
	if cfg.Remote {
		k := *m.Keys
		k.Export.SetEnabled(false)
		k.Explore.SetEnabled(false)
		m.WithKeys(k)
	}
	if cfg.Room != nil {
		m = m.inRoom(cfg.Room, cfg.Seat, cfg.Presenter, cfg.Follow && !cfg.Presenter)
	}
	if !cfg.Run.Live() {
		m = m.asReplay(cfg.Offline)
	}
	return m, nil
}

// initRoom is a room member's first report: the presenter's lead, or the
// attendee's seat.
func (m Model) initRoom() tea.Cmd {
	if m.Room == nil {
		return nil
	}
	if m.Room.Presenter {
		return m.setLead(false)
	}
	return m.reportSeat()
}

func newModel(ctx context.Context, r *lipgloss.Renderer, exportDir string, now func() time.Time) Model {
	if now == nil {
		now = time.Now
	}
	return Model{Screen: screen.New(r), s: newSession(ctx), exportDir: exportDir, now: now, every: tea.Tick}
}

// Close stops the model's commands and closes every run and server it owns.
func (m Model) Close(ctx context.Context) error { return m.s.Close(ctx) }

// Run is the run on screen (nil while PostgreSQL is starting).
func (m Model) Run() *engine.Run { return m.run }

// Session is the presenter's log so far, as the export writes it.
func (m Model) Session() []transcript.PresenterEntry { return slices.Clone(m.log) }

// Busy reports whether an engine call is running.
func (m Model) Busy() bool { return m.Running != "" }

// Err is the engine error shown in place, if any.
func (m Model) Err() error { return m.Failure }

// Init starts the spinner while booting; a ready model has nothing to do.
func (m Model) Init() tea.Cmd {
	if m.Phase == screen.PhaseBoot {
		return tea.Batch(m.Boot.Spin.Tick, m.startup, m.bootListen)
	}
	return tea.Batch(m.initRoom(), m.startup)
}

// playTickMsg is one beat of play; gen drops beats of an earlier play.
type playTickMsg struct{ gen int }

// readyMsg ends the boot phase with the first run open.
type readyMsg struct {
	run  *engine.Run
	snap screen.Snapshot
	err  error
	// offline is set when no PostgreSQL could start and run is a replay
	// of the shipped recordings instead: it says why.
	offline string
}

// Update handles keys, window size and the outcomes of ops.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.SetHelpWidth(msg.Width)
		return m, nil
	case tea.KeyMsg:
		if msg.Type == tea.KeyRunes && !msg.Paste && len(msg.Runes) > 1 {
			// Keys typed faster than the terminal is read arrive as one
			// message ("?s"); each is a key of its own here.
			return m.splitKeys(msg)
		}
		return m.key(msg)
	case outcome:
		shown := m.run
		next, cmd := m.finish(msg)
		if nm, ok := next.(Model); ok && nm.run != shown {
			// Another run came on screen (the engine's *Run is its
			// identity): its psql line goes out too.
			return nm, tea.Batch(cmd, nm.psqlNote())
		}
		return next, cmd
	case chooseMsg:
		return m.enqueue(openScenario(msg))
	case playTickMsg:
		return m.beat(msg)
	case LeadMsg:
		return m.onLead(msg)
	case BoardMsg:
		if m.Room != nil {
			b := room.Board(msg)
			r := *m.Room
			r.Board = &b
			m.Room = &r
		}
		return m, nil
	case searchDoneMsg:
		return m.onSearchDone(msg), nil
	case roomErrMsg:
		return m.onRoomErr(msg), nil
	case RoomNoticeMsg:
		return m.onRoomNotice(msg), nil
	case readyMsg:
		if msg.err != nil {
			m.bootErr = msg.err
			m.quitting = true
			return m, tea.Quit
		}
		m.run, m.Snap, m.Phase = msg.run, msg.snap, screen.PhaseReady
		m.Psql = psqlOf(msg.run, m.s.provider)
		if msg.offline != "" {
			m = m.asReplay(msg.offline)
		}
		m.log = append(m.log, m.entry(transcript.PresenterScenario))
		if m.startPlay && m.Snap.Live {
			m.Play.On = true
			m.Status = playHint()
		}
		m, search := m.searchGoals()
		return m, tea.Batch(m.psqlNote(), m.initRoom(), search)
	}
	if m.Phase == screen.PhaseBoot {
		var cmd tea.Cmd
		m.Boot, cmd = updateBoot(m.Boot, m.bootListen, msg)
		return m, cmd
	}
	return m, nil
}

func (m Model) splitKeys(km tea.KeyMsg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	var cur tea.Model = m
	for _, r := range km.Runes {
		one := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: km.Alt}
		var cmd tea.Cmd
		cur, cmd = cur.(Model).key(one)
		cmds = append(cmds, cmd)
		if cur.(Model).quitting {
			break
		}
	}
	return cur, tea.Batch(cmds...)
}

func (m Model) key(km tea.KeyMsg) (tea.Model, tea.Cmd) {
	if key.Matches(km, m.Keys.Quit) && (km.String() == "ctrl+c" || !m.Chooser.Open) {
		m.quitting = true
		return m, tea.Quit
	}
	if m.Phase == screen.PhaseBoot {
		return m, nil
	}
	if m.Chooser.Open {
		var cmd tea.Cmd
		m.Chooser, cmd = updateChooser(m.Chooser, km)
		return m, cmd
	}
	if m.Explore.Open {
		return m.exploreKey(km)
	}
	if next, cmd, ok := m.answerKey(km); ok {
		return next, cmd
	}
	if m.Play.On {
		if next, cmd, ok := m.playKey(km); ok {
			return next, cmd
		}
	}
	switch {
	case key.Matches(km, m.Keys.PlayMode):
		return m.togglePlayMode()
	case key.Matches(km, m.Keys.Follow):
		return m.toggleFollow()
	case key.Matches(km, m.Keys.Board):
		if m.Room != nil {
			r := *m.Room
			r.ShowBoard = !r.ShowBoard
			m.Room = &r
		}
		return m, nil
	case key.Matches(km, m.Keys.Push):
		if m.Room != nil && m.Room.Presenter {
			m.Status = []text.Span{text.Plain(fmt.Sprintf("Pushed %s with %s, t=%d, to every attendee.", m.Snap.Scenario.Name, m.Snap.View.Knobs, m.Snap.View.Now))}
			return m, m.setLead(true)
		}
		return m, nil
	case key.Matches(km, m.Keys.Help):
		m.ToggleFullHelp()
		return m, nil
	case key.Matches(km, m.Keys.Scenario):
		m.Playing = false
		m.Chooser = m.Chooser.Show(m.Snap.Scenario.Name)
		return m, nil
	case key.Matches(km, m.Keys.Play):
		return m.togglePlay()
	case key.Matches(km, m.Keys.Explore):
		return m.openExplore()
	case key.Matches(km, m.Keys.Reconnect):
		// Reconnecting is the way out of an error: drop what was queued.
		m.queue = nil
		return m.enqueue(reconnect{})
	case key.Matches(km, m.Keys.WalkNext), key.Matches(km, m.Keys.WalkPrev):
		return m.walkKey(key.Matches(km, m.Keys.WalkNext))
	}
	for _, ko := range m.keyOps() {
		if key.Matches(km, ko.key) {
			return m.enqueue(ko.op)
		}
	}
	return m, nil
}

func (m Model) togglePlay() (tea.Model, tea.Cmd) {
	if m.Playing {
		m.Playing = false
		m.Status = []text.Span{text.Plain("⏸ paused")}
		return m, nil
	}
	if m.Snap.View.Pos >= len(m.Snap.Log) {
		m.Status = []text.Span{text.Plain("Nothing left to play: g goes back to the start.")}
		return m, nil
	}
	m.Playing = true
	m.playGen++
	m.Status = []text.Span{text.Plain("▶ playing, one event every " + playEvery.String() + "; space pauses")}
	next, cmd := m.enqueue(stepNext{})
	return next, tea.Batch(cmd, m.playTick())
}

func (m Model) playTick() tea.Cmd {
	gen := m.playGen
	return m.every(playEvery, func(time.Time) tea.Msg { return playTickMsg{gen: gen} })
}

func (m Model) beat(msg playTickMsg) (tea.Model, tea.Cmd) {
	if !m.Playing || msg.gen != m.playGen {
		return m, nil
	}
	if m.Snap.View.Pos >= len(m.Snap.Log) && len(m.queue) == 0 && !m.Busy() {
		m.Playing = false
		m.Status = []text.Span{text.Plain("■ played to the last event")}
		return m, nil
	}
	if m.Busy() || len(m.queue) > 0 {
		// A slow step: wait for it rather than pile up more.
		return m, m.playTick()
	}
	next, cmd := m.start(stepNext{})
	return next, tea.Batch(cmd, m.playTick())
}

// sameMenu reports whether two snapshots offer the same moves of the same
// scenario, in the same order.
func sameMenu(a, b screen.Snapshot) bool {
	if a.Scenario != b.Scenario || len(a.Options) != len(b.Options) {
		return false
	}
	for i := range a.Options {
		if !a.Options[i].Move.Same(b.Options[i].Move) || a.Options[i].Words != b.Options[i].Words {
			return false
		}
	}
	return true
}

func (m Model) entry(kind string) transcript.PresenterEntry {
	v := m.Snap.View
	return transcript.PresenterEntry{Kind: kind, Scenario: m.Snap.Scenario.Name, T: v.Now, Pos: v.Pos, Knobs: v.Knobs}
}
