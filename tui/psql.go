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
	// line is the command, "" when there is none.
	line   string
	schema string
	// needsPassword: the server was given a password, which the line
	// never carries; psql needs it in PGPASSWORD.
	needsPassword bool
	// container: the server is a container leaserace started, whose
	// password is random and never shown.
	container bool
	// none says why there is no line.
	none string
}

// psqlOf is how to reach r's schema; provider is what served its server.
func psqlOf(r *engine.Run, provider string) psqlInfo {
	switch {
	case r == nil:
		return psqlInfo{}
	case !r.Live():
		return psqlInfo{none: "replay: no database"}
	}
	line, pw, err := r.PsqlCommand()
	if err != nil {
		return psqlInfo{none: err.Error()}
	}
	return psqlInfo{line: line, schema: r.Schema(), needsPassword: pw, container: pw && provider == "container"}
}

// passwordNote is said under the line when the server wants a password.
func (p psqlInfo) passwordNote() string {
	switch {
	case p.container:
		return "This container's password is random and leaserace never shows it, so psql cannot log in from outside: for psql beside it, use a local cluster or a server of your own."
	case p.needsPassword:
		return "The server was given a password: set PGPASSWORD to it first (leaserace never shows it)."
	}
	return ""
}

// psqlHelp is the full help's block about psql beside the run. The
// command has lines of its own, unindented, so it copies as it is: a
// break between its settings is white space to psql too.
func (m screen) psqlHelp(w int) []string {
	p := m.psql
	if p.line == "" && p.none == "" {
		return nil
	}
	if p.line == "" {
		return text.Wrap([]text.Span{text.Styled(&m.st.Label, "psql beside it:"), text.Plain(" none (" + p.none + ")")}, w, "", "  ")
	}
	out := text.Wrap([]text.Span{text.Styled(&m.st.Label, "psql beside it"), text.Plain(", on this run's schema " + p.schema + ":")}, w, "", "  ")
	out = append(out, text.Wrap([]text.Span{text.Plain(p.line)}, w, "", "")...)
	if note := p.passwordNote(); note != "" {
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
	p := m.psql
	if m.stderr == nil || p.line == "" {
		return nil
	}
	msg := "leaserace: psql beside " + m.snap.sc.Name + ", on schema " + p.schema + ":\n" + p.line + "\n"
	if note := p.passwordNote(); note != "" {
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
