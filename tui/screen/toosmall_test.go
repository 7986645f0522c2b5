package screen

import (
	"strings"
	"testing"
)

// TestFrameGatesByTooSmall: at every size, the frame is the line asking
// for a larger terminal exactly when TooSmall says the size is too small,
// and the rule's edge is MinWidth×MinHeight.
func TestFrameGatesByTooSmall(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		w, h int
		want bool
	}{{MinWidth - 1, MinHeight, true}, {MinWidth, MinHeight - 1, true}, {MinWidth, MinHeight, false}, {10, 5, true}, {120, 40, false}} {
		if got := TooSmall(c.w, c.h); got != c.want {
			t.Errorf("TooSmall(%d, %d) = %v, want %v", c.w, c.h, got, c.want)
		}
	}
	m := showing(shipped(t, "renewal-race", blindOff()))
	for _, sz := range sizes() {
		w, h := sz[0], sz[1]
		gate := strings.Join(m.tooSmall(w, h), "\n")
		if gated := m.Frame(w, h) == gate; gated != TooSmall(w, h) {
			t.Errorf("at %d×%d the frame is the size gate: %v; TooSmall says %v", w, h, gated, TooSmall(w, h))
		}
	}
}
