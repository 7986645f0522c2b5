package screen

import "github.com/leaserace/leaserace/tui/text"

// Psql is how to open psql beside the run on screen: its server and
// its schema. It is taken whenever another run comes on screen, so it
// always names the schema shown.
type Psql struct {
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

// PasswordNote is said under the line when the server wants a password.
func (p Psql) PasswordNote() string {
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
func (m Screen) psqlHelp(w int) []string {
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
