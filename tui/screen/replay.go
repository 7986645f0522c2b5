package screen

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/tui/text"
	"github.com/muesli/termenv"
)

// Replay is what the REPLAY banner and the session walk show. It is
// copied on every change, never changed in place, since models are values.
type Replay struct {
	// Offline is why no PostgreSQL could start, when the TUI fell back to
	// the shipped recordings ("" for leaserace replay FILE).
	Offline string
	// Walk is the presenter's session recorded in the file; WalkAt is the
	// entry on show, 1-based, 0 before the walk starts.
	Walk   []transcript.PresenterEntry
	WalkAt int
}

// WalkStatus says which session entry is on show and what it was.
func (m Screen) WalkStatus(info string) []text.Span {
	ri := m.Replay
	if ri == nil || ri.WalkAt < 1 || ri.WalkAt > len(ri.Walk) {
		return nil
	}
	e := ri.Walk[ri.WalkAt-1]
	p := []text.Span{
		text.Styled(&m.Styles.Title, fmt.Sprintf("session %d/%d", ri.WalkAt, len(ri.Walk))),
		text.Plain(": " + describeEntry(e)),
	}
	if info != "" {
		p = append(p, text.Styled(&m.Styles.Warn, " ("+info+")"))
	}
	return append(p, text.Styled(&m.Styles.Faint, " · ] next, [ back"))
}

// describeEntry puts one session entry in words.
func describeEntry(e transcript.PresenterEntry) string {
	switch e.Kind {
	case transcript.PresenterStep:
		if e.Step != nil {
			return fmt.Sprintf("step to t=%d, %s", e.T, stepLabel(*e.Step))
		}
		return fmt.Sprintf("step to t=%d", e.T)
	case transcript.PresenterBack:
		return fmt.Sprintf("back to t=%d", e.T)
	case transcript.PresenterSeek:
		return fmt.Sprintf("jump to t=%d", e.T)
	case transcript.PresenterToggle:
		s := fmt.Sprintf("knobs to %s at t=%d", e.Knobs, e.T)
		if len(e.Change) > 0 {
			s += ": " + strings.Join(e.Change, " · ")
		}
		return s
	case transcript.PresenterScenario:
		return fmt.Sprintf("open %s with %s", e.Scenario, e.Knobs)
	}
	return fmt.Sprintf("%s at t=%d", e.Kind, e.T)
}

// NoColor reports whether the screen draws without colour.
func (m Screen) NoColor() bool {
	return m.Styles.Renderer != nil && m.Styles.Renderer.ColorProfile() == termenv.Ascii
}

// banner is the REPLAY banner: what recording is on show, where and when
// it was recorded, why there is no database (offline) and the session
// keys. It is empty for a live run. compact is the short form for a small
// screen: the file, the day and the provider, and that there is no
// PostgreSQL (standard error gives the reason on the way out).
func (m Screen) banner(w int, compact bool) []string {
	ri, rec := m.Replay, m.Snap.Rec
	if ri == nil || rec == nil {
		return nil
	}
	st := m.Styles
	tag := []text.Span{text.Styled(&st.Alarm, " REPLAY "), text.Plain(" ")}
	if compact {
		p := append(tag, text.Plain(strings.TrimPrefix(recordingOrigin(*rec), shippedPrefix)+" · "+recordedWhereWhen(rec.Transcript.Meta, true)))
		if ri.Offline != "" {
			p = append(p, text.Plain(" · "), text.Styled(&st.Warn, "No PostgreSQL here:"), text.Plain(" r/f switch recorded runs"))
		}
		return text.Wrap(p, w, "", "  ")
	}
	p := append(tag, text.Plain(recordingOrigin(*rec)), text.Plain(" · "+recordedWhereWhen(rec.Transcript.Meta, false)+" · no database in use"))
	lines := text.Wrap(p, w, "", "  ")
	if ri.Offline != "" {
		msg := []text.Span{
			text.Styled(&st.Warn, "No PostgreSQL here"), text.Plain(" (" + ri.Offline + "). "),
			text.Plain("Showing recorded runs: press r/f to switch between recorded runs."),
		}
		lines = append(lines, text.Wrap(msg, w, "", "  ")...)
	}
	if n := len(ri.Walk); n > 0 && ri.WalkAt == 0 {
		msg := []text.Span{text.Plain(fmt.Sprintf("This file holds the presenter's session, %d actions: ", n)), text.Styled(&st.Title, "]"), text.Plain(" walks it, "), text.Styled(&st.Title, "["), text.Plain(" back.")}
		lines = append(lines, text.Wrap(msg, w, "", "  ")...)
	}
	return lines
}

const shippedPrefix = "shipped recording "

// recordingOrigin names the file on show: its base name, or the shipped
// transcript's name.
func recordingOrigin(rec transcript.Recording) string {
	t := rec.Transcript
	name := transcript.Name(t.Scenario, t.Knobs) + ".json"
	if rec.Origin == transcript.OriginShipped || rec.Origin == "" {
		return shippedPrefix + name
	}
	return filepath.Base(rec.Origin)
}

// recordedWhereWhen is "recorded 2026-12-02 17:17 UTC on local, PostgreSQL
// 15.18", with what Meta lacks left out; short is "recorded 2026-12-02 on
// local".
func recordedWhereWhen(meta *transcript.Meta, short bool) string {
	if meta == nil {
		return "recorded where and when unknown"
	}
	s := "recorded"
	if meta.RecordedAt != "" {
		when := meta.RecordedAt
		if t, err := time.Parse(time.RFC3339, meta.RecordedAt); err == nil {
			when = t.UTC().Format("2006-01-02 15:04 UTC")
			if short {
				when = t.UTC().Format("2006-01-02")
			}
		}
		s += " " + when
	}
	if meta.Provider != "" {
		s += " on " + meta.Provider
	}
	if meta.ServerVersion != "" && !short {
		v, _, _ := strings.Cut(meta.ServerVersion, " (")
		if meta.Provider != "" {
			s += ","
		} else {
			s += " on"
		}
		s += " PostgreSQL " + v
	}
	return s
}
