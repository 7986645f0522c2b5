package tui

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/leaserace/leaserace/tui/text"
	"github.com/muesli/termenv"
)

// checkFrame fails unless the frame fits w×h exactly or less.
func checkFrame(t *testing.T, what string, f string, w, h int) {
	t.Helper()
	if f == "" {
		return
	}
	lines := strings.Split(f, "\n")
	if len(lines) > h {
		t.Fatalf("%s at %d×%d: %d lines", what, w, h, len(lines))
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw > w {
			t.Fatalf("%s at %d×%d: line %d is %d wide: %q", what, w, h, i, lw, l)
		}
	}
}

// sizes samples 1×1..300×100 densely: every width and every height, each
// against a spread of the other, and the corners.
func sizes() [][2]int {
	var out [][2]int
	hs := []int{1, 2, 3, 5, 8, 12, 15, 16, 17, 20, 23, 24, 25, 30, 40, 60, 100}
	ws := []int{1, 2, 3, 5, 10, 20, 40, 59, 60, 61, 70, 79, 80, 81, 100, 120, 160, 200, 300}
	for w := 1; w <= 300; w++ {
		for _, h := range hs {
			out = append(out, [2]int{w, h})
		}
	}
	for h := 1; h <= 100; h++ {
		for _, w := range ws {
			out = append(out, [2]int{w, h})
		}
	}
	return out
}

func TestViewAtEverySizeNeverPanicsAndFits(t *testing.T) {
	base := openModel(t, "renewal-race", blindOff(), 120, 40)
	states := map[string]Model{"start": base}
	m := press(t, base, "right", "right", "right", "right", "right")
	states["1075"] = m
	states["full help"] = press(t, m, "?")
	states["chooser"] = press(t, m, "s")
	states["end conflict"] = press(t, m, "G")
	failed := m
	failed.Failure = errors.New("step 6 (t=1080, A effect): FATAL: terminating connection due to administrator command (SQLSTATE 57P01)\nsecond line")
	states["error"] = failed
	busy := m
	busy.Running, busy.Playing = "next", true
	busy.Status = []text.Span{text.Plain("r: renewal blind → compare-and-renew · replayed to t=1075: owner A → B · fence 1 → 2 · expires 1135 → 1130")}
	states["busy"] = busy
	boot := newModel(context.Background(), asciiRenderer(), "", nil)
	boot.Boot = newBoot(boot.Styles, "local")
	boot.Boot, _ = boot.Boot.Update(progressMsg{line: "initdb in /tmp/leaserace-xyz", ok: true})
	states["boot"] = boot

	for name, s := range states {
		for _, sz := range sizes() {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("%s at %d×%d panicked: %v", name, sz[0], sz[1], r)
					}
				}()
				nm, _ := s.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
				checkFrame(t, name, nm.(Model).View(), sz[0], sz[1])
			}()
		}
	}
}

func TestTooSmallSaysWhatItNeeds(t *testing.T) {
	m := openModel(t, "renewal-race", blindOff(), 59, 30)
	if v := m.View(); !strings.Contains(v, "60×16") || !strings.Contains(v, "59×30") {
		t.Errorf("too narrow:\n%s", v)
	}
	m = send(t, m, tea.WindowSizeMsg{Width: 100, Height: 15})
	if v := m.View(); !strings.Contains(v, "60×16") {
		t.Errorf("too short:\n%s", v)
	}
	m = send(t, m, tea.WindowSizeMsg{Width: 60, Height: 16})
	if v := m.View(); strings.Contains(v, "needs a terminal") {
		t.Errorf("60×16 is enough:\n%s", v)
	}
}

// At 80×24 every part of the story is on screen, wrapped between words.
func TestEightyByTwentyFourKeepsEverything(t *testing.T) {
	m := at1075(t, blindOff(), 80, 24)
	m = press(t, m, "r")
	v := m.View()
	checkFrame(t, "80×24", v, 80, 24)
	for _, want := range []string{
		"renewal: compare-and-renew", "fencing: off (accept all)", "t=1075",
		"Coordinator", "In flight", "Resource", "UPDATE 0 — zero rows: the stale heartbeat was",
		"owner A → B", "1 effect / safe", "q quit",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("80×24 lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "…\n") {
		t.Errorf("80×24 had to cut a section:\n%s", v)
	}
}

func TestNoColorKeepsEveryStateInWords(t *testing.T) {
	m := openModel(t, "renewal-race", blindOff(), 120, 40)
	m = press(t, m, "G")
	plain := m.View()
	if strings.Contains(plain, "\x1b[") {
		t.Fatalf("ASCII profile frame has escapes:\n%q", plain)
	}
	for _, want := range []string{"2 effects / CONFLICT", "⚠", "✓", "CAPITAL = done"} {
		if !strings.Contains(plain, want) {
			t.Errorf("monochrome frame lacks %q", want)
		}
	}
	// In colour the same words are there; colour only adds.
	for _, dark := range []bool{true, false} {
		r := lipgloss.NewRenderer(io.Discard)
		r.SetColorProfile(termenv.TrueColor)
		r.SetHasDarkBackground(dark)
		cm := m
		cm.setRenderer(r)
		colour := cm.View()
		if !strings.Contains(colour, "\x1b[") {
			t.Fatalf("truecolor frame (dark=%v) has no colour", dark)
		}
		if got := ansi.Strip(colour); got != plain {
			t.Errorf("colour changes the words (dark=%v):\n%s\n---\n%s", dark, got, plain)
		}
	}
}

func TestStaleHeartbeatIsMarkedInFlight(t *testing.T) {
	m := openModel(t, "renewal-race", blindOff(), 120, 40)
	m = press(t, m, "right", "right", "right") // send, expiry, takeover
	if len(m.Snap.View.InFlight) != 1 || !m.Snap.View.InFlight[0].Stale {
		t.Fatalf("in flight %+v", m.Snap.View.InFlight)
	}
	v := m.View()
	for _, want := range []string{"hb1 from A", "sent 1055, due 1075", "⚠ stale"} {
		if !strings.Contains(v, want) {
			t.Errorf("lacks %q:\n%s", want, v)
		}
	}
}

func TestExportNameIsSanitised(t *testing.T) {
	for in, want := range map[string]string{
		"renewal-race":           "leaserace-renewal-race-20260314-150926",
		"../../etc/Passwd v2":    "leaserace-etc-passwd-v2-20260314-150926",
		"Ünïcode scenario_name!": "leaserace-n-code-scenario-name-20260314-150926",
		"":                       "leaserace-scenario-20260314-150926",
	} {
		if got := exportBase(in, fixedNow()); got != want {
			t.Errorf("exportBase(%q) = %q, want %q", in, got, want)
		}
	}
}
