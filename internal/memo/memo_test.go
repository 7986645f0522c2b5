package memo

import (
	"sync"
	"testing"
	"unicode/utf8"

	"go.uber.org/goleak"
)

// Widths found in the memo are the lines' own, through filling it and
// starting again; a line is measured once while it is kept; and the memo
// never holds more than its size.
func TestMemoKeepsWidthsWithinItsSize(t *testing.T) {
	measured := map[string]int{}
	var mu sync.Mutex
	m := New[string, int](3)
	measure := func(l string) int {
		mu.Lock()
		measured[l]++
		mu.Unlock()
		return utf8.RuneCountInString(l)
	}
	lines := []string{"a", "bb", "ccc", "日本", "eeeee"}
	for range 3 {
		for _, l := range lines {
			if got, want := m.Of(l, measure), utf8.RuneCountInString(l); got != want {
				t.Fatalf("Of(%q) = %d, want %d", l, got, want)
			}
			if m.Len() > 3 {
				t.Fatalf("%d values kept, more than 3", m.Len())
			}
		}
	}
	before := measured["x"]
	m.Of("x", measure)
	m.Of("x", measure)
	if measured["x"] != before+1 {
		t.Fatalf("x measured %d times while kept, want once", measured["x"]-before)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, l := range lines {
				if m.Of(l, measure) != utf8.RuneCountInString(l) {
					t.Errorf("Of(%q) wrong under concurrent use", l)
				}
			}
		})
	}
	wg.Wait()
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
