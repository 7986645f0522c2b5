package screen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/resource"
	"github.com/leaserace/leaserace/tui/text"
	"github.com/leaserace/leaserace/tui/tuitest"
	"github.com/muesli/termenv"
)

// sizes samples 1×1..300×100 densely: every width and every height, each
// against a spread of the other, and the corners: 7,000 sizes.
//
// Under the race detector it is the spread of widths against the spread
// of heights, and every height up to 30 at the widths around the size
// gate and 80 columns: 500 sizes. The detector reports memory that
// goroutines share, here the screens each parallel subtest draws from;
// the same draws at every other size share nothing more, and took 53 s
// of CPU of the race line's 260 (drawing is six times slower under it).
// go test ./... draws every size.
func sizes() [][2]int {
	hs := []int{1, 2, 3, 5, 8, 12, 15, 16, 17, 20, 23, 24, 25, 30, 40, 60, 100}
	ws := []int{1, 2, 3, 5, 10, 20, 40, 59, 60, 61, 70, 79, 80, 81, 100, 120, 160, 200, 300}
	var out [][2]int
	if underRace {
		for _, w := range ws {
			for _, h := range hs {
				out = append(out, [2]int{w, h})
			}
		}
		for _, w := range []int{MinWidth - 1, MinWidth, MinWidth + 1, 79, 80, 81} {
			for h := 1; h <= 30; h++ {
				out = append(out, [2]int{w, h})
			}
		}
		return out
	}
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

// at1075 is renewal-race under blind/off with its first five events run:
// the delayed heartbeat has just arrived.
func at1075(t *testing.T) Screen {
	t.Helper()
	r := shipped(t, "renewal-race", blindOff())
	next(t, r, 5)
	return showing(r)
}

func TestFrameAtEverySizeNeverPanicsAndFits(t *testing.T) {
	t.Parallel()
	// About 50,000 frames: gigabytes of short-lived rows and strings over
	// a live heap of a few megabytes. At the default GOGC the collector
	// ran thousands of cycles, 40 % of the package's CPU; the frames are
	// what is under test. Restored once every subtest is done.
	gc := debug.SetGCPercent(400)
	t.Cleanup(func() { debug.SetGCPercent(gc) })
	states := map[string]Screen{"start": showing(shipped(t, "renewal-race", blindOff()))}
	m := at1075(t)
	states["1075"] = m
	help := m
	help.ToggleFullHelp()
	help.Psql = Psql{
		Line:   `psql "host=/tmp/leaserace-pg-1163280452 port=5432 user=postgres dbname=postgres sslmode=disable options=-csearch_path=lr_fe260eb86a"`,
		Schema: "lr_fe260eb86a", NeedsPassword: true,
	}
	states["full help"] = help
	chooser := m
	chooser.Chooser = chooser.Chooser.Show("renewal-race")
	states["chooser"] = chooser
	end := shipped(t, "renewal-race", blindOff())
	if err := end.SeekTime(enginetest.Ctx(t), end.End()); err != nil {
		t.Fatal(err)
	}
	states["end conflict"] = showing(end)
	failed := m
	failed.Failure = errors.New("step 6 (t=1080, A effect): FATAL: terminating connection due to administrator command (SQLSTATE 57P01)\nsecond line")
	states["error"] = failed
	busy := m
	busy.Running, busy.Playing = "next", true
	busy.Status = []text.Span{text.Plain("r: renewal blind → compare-and-renew · replayed to t=1075: owner A → B · fence 1 → 2 · expires 1135 → 1130")}
	states["busy"] = busy
	boot := New(tuitest.ASCIIRenderer())
	boot.Boot = NewBoot(boot.Styles, "local")
	boot.Boot.Lines = []string{"initdb in /tmp/leaserace-xyz"}
	states["boot"] = boot

	// One subtest per state, in parallel: a frame is a pure function of
	// its screen and size, and each state is thousands of them.
	for name, s := range states {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, sz := range sizes() {
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Fatalf("%s at %d×%d panicked: %v", name, sz[0], sz[1], r)
						}
					}()
					tuitest.CheckFrame(t, name, s.Frame(sz[0], sz[1]), sz[0], sz[1])
				}()
			}
		})
	}
}

func TestTooSmallSaysWhatItNeeds(t *testing.T) {
	t.Parallel()
	m := showing(shipped(t, "renewal-race", blindOff()))
	if v := m.Frame(59, 30); !strings.Contains(v, "60×16") || !strings.Contains(v, "59×30") {
		t.Errorf("too narrow:\n%s", v)
	}
	if v := m.Frame(100, 15); !strings.Contains(v, "60×16") {
		t.Errorf("too short:\n%s", v)
	}
	if v := m.Frame(60, 16); strings.Contains(v, "needs a terminal") {
		t.Errorf("60×16 is enough:\n%s", v)
	}
}

// At 80×24 every part of the story is on screen, wrapped between words.
func TestEightyByTwentyFourKeepsEverything(t *testing.T) {
	t.Parallel()
	r := shipped(t, "renewal-race", blindOff())
	m := showing(r)
	for _, k := range []string{"right", "right", "right", "right", "right", "r"} {
		m = press(t, r, m, k)
	}
	v := m.Frame(80, 24)
	tuitest.CheckFrame(t, "80×24", v, 80, 24)
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
	t.Parallel()
	r := shipped(t, "renewal-race", blindOff())
	m := press(t, r, showing(r), "G")
	plain := m.Frame(120, 40)
	if strings.Contains(plain, "\x1b[") {
		t.Fatalf("ASCII profile frame has escapes:\n%q", plain)
	}
	for _, want := range []string{"2 effects / CONFLICT", "⚠", "✓", "! stale write accepted", "took the lease row back to an older fence"} {
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
		cm.SetRenderer(r)
		colour := cm.Frame(120, 40)
		if !strings.Contains(colour, "\x1b[") {
			t.Fatalf("truecolor frame (dark=%v) has no colour", dark)
		}
		if got := ansi.Strip(colour); got != plain {
			t.Errorf("colour changes the words (dark=%v):\n%s\n---\n%s", dark, got, plain)
		}
	}
}

func TestStaleHeartbeatIsMarkedInFlight(t *testing.T) {
	t.Parallel()
	r := shipped(t, "renewal-race", blindOff())
	next(t, r, 3) // send, expiry, takeover
	m := showing(r)
	if len(m.Snap.View.InFlight) != 1 || !m.Snap.View.InFlight[0].Stale {
		t.Fatalf("in flight %+v", m.Snap.View.InFlight)
	}
	v := m.Frame(120, 40)
	for _, want := range []string{"hb1 from A", "sent 1055, due 1075", "⚠ stale"} {
		if !strings.Contains(v, want) {
			t.Errorf("lacks %q:\n%s", want, v)
		}
	}
}

// The status line names the part the engine blamed (FailedPart), never
// one guessed from the error's text; tui's TestFailedPartIsTheEngines
// checks the blame itself.
func TestLostServerWording(t *testing.T) {
	t.Parallel()
	m := showing(shipped(t, "control", blindOff()))
	for _, tc := range []struct {
		err  error
		part FailedPart
		want string
	}{
		{errors.New("syntax error near PostgreSQL went away"), FailedStep, "The last step failed"},
		{fmt.Errorf("step 2: %w", context.DeadlineExceeded), FailedServer, "PostgreSQL went away"},
		{&resource.CallError{URL: "http://127.0.0.1:1", What: "write", Message: "refused", Err: syscall.ECONNREFUSED}, FailedResource, "The resource stopped answering"},
		{errors.New("panic: index out of range"), FailedBug, "leaserace hit a bug (please report it)"},
	} {
		m.Failure, m.FailedPart = tc.err, tc.part
		if got := strings.Join(m.statusLines(100), " "); !strings.Contains(got, tc.want) {
			t.Errorf("%v: status %q, want %q", tc.err, got, tc.want)
		}
	}
}
