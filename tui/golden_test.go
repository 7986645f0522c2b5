package tui

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/tuitest"
)

// moment is a built-in scenario at the point a presenter stops to talk.
type moment struct {
	name     string
	scenario string
	knobs    scenario.Knobs
	keys     []string
	// until is text the screen shows once the keys have all run.
	until string
}

func moments() []moment {
	right5 := []string{"right", "right", "right", "right", "right"}
	return []moment{
		{"renewal-race-1075-blind", "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff), right5, "event 5/6"},
		// Compare reached the way a presenter does: blind to 1075, then r.
		{"renewal-race-1075-compare", "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff), append(right5, "r"), "owner A → B"},
		{"renewal-race-end-blind", "renewal-race", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff), []string{"G"}, "event 6/6"},
		{"control-after-heartbeat", "control", enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic), []string{"right", "right"}, "event 2/3"},
		{"busy-holder-second-write-strict", "busy-holder", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingStrict), right5, "event 5/7"},
		{"revoked-writer-old-write", "revoked-writer", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingOff), []string{"right", "right"}, "event 2/5"},
		{"revoked-writer-old-write-monotonic", "revoked-writer", enginetest.Knobs(scenario.RenewalBlind, scenario.FencingMonotonic), []string{"right", "right"}, "event 2/5"},
		// Kleppmann's paused client writes on its old check: only fencing
		// at the resource can refuse it.
		{"paused-holder-stale-write", "paused-holder", enginetest.Knobs(scenario.RenewalCompare, scenario.FencingOff), append(right5, "right"), "event 6/6"},
		{"paused-holder-stale-write-monotonic", "paused-holder", enginetest.Knobs(scenario.RenewalCompare, scenario.FencingMonotonic), append(right5, "right"), "event 6/6"},
	}
}

// TestGoldenScreens drives the real Bubble Tea program with teatest at
// fixed sizes on live runs, waits for each key moment, and compares the
// final frame with the renderer's golden frame of it,
// tui/screen/testdata/TestGoldenScreens/<moment>-<W>x<H>.golden, which
// tui/screen's own TestGoldenScreens draws (and -update writes) there.
// The ASCII profile keeps the files free of colour codes.
func TestGoldenScreens(t *testing.T) {
	t.Parallel()
	for _, mo := range moments() {
		for _, sz := range [][2]int{{80, 24}, {120, 40}} {
			t.Run(fmt.Sprintf("%s-%dx%d", mo.name, sz[0], sz[1]), func(t *testing.T) {
				m := openModel(t, mo.scenario, mo.knobs, sz[0], sz[1])
				tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(sz[0], sz[1]))
				for _, k := range mo.keys {
					tm.Send(keyMsg(k))
				}
				teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
					return bytes.Contains(b, []byte(mo.until)) && !bytes.Contains(b[max(0, bytes.LastIndex(b, []byte(mo.until))):], []byte("● running"))
				}, teatest.WithDuration(30*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
				tm.Send(keyMsg("q"))
				fm, ok := tm.FinalModel(t, teatest.WithFinalTimeout(30*time.Second)).(Model)
				if !ok {
					t.Fatal("final model is not a Model")
				}
				if fm.Busy() || fm.Failure != nil || len(fm.queue) > 0 {
					t.Fatalf("not settled: busy=%v err=%v queue=%d", fm.Busy(), fm.Failure, len(fm.queue))
				}
				frame := fm.Frame(sz[0], sz[1])
				tuitest.CheckFrame(t, mo.name, frame, sz[0], sz[1])
				requireScreenGolden(t, frame)
			})
		}
	}
}

// requireScreenGolden fails unless frame is byte for byte the renderer's
// golden frame for this test, tui/screen/testdata/<test name>.golden: the
// program must draw exactly what the screen package pins. Only
// tui/screen's tests write those files.
func requireScreenGolden(t *testing.T, frame string) {
	t.Helper()
	path := filepath.Join("screen", "testdata", t.Name()+".golden")
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the renderer's golden frame: %v", err)
	}
	if got := frame + "\n"; got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		line := 0
		for line < min(len(gl), len(wl)) && gl[line] == wl[line] {
			line++
		}
		t.Fatalf("the frame differs from %s from line %d:\nwant:\n%s\ngot:\n%s", path, line+1, want, got)
	}
}

// The program ends cleanly on q: the last frame is empty, so nothing of
// the screen is left in the terminal after the alternate screen goes.
func TestProgramQuitsCleanly(t *testing.T) {
	t.Parallel()
	m := openModel(t, "renewal-race", blindOff(), 80, 24)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24))
	tm.Send(keyMsg("right"))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("event 1/6")) },
		teatest.WithDuration(30*time.Second))
	tm.Send(tea.KeyMsg{Type: tea.KeyCtrlC})
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(30*time.Second)).(Model)
	if fm.View() != "" {
		t.Errorf("a frame is left after quitting:\n%s", fm.View())
	}
}
