// Package keys holds the TUI's key bindings and the help they print.
package keys

import "github.com/charmbracelet/bubbles/key"

// Map is every binding the TUI answers to. It satisfies help.KeyMap.
type Map struct {
	Next      key.Binding
	Prev      key.Binding
	TickNext  key.Binding
	TickPrev  key.Binding
	Start     key.Binding
	End       key.Binding
	Play      key.Binding
	Renewal   key.Binding
	Fencing   key.Binding
	Scenario  key.Binding
	Export    key.Binding
	Explore   key.Binding
	Reconnect key.Binding
	Help      key.Binding
	Quit      key.Binding
	// PlayMode toggles play mode; MenuUp, MenuDown and Choose work its
	// menu; Skip passes a question by.
	PlayMode key.Binding
	MenuUp   key.Binding
	MenuDown key.Binding
	Choose   key.Binding
	Skip     key.Binding
	// Follow, Board and Push work in a workshop room: an attendee follows
	// the presenter or goes alone; the presenter shows the room board and
	// pushes the scenario and knobs to everyone. Off outside a room.
	Follow key.Binding
	Board  key.Binding
	Push   key.Binding
	// WalkNext and WalkPrev walk a replayed file's recorded session; they
	// are disabled, and out of the help, unless there is one.
	WalkNext key.Binding
	WalkPrev key.Binding
}

// Default returns the bindings issue 3 asks for.
func Default() Map {
	return Map{
		Next:      key.NewBinding(key.WithKeys("right", "l"), key.WithHelp("→/l", "next event")),
		Prev:      key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/h", "previous event")),
		TickNext:  key.NewBinding(key.WithKeys("."), key.WithHelp(".", "one tick later")),
		TickPrev:  key.NewBinding(key.WithKeys(","), key.WithHelp(",", "one tick earlier")),
		Start:     key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "start of window")),
		End:       key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "end of window")),
		Play:      key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "play/pause")),
		Renewal:   key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "renewal blind⇄compare")),
		Fencing:   key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "fencing off→strict→monotonic")),
		Scenario:  key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "choose scenario")),
		Export:    key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "export")),
		Explore:   key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "explore map")),
		Reconnect: key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "reconnect")),
		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "fewer keys")),
		Quit:      key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		PlayMode:  key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "play mode: choose each move")),
		MenuUp:    key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "move above")),
		MenuDown:  key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "move below")),
		Choose:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter/1-9/0", "play the move")),
		Skip:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "skip the question")),
		Follow:    key.NewBinding(key.WithKeys("F"), key.WithHelp("F", "follow the presenter / go alone"), key.WithDisabled()),
		Board:     key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "room board"), key.WithDisabled()),
		Push:      key.NewBinding(key.WithKeys("P"), key.WithHelp("P", "push to every attendee"), key.WithDisabled()),
		WalkNext:  key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "session: next"), key.WithDisabled()),
		WalkPrev:  key.NewBinding(key.WithKeys("["), key.WithHelp("[", "session: back"), key.WithDisabled()),
	}
}

// Replay is the map for a recorded run: no server to reconnect to, and
// the session keys when the file holds a presenter's session.
func (m Map) Replay(session bool) Map {
	m.Reconnect.SetEnabled(false)
	m.PlayMode.SetEnabled(false)
	m.WalkNext.SetEnabled(session)
	m.WalkPrev.SetEnabled(session)
	return m
}

// InRoom is the map in a workshop room: the presenter's board and push,
// or an attendee's follow key.
func (m Map) InRoom(presenter bool) Map {
	m.Follow.SetEnabled(!presenter)
	m.Board.SetEnabled(presenter)
	m.Push.SetEnabled(presenter)
	return m
}

// enabled drops the bindings that are switched off, so help neither shows
// them nor counts their width.
func enabled(bs ...key.Binding) []key.Binding {
	out := make([]key.Binding, 0, len(bs))
	for _, b := range bs {
		if b.Enabled() {
			out = append(out, b)
		}
	}
	return out
}

// ShortHelp is the one-line help: the keys a presenter needs first, in
// words short enough that ? and q still fit on 80 columns.
func (m Map) ShortHelp() []key.Binding {
	return enabled(
		brief(m.Next, "next"), brief(m.Prev, "back"), brief(m.Renewal, "renewal"),
		brief(m.Fencing, "fencing"), brief(m.Play, "play"), brief(m.Help, "all keys"), m.Quit,
		brief(m.Follow, "follow"), brief(m.Board, "board"),
		brief(m.Scenario, "scenario"), brief(m.Export, "export"), brief(m.WalkNext, "session"),
	)
}

// Play is the map of play mode: its help leads with choosing a move, so
// the screen says how from the first frame.
type Play struct{ Map }

// ShortHelp is play mode's one-line help.
func (m Play) ShortHelp() []key.Binding {
	return enabled(
		brief(m.MenuDown, "choose"), brief(m.Choose, "play"), brief(m.Prev, "back"),
		brief(m.PlayMode, "leave play"), brief(m.Help, "all keys"), m.Quit,
	)
}

// FullHelp is play mode's help after ?: the menu's keys first.
func (m Play) FullHelp() [][]key.Binding {
	return append([][]key.Binding{enabled(m.MenuUp, m.MenuDown, m.Choose, m.PlayMode)}, m.Map.FullHelp()...)
}

// brief is b with a shorter description; b itself is unchanged.
func brief(b key.Binding, desc string) key.Binding {
	b.SetHelp(b.Help().Key, desc)
	return b
}

// FullHelp is the help shown after ?, in columns.
func (m Map) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		enabled(m.Next, m.Prev, m.TickNext, m.TickPrev, m.Start, m.End),
		enabled(m.Play, m.PlayMode, m.Renewal, m.Fencing, m.Scenario, m.Explore),
		enabled(m.Export, m.Reconnect, m.Follow, m.Board, m.Push, m.WalkNext, m.WalkPrev, m.Help, m.Quit),
	}
}

// Chooser is the bindings of the scenario list.
type Chooser struct {
	Up     key.Binding
	Down   key.Binding
	Choose key.Binding
	Cancel key.Binding
}

// DefaultChooser returns the scenario list's bindings.
func DefaultChooser() Chooser {
	return Chooser{
		Up:     key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:   key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Choose: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
		Cancel: key.NewBinding(key.WithKeys("esc", "s"), key.WithHelp("esc", "cancel")),
	}
}

// ShortHelp lists the chooser's keys.
func (c Chooser) ShortHelp() []key.Binding { return []key.Binding{c.Up, c.Down, c.Choose, c.Cancel} }

// FullHelp lists the chooser's keys in one column.
func (c Chooser) FullHelp() [][]key.Binding { return [][]key.Binding{c.ShortHelp()} }

// Explorer is the bindings of the explore map.
type Explorer struct {
	Left  key.Binding
	Right key.Binding
	Up    key.Binding
	Down  key.Binding
	Jump  key.Binding
	Close key.Binding
}

// DefaultExplorer returns the explore map's bindings.
func DefaultExplorer() Explorer {
	return Explorer{
		Left:  key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/h", "earlier")),
		Right: key.NewBinding(key.WithKeys("right", "l"), key.WithHelp("→/l", "later")),
		Up:    key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "setting above")),
		Down:  key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "setting below")),
		Jump:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run this cell")),
		Close: key.NewBinding(key.WithKeys("esc", "x"), key.WithHelp("esc/x", "close")),
	}
}

// ShortHelp lists the map's keys, the four arrows as one.
func (e Explorer) ShortHelp() []key.Binding {
	move := e.Left
	move.SetHelp("←→↑↓", "move")
	return []key.Binding{move, e.Jump, e.Close}
}

// FullHelp lists the map's keys in two columns.
func (e Explorer) FullHelp() [][]key.Binding {
	return [][]key.Binding{{e.Left, e.Right, e.Up, e.Down}, {e.Jump, e.Close}}
}
