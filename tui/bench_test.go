package tui

import (
	"io"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// BenchmarkKeyToFrame is a press of → at t=1070 that runs the delayed
// heartbeat's UPDATE at 1075 on the real server, and the frame after it.
// Between presses ← puts the run back (untimed: a reset and replay).
func BenchmarkKeyToFrame(b *testing.B) {
	m := at1075(b, blindOff(), 120, 40)
	m = press(b, m, "left")
	right := keyMsg("right")
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		nm, cmd := m.Update(right)
		m = nm.(Model)
		for _, msg := range runCmd(cmd) {
			nm, _ = m.Update(msg)
			m = nm.(Model)
		}
		_ = m.View()
		took = append(took, time.Since(start))

		b.StopTimer()
		if m.Snap.View.Now != 1075 || m.Failure != nil {
			b.Fatalf("→ went to t=%d (err %v)", m.Snap.View.Now, m.Failure)
		}
		m = press(b, m, "left")
		b.StartTimer()
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkView200x60 is one frame of the busiest moment at 200×60.
func BenchmarkView200x60(b *testing.B) {
	m := openModel(b, "renewal-race", blindOff(), 200, 60)
	m = press(b, m, "G")
	m = send(b, m, tea.WindowSizeMsg{Width: 200, Height: 60})
	benchView(b, m)
}

// BenchmarkView80x24 is the tight layout, which tries several arrangements.
func BenchmarkView80x24(b *testing.B) {
	m := at1075(b, blindOff(), 80, 24)
	m = press(b, m, "r")
	benchView(b, m)
}

// benchView times View and also reports the CPU time of the benchmark's
// own thread per frame, which a loaded machine does not inflate.
func benchView(b *testing.B, m Model) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadCPU()
	n := 0
	for b.Loop() {
		_ = m.View()
		n++
	}
	b.ReportMetric(float64((threadCPU()-before).Microseconds())/float64(n), "cpu-µs/op")
}

func threadCPU() time.Duration {
	var ru syscall.Rusage
	// RUSAGE_THREAD (1) is Linux's per-thread usage.
	if err := syscall.Getrusage(1, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkView200x60Color is the same frame in 24-bit colour.
func BenchmarkView200x60Color(b *testing.B) {
	m := openModel(b, "renewal-race", blindOff(), 200, 60)
	m = press(b, m, "G")
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.TrueColor)
	r.SetHasDarkBackground(true)
	m.SetRenderer(r)
	benchView(b, m)
}
