package screen

import (
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"sync"

	"github.com/charmbracelet/bubbles/key"

	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/engine/world"
	"github.com/leaserace/leaserace/internal/memo"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/tui/text"
)

// DefaultShared is how many sets of sections a room's Shared keeps: a
// room's attendees sit at a few dozen snapshots at most (the presenter's
// step and those who broke away), each at a handful of window widths and
// colour profiles.
const DefaultShared = 1024

// Shared remembers the sections of frames that depend only on the
// snapshot, the frame's width and the styles' look (colour profile and
// background): the lanes, the panes, the SQL and the narration. Screens
// that point at one Shared (Screen.Shared) draw those sections once for
// all of them: in a room, every follower at the presenter's step sees the
// same ones. The rest of a frame (header, status, key help, questions,
// menus) is each screen's own and is drawn every time.
//
// It is only memoisation: Frame with a Shared returns, byte for byte, what
// it returns without one. A snapshot is known by a digest of everything in
// it, so two runs at the same step whose steps differ (a row, a tag, an
// argument) never share. It holds at most its bound of entries, dropping
// the least recently used. It is safe for concurrent use.
type Shared struct {
	max int

	mu    sync.Mutex
	items map[shareKey]*list.Element // of *shelf
	lru   *list.List                 // front: most recently used
	stats SharedStats
	// helps are key help lines by what they show; scenarios the digests
	// of the scenarios snapshots were taken of (a scenario is never
	// changed once loaded). Each keeps up to max.
	helps     *memo.Memo[helpKey, string]
	scenarios *memo.Memo[*scenario.Scenario, [sha256.Size]byte]
	// steps are the digests of steps, by address: a run never changes a
	// step once taken (engine.Run.Steps), so each step of a run is
	// encoded once, not again in every later snapshot. Up to
	// stepsPerEntry×max.
	steps *memo.Memo[*transcript.Step, [sha256.Size]byte]
	// widths are the cell widths of the lines frames drew lately, for
	// Lines' guard against a line wider than the screen.
	widths *memo.Memo[string, int]
}

// stepsPerEntry bounds the step digests kept: a few dozen steps for each
// snapshot kept.
const stepsPerEntry = 32

// widthsPerEntry bounds the line widths kept: a frame's lines or so for
// each snapshot kept.
const widthsPerEntry = 64

// width is l's width in cells: from the memo of a Shared, measured for
// a nil one.
func (s *Shared) width(l string) int {
	if s == nil {
		return text.Width(l)
	}
	return s.widths.Of(l, text.Width)
}

// helpKey is what a short key help line is a function of: the look, the
// separator and the bindings shown, each with its keys, words and whether
// it is enabled.
type helpKey struct {
	look, sep, items string
}

// SharedStats counts what a Shared did.
type SharedStats struct {
	// Hits and Misses count frames that found their snapshot's sections
	// kept, or had to draw them; Unshared counts frames drawn alone (a
	// replay, or a look or snapshot that cannot be told apart).
	Hits, Misses, Unshared uint64
	// Evicted counts entries dropped for the bound; Entries is how many
	// are kept now.
	Evicted uint64
	Entries int
}

// NewShared keeps at most max entries (DefaultShared if max ≤ 0).
func NewShared(max int) *Shared {
	if max <= 0 {
		max = DefaultShared
	}
	return &Shared{max: max, items: map[shareKey]*list.Element{}, lru: list.New(),
		helps: memo.New[helpKey, string](max), scenarios: memo.New[*scenario.Scenario, [sha256.Size]byte](max),
		steps: memo.New[*transcript.Step, [sha256.Size]byte](stepsPerEntry * max), widths: memo.New[string, int](widthsPerEntry * max)}
}

// Stats is what the Shared did so far.
func (s *Shared) Stats() SharedStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Entries = s.lru.Len()
	return st
}

// shareKey is what the shared sections are a function of, besides the
// layout variant each is asked for.
type shareKey struct {
	snap [sha256.Size]byte
	w    int
	look string
	// play: play mode leaves the unplayed moves out of the lanes and
	// words the SQL and narration for the learner.
	play bool
}

// shelf is one key's sections, filled as frames ask for them.
type shelf struct {
	key   shareKey
	mu    sync.Mutex
	parts map[partKey][]string
}

func (f *shelf) get(k partKey) ([]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.parts[k]
	return v, ok
}

func (f *shelf) put(k partKey, v []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.parts[k] = v
}

// shelfFor is the shelf of m's sections at width w, nil when m's frame
// cannot share: no Shared, a replay (its banner and words come from the
// recording), or styles or a snapshot with no identity.
func (s *Shared) shelfFor(m Screen, w int) *shelf {
	if s == nil {
		return nil
	}
	sum, ok := m.Snap.digest(s)
	if !ok || m.Replay != nil || m.Styles == nil || m.Styles.Look == "" {
		s.mu.Lock()
		s.stats.Unshared++
		s.mu.Unlock()
		return nil
	}
	k := shareKey{snap: sum, w: w, look: m.Styles.Look, play: m.Play.On}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.items[k]; ok {
		s.stats.Hits++
		s.lru.MoveToFront(e)
		return e.Value.(*shelf)
	}
	s.stats.Misses++
	f := &shelf{key: k, parts: map[partKey][]string{}}
	s.items[k] = s.lru.PushFront(f)
	for s.lru.Len() > s.max {
		old := s.lru.Back()
		s.lru.Remove(old)
		delete(s.items, old.Value.(*shelf).key)
		s.stats.Evicted++
	}
	return f
}

// snapID is a snapshot's identity, worked out the first time a shared
// frame asks for it. SnapshotOf gives each snapshot one; copies of the
// snapshot share it, which is right since a snapshot is never changed
// after it is taken.
type snapID struct {
	once sync.Once
	sum  [sha256.Size]byte
	ok   bool
}

// digest identifies everything of s a frame can show: two snapshots with
// the same digest draw the same sections. ok is false when s has none (a
// replay's recording is left to its own frames).
func (s Snapshot) digest(sh *Shared) (sum [sha256.Size]byte, ok bool) {
	if s.id == nil {
		return s.computeDigest(sh)
	}
	s.id.once.Do(func() { s.id.sum, s.id.ok = s.computeDigest(sh) })
	return s.id.sum, s.id.ok
}

func (s Snapshot) computeDigest(sh *Shared) (sum [sha256.Size]byte, ok bool) {
	if s.Scenario == nil || s.Rec != nil {
		return sum, false
	}
	scen, ok := sh.scenarioDigest(s.Scenario)
	if !ok {
		return sum, false
	}
	steps, ok := sh.stepsDigest(s.Steps)
	if !ok {
		return sum, false
	}
	// Every exported field, in JSON: a field added to a step or a view
	// later joins the identity without anyone remembering to add it.
	all := struct {
		Scenario   [sha256.Size]byte
		View       world.View
		Log        []scenario.Move
		Steps      [sha256.Size]byte
		Start, End int64
		Live       bool
		Options    []world.Option
		Goals      []world.GoalStatus
	}{scen, s.View, s.Log, steps, s.Start, s.End, s.Live, s.Options, s.Goals}
	return jsonDigest(all)
}

// stepsDigest is the digest of steps, in order: of each step's digest,
// every exported field in JSON, worked out once per step.
func (s *Shared) stepsDigest(steps []transcript.Step) (sum [sha256.Size]byte, ok bool) {
	h := sha256.New()
	for i := range steps {
		one, ok := s.steps.Get(&steps[i])
		if !ok {
			if one, ok = jsonDigest(steps[i]); !ok {
				return sum, false
			}
			s.steps.Put(&steps[i], one)
		}
		h.Write(one[:])
	}
	copy(sum[:], h.Sum(nil))
	return sum, true
}

// scenarioDigest is the digest of every exported field of sc, worked out
// once per scenario: every snapshot of a run shares its scenario.
func (s *Shared) scenarioDigest(sc *scenario.Scenario) (sum [sha256.Size]byte, ok bool) {
	if sum, ok = s.scenarios.Get(sc); ok {
		return sum, true
	}
	if sum, ok = jsonDigest(sc); ok {
		s.scenarios.Put(sc, sum)
	}
	return sum, ok
}

// jsonDigest is the SHA-256 of v in JSON; ok is false when v has none.
func jsonDigest(v any) (sum [sha256.Size]byte, ok bool) {
	h := sha256.New()
	if err := json.NewEncoder(h).Encode(v); err != nil {
		return sum, false
	}
	copy(sum[:], h.Sum(nil))
	return sum, true
}

// shortHelp is the short key help line of bs, drawn by draw the first
// time it is asked for in this look.
func (s *Shared) shortHelp(look, sep string, bs []key.Binding, draw func() string) string {
	var b strings.Builder
	for _, k := range bs {
		h := k.Help()
		if k.Enabled() {
			b.WriteByte('+')
		} else {
			b.WriteByte('-')
		}
		b.WriteString(h.Key)
		b.WriteByte(0)
		b.WriteString(h.Desc)
		b.WriteByte(0)
	}
	return s.helps.Of(helpKey{look: look, sep: sep, items: b.String()}, func(helpKey) string { return draw() })
}
