package screen

import (
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/muesli/termenv"
)

// BenchmarkFrame is a room attendee's frame, in 256 colours on a dark
// background, of renewal-race at t=1075 (a live run), at two sizes:
//
//   - own: drawn alone, as before frames were shared;
//   - shared-first: the first follower to draw a new snapshot through a
//     Shared: its digest, the sections drawn and kept;
//   - shared: a follower who finds the snapshot's sections drawn, as every
//     other attendee at the presenter's step does.
//
// cpu-µs/op is the benchmark thread's own CPU time per frame, which a
// loaded machine does not inflate.
func BenchmarkFrame(b *testing.B) {
	r := enginetest.Open(b, pgtest.DSN(b), "renewal-race", blindOff())
	next(b, r, 5)
	rend := lipgloss.NewRenderer(io.Discard)
	rend.SetColorProfile(termenv.ANSI256)
	rend.SetHasDarkBackground(true)
	for _, sz := range [][2]int{{120, 40}, {80, 24}} {
		w, h := sz[0], sz[1]
		s := follower(r, rend, nil, true, "")
		b.Run(fmt.Sprintf("own-%dx%d", w, h), func(b *testing.B) {
			frameCPU(b, func() { _ = s.Frame(w, h) })
		})
		b.Run(fmt.Sprintf("shared-first-%dx%d", w, h), func(b *testing.B) {
			sh := NewShared(0)
			frameCPU(b, func() {
				f := s
				f.Shared = sh
				// A snapshot not drawn before: a new identity to work out.
				f.Snap.id = new(snapID)
				sh.clear()
				_ = f.Frame(w, h)
			})
		})
		b.Run(fmt.Sprintf("shared-%dx%d", w, h), func(b *testing.B) {
			f := s
			f.Shared = NewShared(0)
			_ = f.Frame(w, h)
			frameCPU(b, func() { _ = f.Frame(w, h) })
		})
	}
}

// clear forgets every entry (benchmarks only).
func (s *Shared) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.items)
	s.lru.Init()
}

func frameCPU(b *testing.B, frame func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadCPU()
	n := 0
	for b.Loop() {
		frame()
		n++
	}
	b.ReportMetric(float64((threadCPU()-before).Microseconds())/float64(n), "cpu-µs/op")
}
