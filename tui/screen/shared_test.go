package screen

import (
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/tui/text"
	"github.com/leaserace/leaserace/tui/tuitest"
	"github.com/muesli/termenv"
)

// looks are the colour profiles a room's attendees bring: none, 256
// colours on a dark background, 24-bit on a light one.
func looks() map[string]*lipgloss.Renderer {
	out := map[string]*lipgloss.Renderer{"ascii": tuitest.ASCIIRenderer()}
	for name, p := range map[string]struct {
		prof termenv.Profile
		dark bool
	}{"256-dark": {termenv.ANSI256, true}, "truecolor-light": {termenv.TrueColor, false}} {
		r := lipgloss.NewRenderer(io.Discard)
		r.SetColorProfile(p.prof)
		r.SetHasDarkBackground(p.dark)
		out[name] = r
	}
	return out
}

// sharedSizes run from the smallest full screen through the tight
// layouts to a large one.
func sharedSizes() [][2]int {
	return [][2]int{{60, 16}, {70, 20}, {80, 24}, {100, 30}, {120, 40}, {200, 60}, {300, 100}}
}

// follower is an attendee's screen of r: its own status and room line,
// drawing through sh (nil: alone).
func follower(r *engine.Run, rend *lipgloss.Renderer, sh *Shared, following bool, status string) Screen {
	s := New(rend)
	s.Snap, s.Phase = SnapshotOf(r), PhaseReady
	s.Room = &Room{Following: following}
	if status != "" {
		s.Status = []text.Span{text.Plain(status)}
	}
	s.Shared = sh
	return s
}

// Two attendees' runs of one scenario, stepped alike: at every step, on
// the way forward and after stepping back, in every look and size and in
// and out of play mode, a frame drawn through a Shared is byte for byte
// the frame drawn alone, for the attendee who drew the sections first and
// for the one who found them drawn. The second attendee's frames are drawn
// by several goroutines at once.
func TestSharedFramesEqualOwnFrames(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	a := enginetest.Open(t, dsn, "renewal-race", blindOff())
	b := enginetest.Open(t, dsn, "renewal-race", blindOff())
	ctx := enginetest.Ctx(t)
	sh := NewShared(0)
	rends := looks()

	// seen: the position was drawn before, so every key is found drawn.
	check := func(at string, seen bool) {
		t.Helper()
		before := sh.Stats()
		frames, hitsForP := 0, 0
		for look, rend := range rends {
			for _, play := range []bool{false, true} {
				sa := follower(a, rend, nil, true, "")
				sb := follower(b, rend, nil, false, "On your own: the presenter's steps no longer move your run. F rejoins.")
				sa.Play.On, sb.Play.On = play, play
				for _, sz := range sharedSizes() {
					w, h := sz[0], sz[1]
					ownA, ownB := sa.Frame(w, h), sb.Frame(w, h)
					if ownA == ownB {
						t.Fatalf("%s %s %d×%d: the two attendees' own frames are alike; the test needs them apart", at, look, w, h)
					}
					sa.Shared = sh
					if got := sa.Frame(w, h); got != ownA {
						t.Fatalf("%s %s play=%v %d×%d: shared frame of the first attendee differs from its own:\n%s\n---\n%s", at, look, play, w, h, got, ownA)
					}
					sa.Shared = nil
					var wg sync.WaitGroup
					got := make([]string, 3)
					for i := range got {
						wg.Go(func() {
							s := sb
							s.Shared = sh
							got[i] = s.Frame(w, h)
						})
					}
					wg.Wait()
					for _, g := range got {
						if g != ownB {
							t.Fatalf("%s %s play=%v %d×%d: shared frame of the second attendee differs from its own:\n%s\n---\n%s", at, look, play, w, h, g, ownB)
						}
					}
					frames += 4
					// The presenter, busy and playing, with a key disabled:
					// a header, room line and key help of its own.
					sp := sa
					sp.Room = &Room{Presenter: true}
					sp.Running, sp.Playing = "next", true
					k := *sp.Keys
					k.Export.SetEnabled(false)
					sp.WithKeys(k)
					ownP := sp.Frame(w, h)
					sp.Shared = sh
					if got := sp.Frame(w, h); got != ownP {
						t.Fatalf("%s %s play=%v %d×%d: the presenter's shared frame differs from its own:\n%s\n---\n%s", at, look, play, w, h, got, ownP)
					}
					frames++
					hitsForP++
				}
			}
		}
		after := sh.Stats()
		if after.Unshared != before.Unshared {
			t.Fatalf("%s: %d frames were drawn alone", at, after.Unshared-before.Unshared)
		}
		// Each key (look, play, width) is drawn once: the first attendee's
		// frame misses, the second's three hit. Back at a position seen
		// before, the restored runs' snapshots are the ones drawn on the
		// way forward: every frame hits.
		misses, hits := after.Misses-before.Misses, after.Hits-before.Hits
		// The presenter's frames find the first attendee's sections.
		hits -= uint64(hitsForP)
		frames -= hitsForP
		switch {
		case seen && (misses != 0 || hits != uint64(frames)):
			t.Errorf("%s: %d misses and %d hits for %d frames; want all hits", at, misses, hits, frames)
		case !seen && (misses*4 != uint64(frames) || hits*4 != 3*uint64(frames)):
			t.Errorf("%s: %d misses and %d hits for %d frames; want one in four and three in four", at, misses, hits, frames)
		}
	}

	check("start", false)
	for a.Pos() < a.Len() {
		next(t, a, 1)
		next(t, b, 1)
		check(fmt.Sprintf("after step %d", a.Pos()), false)
	}
	// Steps back restore the rows: the snapshots are new ones, at
	// positions seen before.
	for _, pos := range []int{a.Len() - 1, 2, 1} {
		for _, r := range []*engine.Run{a, b} {
			if err := r.Seek(ctx, pos); err != nil {
				t.Fatal(err)
			}
		}
		check(fmt.Sprintf("back at %d", pos), true)
	}
}

// Two runs at the same step of one scenario under the same knobs, whose
// steps had different results (the second run's leases row was changed
// on its server before the step), never share: the second draws its own
// sections, and its frame is its own.
func TestSharedNeverMixesRuns(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	ctx := enginetest.Ctx(t)
	a := enginetest.Open(t, dsn, "renewal-race", blindOff())
	b := enginetest.Open(t, dsn, "renewal-race", blindOff())
	next(t, a, 2)
	next(t, b, 2)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, "UPDATE "+pgx.Identifier{b.Schema(), "leases"}.Sanitize()+" SET lease_version = lease_version + 7")
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("changed %d leases rows, want 1", tag.RowsAffected())
	}
	next(t, a, 1)
	next(t, b, 1)
	if a.Pos() != b.Pos() || a.Now() != b.Now() || a.Knobs() != b.Knobs() {
		t.Fatalf("the runs are apart: pos %d/%d, t %d/%d", a.Pos(), b.Pos(), a.Now(), b.Now())
	}
	ra, rb := a.Steps()[a.Pos()-1].Coordinator, b.Steps()[b.Pos()-1].Coordinator
	if ra == nil || rb == nil || ra.LeaseVersion == rb.LeaseVersion {
		t.Fatalf("the last steps read the same row: %+v / %+v", ra, rb)
	}

	sh := NewShared(0)
	for look, rend := range looks() {
		for _, sz := range sharedSizes() {
			w, h := sz[0], sz[1]
			sa, sb := follower(a, rend, nil, true, ""), follower(b, rend, nil, true, "")
			ownA, ownB := sa.Frame(w, h), sb.Frame(w, h)
			if ownA == ownB {
				t.Fatalf("%s %d×%d: the runs' frames are alike; the test needs them apart", look, w, h)
			}
			sa.Shared, sb.Shared = sh, sh
			before := sh.Stats()
			if got := sa.Frame(w, h); got != ownA {
				t.Fatalf("%s %d×%d: the first run's shared frame is not its own", look, w, h)
			}
			if got := sb.Frame(w, h); got != ownB {
				t.Fatalf("%s %d×%d: the second run's shared frame is not its own:\n%s\n---\n%s", look, w, h, got, ownB)
			}
			if after := sh.Stats(); after.Hits != before.Hits || after.Misses != before.Misses+2 {
				t.Fatalf("%s %d×%d: hits %d → %d, misses %d → %d; want no hit, two misses", look, w, h, before.Hits, after.Hits, before.Misses, after.Misses)
			}
		}
	}
}

// A Shared holds at most its bound, dropping the least recently used;
// what it dropped is drawn again, alike.
func TestSharedIsBounded(t *testing.T) {
	t.Parallel()
	r := enginetest.Open(t, pgtest.DSN(t), "renewal-race", blindOff())
	next(t, r, 3)
	sh := NewShared(2)
	s := follower(r, tuitest.ASCIIRenderer(), sh, true, "")
	own := s
	own.Shared = nil
	for _, w := range []int{80, 100, 80, 120, 100} {
		if got, want := s.Frame(w, 30), own.Frame(w, 30); got != want {
			t.Fatalf("%d×30: shared frame is not its own", w)
		}
	}
	// 80 and 100 miss; 80 hits; 120 misses and drops 100, which misses
	// again and drops 80.
	st := sh.Stats()
	if st.Entries != 2 || st.Hits != 1 || st.Misses != 4 || st.Evicted != 2 {
		t.Fatalf("stats %+v; want 2 entries, 1 hit, 4 misses, 2 evicted", st)
	}
}

// A replay's frames and a snapshot not taken by SnapshotOf still draw
// alike through a Shared; the replay's are drawn alone.
func TestSharedLeavesReplaysAlone(t *testing.T) {
	t.Parallel()
	sh := NewShared(0)
	m := at1075(t)
	own := m.Frame(120, 40)
	m.Shared = sh
	if got := m.Frame(120, 40); got != own {
		t.Fatalf("replay's shared frame is not its own")
	}
	if st := sh.Stats(); st.Unshared != 1 || st.Entries != 0 {
		t.Fatalf("stats %+v; want the replay drawn alone", st)
	}
}

// A run that steps back and takes another move has a new step at that
// position, which a Shared must not take for the one it digested before:
// the frame drawn through it is the run's own, and the Shared keeps no
// more step digests than its bound.
func TestSharedKnowsAStepTakenAgain(t *testing.T) {
	t.Parallel()
	ctx := enginetest.Ctx(t)
	r := enginetest.Open(t, pgtest.DSN(t), "renewal-race", blindOff())
	next(t, r, 3)
	sh := NewShared(1)
	rend := tuitest.ASCIIRenderer()
	before := follower(r, rend, sh, true, "").Frame(80, 24)
	if err := r.Seek(ctx, 2); err != nil {
		t.Fatal(err)
	}
	opts := r.Options()
	if len(opts) < 2 {
		t.Fatalf("%d moves offered at step 2; the test needs another than the script's", len(opts))
	}
	if _, err := r.Play(ctx, opts[len(opts)-1].Move); err != nil {
		t.Fatal(err)
	}
	own := follower(r, rend, nil, true, "").Frame(80, 24)
	if own == before {
		t.Fatal("the other move drew the frame of the first; the test needs them apart")
	}
	if got := follower(r, rend, sh, true, "").Frame(80, 24); got != own {
		t.Fatalf("after another move at step 2, the shared frame is not the run's own:\n%s\n---\n%s", got, own)
	}
	// Many snapshots of many steps: the step digests stay within the bound.
	for range 2 * stepsPerEntry {
		if err := r.Seek(ctx, 0); err != nil {
			t.Fatal(err)
		}
		next(t, r, 3)
		_ = follower(r, rend, sh, true, "").Frame(80, 24)
	}
	n := sh.steps.Len()
	if n == 0 || n > stepsPerEntry {
		t.Fatalf("%d step digests kept; want 1 to %d", n, stepsPerEntry)
	}
}
