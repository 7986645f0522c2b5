package screen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/x/ansi"
	"github.com/leaserace/leaserace/tui/keys"
	"github.com/leaserace/leaserace/tui/text"
)

// The smallest terminal the full screen fits in; below it the TUI says so.
const (
	MinWidth  = 60
	MinHeight = 16
)

// TooSmall is the minimum-size rule: a terminal of w×h cells narrower
// than MinWidth or lower than MinHeight is too small for the screen.
// Frame then shows only a line asking for a larger one, and the SSH room
// gates an attendee's window by the same rule (workshop passes it in).
func TooSmall(w, h int) bool { return w < MinWidth || h < MinHeight }

// layout is one way of arranging the screen, from roomy to tight. Frame
// tries them in order and takes the first that fits the height.
type layout struct {
	boxes   bool // panes, SQL and narration in bordered boxes
	gaps    bool // blank lines between sections
	legend  bool // the lanes' legend in full words, and the dangers spelled out
	cursor  bool // roomy lanes: a row per message and the "▲ t=…" line
	paneMax int  // most lines of pane content, 0 = all
	sqlMax  int  // most lines of SQL statement, 0 = all
	noteMax int  // most lines of narration, 0 = all
}

// layouts lists the arrangements, roomiest first.
func layouts() []layout {
	return []layout{
		{boxes: true, gaps: true, legend: true, cursor: true},
		{boxes: true, legend: true, cursor: true},
		{boxes: true, cursor: true},
		{legend: true, cursor: true},
		{cursor: true},
		{},
		{sqlMax: 2, noteMax: 2},
		{paneMax: 6, sqlMax: 2, noteMax: 2},
		{paneMax: 4, sqlMax: 1, noteMax: 1},
	}
}

// Frame renders the screen at w×h cells.
func (m Screen) Frame(w, h int) string {
	return strings.Join(m.Lines(w, h), "\n")
}

// Lines is Frame as its lines, for a painter that draws line by line and
// would only split the frame again.
func (m Screen) Lines(w, h int) []string {
	if w <= 0 || h <= 0 {
		return nil
	}
	var lines []string
	switch {
	case m.Phase == PhaseBoot:
		lines = m.Boot.view(m.Styles, w, h)
	case TooSmall(w, h):
		lines = m.tooSmall(w, h)
	case m.Snap.Scenario == nil:
		lines = nil
	default:
		f := m.Shared.shelfFor(m, w)
		sc := newSections(m, w, f)
		lines = sc.fit(h)
		if m.Replay != nil && (len(lines) > h || sc.lossy) {
			// A tight screen keeps the story whole and says REPLAY in
			// fewer words.
			cc := newSections(m, w, f)
			cc.compact = true
			if alt := cc.fit(h); len(alt) <= h {
				lines, sc = alt, cc
			}
		}
		if m.FullHelp() && (len(lines) > h || sc.lossy) {
			// The full help would squeeze the story: give it the middle
			// of the screen until ? hides it again.
			lines = sc.helpPage()
		}
	}
	if len(lines) > h {
		lines = lines[:h]
	}
	// A new slice: the lines may be the shared shelf's.
	out := make([]string, len(lines))
	for i, l := range lines {
		// Wrapping keeps lines inside w; this is the guard that a terminal
		// never wraps a line itself and garbles the frame.
		if len(l) > w && m.Shared.width(l) > w {
			l = ansi.Truncate(l, w, "")
		}
		out[i] = l
	}
	return out
}

func (m Screen) tooSmall(w, h int) []string {
	msg := fmt.Sprintf("leaserace needs a terminal of at least %d×%d; this one is %d×%d. Enlarge the window or use a smaller font. q quits.", MinWidth, MinHeight, w, h)
	return text.ClipSaying(text.Wrap([]text.Span{text.Plain(msg)}, w, "", ""), h, "enlarge the window")
}

// sections renders each part of the screen once per frame and variant,
// since Frame tries several arrangements before one fits. The parts that
// depend only on the snapshot, the width and the look (the lanes, panes,
// SQL and narration) come from the shelf when the screen shares them
// (Shared), and are drawn once for every screen that does.
type sections struct {
	m                    Screen
	w                    int
	header, status, help []string
	chooser              []string
	parts                map[partKey][]string
	shelf                *shelf
	// lossy is set when the last arrangement tried shortened a section.
	lossy bool
	// compact shortens the REPLAY banner to fit a small screen.
	compact bool
}

// fit lays the screen out in the roomiest arrangement that fits h lines,
// or the tightest one when none does.
func (c *sections) fit(h int) []string {
	var lines []string
	for _, l := range layouts() {
		lines = c.screen(l)
		if len(lines) <= h {
			return lines
		}
	}
	m := c.m
	if m.Play.On && !m.Chooser.Open && !m.Explore.Open && (m.Room == nil || !m.Room.ShowBoard) {
		return c.playCompact(h)
	}
	return lines
}

// playCompact is play mode on a screen too small for everything: the
// header, the lanes, the verdict and the state in one line, the question,
// the goals and the key hint get their lines first, and the menu scrolls
// in what is left, its cursor always on screen. What is cut says which
// key shows it.
func (c *sections) playCompact(h int) []string {
	m, w := c.m, c.w
	c.lossy = true
	top := append(slices.Clone(c.header), m.timeline(w, false, false)...)
	mid := m.stateLine(w)
	mid = append(mid, m.askLines(w)...)
	goals := m.goalLinesShort(w)
	hidden := text.Wrap([]text.Span{text.Styled(&m.Styles.Faint, "Panes, SQL and narration need a taller screen: p leaves play mode to show them.")}, w, "", "  ")
	status := c.status
	room := func() int { return h - len(top) - len(mid) - len(goals) - len(status) - len(c.help) - len(hidden) }
	// The menu needs room for a few entries: the note on what is hidden
	// goes first, then the status (the key hint stays).
	if room() < 6 {
		hidden = nil
	}
	if room() < 6 {
		status = nil
	}
	menu := m.playMenu(w, max(room(), 3))
	out := append(top, mid...)
	out = append(out, menu...)
	out = append(out, goals...)
	out = append(out, hidden...)
	out = append(out, status...)
	return append(out, c.help...)
}

func newSections(m Screen, w int, f *shelf) *sections {
	return &sections{m: m, w: w, parts: map[partKey][]string{}, shelf: f}
}

// part names one section in one variant of the layout.
type part int

const (
	partTimeline part = iota
	partPanes
	partSQL
	partNarration
	partHeader
)

// partKey is a section and the layout's choices it depends on.
type partKey struct {
	part part
	a, b int
	s    string
}

// memo returns the section k, drawing it with f the first time this
// frame, or any frame on the same shelf, asks for it. Sections on a shelf
// are shared between goroutines: nobody changes a slice memo returns.
func (c *sections) memo(k partKey, f func() []string) []string {
	if v, ok := c.parts[k]; ok {
		return v
	}
	if c.shelf != nil {
		if v, ok := c.shelf.get(k); ok {
			c.parts[k] = v
			return v
		}
	}
	v := f()
	c.parts[k] = v
	if c.shelf != nil {
		c.shelf.put(k, v)
	}
	return v
}

// helpPage is the header, the timeline and the full key help.
func (c *sections) helpPage() []string {
	m, w := c.m, c.w
	out := append(m.banner(w, c.compact), m.header(w)...)
	out = append(out, m.timeline(w, false, true)...)
	out = append(out, "")
	out = append(out, m.helpLines(w)...)
	out = append(out, "")
	return append(out, m.statusLines(w)...)
}

// screen lays out every section at the frame's width in arrangement l.
func (c *sections) screen(l layout) []string {
	m, w := c.m, c.w
	c.lossy = l.paneMax > 0 || l.sqlMax > 0 || l.noteMax > 0
	if c.header == nil {
		// The REPLAY banner leads the header: it is never squeezed out.
		c.header = append(m.banner(w, c.compact), c.headerLines()...)
		c.status = m.statusLines(w)
		if !m.Cast {
			c.help = m.helpLines(w)
		}
	}
	var out []string
	gap := func() {
		if l.gaps {
			out = append(out, "")
		}
	}
	out = append(out, c.header...)
	gap()
	out = append(out, c.memo(partKey{part: partTimeline, a: btoi(l.legend), b: btoi(l.cursor)}, func() []string { return m.timeline(w, l.legend, l.cursor) })...)
	gap()
	if m.Chooser.Open {
		if c.chooser == nil {
			c.chooser = m.Chooser.view(m.Styles, w)
		}
		out = append(out, c.chooser...)
	} else if m.Explore.Open {
		out = append(out, m.Explore.Lines(m.Styles, w, m.Snap.View.Knobs, m.Snap.Scenario.Times, m.Snap.View.Now)...)
	} else if m.Room != nil && m.Room.ShowBoard {
		out = append(out, m.boardLines(w)...)
	} else {
		b := btoi(l.boxes)
		out = append(out, c.memo(partKey{part: partPanes, a: b, b: l.paneMax}, func() []string { return m.panes(w, l) })...)
		gap()
		if m.Ask != nil {
			out = append(out, m.askLines(w)...)
			gap()
		}
		if m.Play.On {
			out = append(out, m.playLines(w)...)
			// A layout that shortens sections says where an impossible
			// goal's cut is, rather than spell it out.
			out = append(out, m.goalPanel(w, false, !c.lossy)...)
			gap()
		}
		out = append(out, c.memo(partKey{part: partSQL, a: b, b: l.sqlMax}, func() []string { return m.sqlSection(w, l) })...)
		out = append(out, c.memo(partKey{part: partNarration, a: b, b: l.noteMax}, func() []string { return m.narration(w, l) })...)
	}
	gap()
	out = append(out, c.status...)
	out = append(out, c.help...)
	return out
}

// headerLines is the header; on a shelf, kept by what it shows besides
// the snapshot: playing or not, the command under way, and the room line
// of an attendee (the presenter's counts the board: drawn every time).
func (c *sections) headerLines() []string {
	m := c.m
	room := 0
	switch r := m.Room; {
	case r == nil:
	case r.Presenter:
		return m.header(c.w)
	case r.Following:
		room = 1
	default:
		room = 2
	}
	return c.memo(partKey{partHeader, btoi(m.Playing), room, m.Running}, func() []string { return m.header(c.w) })
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// header: scenario, t, event count, busy/play marks, then the knobs in words.
func (m Screen) header(w int) []string {
	st, s := m.Styles, m.Snap
	v := s.View
	right := []text.Span{text.Styled(&st.Cursor, fmt.Sprintf("t=%d", v.Now)), text.Plain(fmt.Sprintf(" · event %d/%d", v.Pos, len(s.Log)))}
	if m.Playing {
		right = append(right, text.Plain(" "), text.Styled(&st.Good, "▶ playing"))
	}
	if m.Running != "" {
		right = append(right, text.Plain(" "), text.Styled(&st.Busy, "● running "+m.Running+"…"))
	}
	left := []text.Span{text.Styled(&st.Title, "leaserace"), text.Plain(" · "), text.Styled(&st.Title, s.Scenario.Name)}
	withTitle := append(left[:len(left):len(left)], text.Styled(&st.Faint, " — "+s.Scenario.Title))
	rw := text.SpansWidth(right)
	var lines []string
	switch {
	case s.Scenario.Title != "" && text.SpansWidth(withTitle)+rw+2 <= w:
		lines = append(lines, text.Spread(withTitle, right, w))
	case text.SpansWidth(left)+rw+2 <= w:
		lines = append(lines, text.Spread(left, right, w))
	default:
		lines = append(lines, text.Wrap(left, w, "", "")...)
		lines = append(lines, text.Wrap(right, w, "", "")...)
	}
	k := v.Knobs
	knobs := []text.Span{
		text.Styled(&st.Label, "renewal:"), text.Plain(" "), text.Styled(&st.Value, k.Renewal.Describe()),
		text.Plain(" · "), text.Styled(&st.Label, "fencing:"), text.Plain(" "), text.Styled(&st.Value, k.Fencing.Describe()),
	}
	if r := m.roomLine(); r != nil {
		knobs = append(append(knobs, text.Plain(" · ")), r...)
	}
	return append(lines, text.Wrap(knobs, w, "", "")...)
}

// FailedPart is the part of leaserace the engine blames a Failure on,
// which picks the words the status line starts with.
type FailedPart int

const (
	// FailedStep is a step that failed for a reason of its own.
	FailedStep FailedPart = iota
	// FailedBug is a panic inside leaserace.
	FailedBug
	// FailedResource is the resource no longer answering.
	FailedResource
	// FailedServer is PostgreSQL gone or out of reach.
	FailedServer
)

// statusLines is the error, if the engine failed, or the last status.
func (m Screen) statusLines(w int) []string {
	if m.Failure != nil && m.Replay != nil {
		// A replay has no server to lose: only the error itself.
		p := []text.Span{text.Styled(&m.Styles.Error, "⚠ "), text.Plain(m.Failure.Error())}
		return m.clipStatus(text.Wrap(p, w, "", "  "), 3)
	}
	if m.Failure != nil {
		what := "The last step failed"
		// The engine knows which part failed (FailedPart); the error's
		// text does not: a dead resource shares it with a dead server.
		switch m.FailedPart {
		case FailedBug:
			what = "leaserace hit a bug (please report it)"
		case FailedResource:
			what = "The resource stopped answering"
		case FailedServer:
			what = "PostgreSQL went away"
		}
		// The way out first: a long error must not push it off screen.
		p := []text.Span{
			text.Styled(&m.Styles.Error, "⚠ "+what+":"),
			text.Plain(fmt.Sprintf(" R reconnects and replays to t=%d; the screen keeps the last good state.", m.Snap.View.Now)),
			text.Styled(&m.Styles.Faint, " ("+m.Failure.Error()+")"),
		}
		return m.clipStatus(text.Wrap(p, w, "", "  "), 3)
	}
	status := m.Status
	if t := m.tallyWords(); t != "" && m.Snap.View.Pos >= len(m.Snap.Log) {
		// At the end of the run: how the predictions went.
		status = append(append([]text.Span{text.Styled(&m.Styles.Title, t)}, text.Plain(" ")), status...)
	}
	if len(status) == 0 {
		return nil
	}
	return m.clipStatus(text.Wrap(status, w, "", "  "), 2)
}

// clipStatus keeps the status to n lines, saying that ? shows the rest;
// with the full help on (?), it shows every line.
func (m Screen) clipStatus(lines []string, n int) []string {
	if m.FullHelp() {
		return lines
	}
	return text.ClipSaying(lines, n, "? shows all of it")
}

func (m Screen) helpLines(w int) []string {
	var km help.KeyMap = m.Keys
	if m.Chooser.Open {
		km = m.Chooser.Keys
	} else if m.Explore.Open {
		km = keys.DefaultExplorer()
	} else if m.Play.On {
		km = keys.Play{Map: *m.Keys}
	}
	h := m.help()
	// bubbles/help adds an item that overflows when even its ellipsis does
	// not fit, so hand it only what fits and let it draw that.
	h.Width = 0
	if h.ShowAll {
		lines := strings.Split(h.FullHelpView(fitColumns(km.FullHelp(), w, text.Width(h.FullSeparator))), "\n")
		if !m.Chooser.Open && !m.Explore.Open {
			if p := m.psqlHelp(w); len(p) > 0 {
				lines = append(append(lines, ""), p...)
			}
		}
		return lines
	}
	bs := fitBindings(km.ShortHelp(), w, text.Width(h.ShortSeparator))
	if m.Shared != nil && m.Styles != nil && m.Styles.Look != "" {
		// Every attendee's key help is one of a few lines: draw each once.
		return []string{m.Shared.shortHelp(m.Styles.Look, h.ShortSeparator, bs, func() string { return h.ShortHelpView(bs) })}
	}
	return []string{h.ShortHelpView(bs)}
}

// fitBindings is the longest prefix of bs whose short help fits in w.
func fitBindings(bs []key.Binding, w, sep int) []key.Binding {
	return fitPrefix(bs, w, sep, func(b key.Binding) int {
		return text.Width(b.Help().Key) + 1 + text.Width(b.Help().Desc)
	})
}

// fitColumns is the longest prefix of groups whose columns fit in w.
func fitColumns(groups [][]key.Binding, w, sep int) [][]key.Binding {
	return fitPrefix(groups, w, sep, func(g []key.Binding) int {
		kw, dw := 0, 0
		for _, b := range g {
			kw = max(kw, text.Width(b.Help().Key))
			dw = max(dw, text.Width(b.Help().Desc))
		}
		return kw + 1 + dw
	})
}

// fitPrefix is the longest prefix of items that fits in w, each as wide
// as width says, with sep between them.
func fitPrefix[T any](items []T, w, sep int, width func(T) int) []T {
	used := 0
	for i, it := range items {
		n := width(it)
		if i > 0 {
			n += sep
		}
		if used+n > w {
			return items[:i]
		}
		used += n
	}
	return items
}
