package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/tui/screen"
	"github.com/muesli/termenv"
)

// The asciicast is drawn at the size the TUI looks best at, one frame per
// step at a pace a viewer can read; asciinema play -s or -i changes it.
const (
	castWidth     = 120
	castHeight    = 40
	castStepEvery = 2 * time.Second
)

// CastOptions shape an asciicast recording of a transcript.
type CastOptions struct {
	// Width and Height are the terminal size in cells (0 = 120×40).
	Width, Height int
	// StepEvery is the time between frames (0 = 2s).
	StepEvery time.Duration
	// NoColor draws the frames without colour or attributes.
	NoColor bool
	// Title is the recording's title ("" = "leaserace <scenario> (<knobs>)").
	Title string
}

// castHeader is the first line of an asciicast v2 file.
type castHeader struct {
	Version   int               `json:"version"`
	Width     int               `json:"width"`
	Height    int               `json:"height"`
	Timestamp int64             `json:"timestamp,omitempty"`
	Title     string            `json:"title,omitempty"`
	Env       map[string]string `json:"env"`
}

// WriteCast writes the transcript as an asciicast v2 recording: the TUI's
// screen before the first step and after each step, each a full redraw,
// with a marker per step ("t=1075 A heartbeat.deliver") so a player can
// jump from event to event. It needs no database: the frames are drawn
// from the recorded steps.
func WriteCast(w io.Writer, t transcript.Transcript, o CastOptions) error {
	if o.Width <= 0 {
		o.Width = castWidth
	}
	if o.Height <= 0 {
		o.Height = castHeight
	}
	if o.StepEvery <= 0 {
		o.StepEvery = castStepEvery
	}
	if o.Title == "" {
		o.Title = fmt.Sprintf("leaserace %s (%s)", t.Scenario, t.Knobs)
	}
	rp, err := engine.NewReplay(engine.Recording{Transcript: t, Origin: "cast"})
	if err != nil {
		return fmt.Errorf("cannot draw the transcript: %w", err)
	}
	r := lipgloss.NewRenderer(io.Discard)
	// A fixed profile and background: the file plays the same anywhere,
	// and 256 colours is what nearly every terminal player shows.
	r.SetColorProfile(termenv.ANSI256)
	if o.NoColor {
		r.SetColorProfile(termenv.Ascii)
	}
	r.SetHasDarkBackground(true)
	m := screen.New(r)
	m.Snap, m.Phase, m.Cast = screen.SnapshotOf(rp), screen.PhaseReady, true

	h := castHeader{Version: 2, Width: o.Width, Height: o.Height, Title: o.Title, Env: map[string]string{"TERM": "xterm-256color"}}
	if meta := t.Meta; meta != nil {
		if at, err := time.Parse(time.RFC3339, meta.RecordedAt); err == nil {
			h.Timestamp = at.Unix()
		}
	}
	bw := bufio.NewWriter(w)
	if err := castLine(bw, h); err != nil {
		return err
	}
	// Hide the cursor while frames play; show it again at the end.
	if err := castEvent(bw, 0, "o", "\x1b[?25l"+redraw(m.Frame(o.Width, o.Height))); err != nil {
		return err
	}
	ctx := context.Background()
	at := time.Duration(0)
	for range t.Steps {
		st, err := rp.Next(ctx)
		if err != nil {
			return fmt.Errorf("cannot draw the transcript: %w", err)
		}
		m.Snap = screen.SnapshotOf(rp)
		at += o.StepEvery
		if err := castEvent(bw, at, "m", castMarker(st)); err != nil {
			return err
		}
		if err := castEvent(bw, at, "o", redraw(m.Frame(o.Width, o.Height))); err != nil {
			return err
		}
	}
	// The last frame stays up for one more beat before the player ends.
	if err := castEvent(bw, at+o.StepEvery, "o", "\x1b[?25h"); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("cannot write the asciicast: %w", err)
	}
	return nil
}

// castMarker names a step: "t=1075 A heartbeat.deliver".
func castMarker(st transcript.Step) string {
	return fmt.Sprintf("t=%d %s %s", st.T, st.Actor, st.Action)
}

// redraw is a frame as a terminal gets it: clear, cursor home, then the
// lines with carriage returns (a player writes raw output).
func redraw(frame string) string {
	return "\x1b[2J\x1b[H" + strings.ReplaceAll(frame, "\n", "\r\n")
}

func castLine(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// The frames are full of < and >; keep them readable in the file.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("cannot encode the asciicast: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("cannot write the asciicast: %w", err)
	}
	return nil
}

// castEvent writes one [time, code, data] event, time in seconds.
func castEvent(w io.Writer, at time.Duration, code, data string) error {
	return castLine(w, []any{json.Number(fmt.Sprintf("%.6f", at.Seconds())), code, data})
}
