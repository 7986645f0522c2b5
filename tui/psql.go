package tui

import (
	"io"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/tui/screen"
)

// psqlOf is how to reach r's schema; provider is what served its server.
func psqlOf(r *engine.Run, provider string) screen.Psql {
	switch {
	case r == nil:
		return screen.Psql{}
	case !r.Live():
		return screen.Psql{None: "replay: no database"}
	}
	line, pw, err := r.PsqlCommand()
	if err != nil {
		return screen.Psql{None: err.Error()}
	}
	return screen.Psql{Line: line, Schema: r.Schema(), NeedsPassword: pw, Container: pw && provider == "container"}
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
