package tui

import (
	"io"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/tui/text"
)

// psqlInfo is how to open psql beside the run on screen: its server and
// its schema. It is taken whenever another run comes on screen, so it
// always names the schema shown.
type psqlInfo struct {
	// Line is the command, "" when there is none.
	Line   string
	Schema string
	// NeedsPassword: the server was given a password, which the line
	// never carries; psql needs it in PGPASSWORD.
	NeedsPassword bool
	// Container: the server is a container leaserace started, whose
	// password is random and never shown.
	Container bool
	// None says why there is no line.
	None string
}

// psqlOf is how to reach r's schema; provider is what served its server.
func psqlOf(r *engine.Run, provider string) psqlInfo {
	switch {
	case r == nil:
		return psqlInfo{}
	case !r.Live():
		return psqlInfo{None: "replay: no database"}
	}
	line, pw, err := r.PsqlCommand()
	if err != nil {
		return psqlInfo{None: err.Error()}
	}
	return psqlInfo{Line: line, Schema: r.Schema(), NeedsPassword: pw, Container: pw && provider == "container"}
}

// PasswordNote is said under the line when the server wants a password.
func (p psqlInfo) PasswordNote() string {
	switch {
	case p.Container:
		return "This container's password is random and leaserace never shows it, so psql cannot log in from outside: for psql beside it, use a local cluster or a server of your own."
	case p.NeedsPassword:
		return "The server was given a password: set PGPASSWORD to it first (leaserace never shows it)."
	}
	return ""
}

// psqlHelp is the full help's block about psql beside the run. The
// command has lines of its own, unindented, so it copies as it is: a
// break between its settings is white space to psql too.
func (m screen) psqlHelp(w int) []string {
	p := m.Psql
	if p.Line == "" && p.None == "" {
		return nil
	}
	if p.Line == "" {
		return text.Wrap([]text.Span{text.Styled(&m.Styles.Label, "psql beside it:"), text.Plain(" none (" + p.None + ")")}, w, "", "  ")
	}
	out := text.Wrap([]text.Span{text.Styled(&m.Styles.Label, "psql beside it"), text.Plain(", on this run's schema " + p.Schema + ":")}, w, "", "  ")
	out = append(out, text.Wrap([]text.Span{text.Plain(p.Line)}, w, "", "")...)
	if note := p.PasswordNote(); note != "" {
		out = append(out, text.Wrap([]text.Span{text.Plain(note)}, w, "", "  ")...)
	}
	return out
}

// psqlNote writes the psql line of the run on screen to standard error.
// On the terminal the TUI draws on it is written while Bubble Tea has
// handed the terminal back, so it lands on the normal screen, where it is
// read after leaving, and not over the frame; elsewhere (a file, a pipe)
// it is written at once, for a pane beside to follow.
func (m Model) psqlNote() tea.Cmd {
	p := m.Psql
	if m.stderr == nil || p.Line == "" {
		return nil
	}
	msg := "leaserace: psql beside " + m.Snap.Scenario.Name + ", on schema " + p.Schema + ":\n" + p.Line + "\n"
	if note := p.PasswordNote(); note != "" {
		msg += "leaserace: " + note + "\n"
	}
	note := stderrNote{w: m.stderr, text: msg}
	if m.stderrTTY {
		return tea.Exec(note, nil)
	}
	return func() tea.Msg {
		_ = note.Run()
		return nil
	}
}

// stderrNote is a tea.ExecCommand that only writes text to w.
type stderrNote struct {
	w    io.Writer
	text string
}

func (n stderrNote) Run() error {
	_, err := io.WriteString(n.w, n.text)
	return err
}

func (stderrNote) SetStdin(io.Reader)  {}
func (stderrNote) SetStdout(io.Writer) {}
func (stderrNote) SetStderr(io.Writer) {}
