package text

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestWrapBreaksBetweenWords(t *testing.T) {
	line := "One row: the stale heartbeat blindly overwrote the lease, owner B → A, fence 2 → 1 (regressed)."
	for w := 1; w <= len(line)+2; w++ {
		lines := Wrap([]Span{Plain(line)}, w, "", "")
		for _, l := range lines {
			if ansi.StringWidth(l) > w {
				t.Fatalf("width %d: line %q too wide", w, l)
			}
		}
		if w >= 12 { // longer than the longest word
			if got := strings.Join(lines, " "); got != line {
				t.Fatalf("width %d: words changed: %q", w, got)
			}
		}
	}
}

func TestTextWidthAgreesWithAnsi(t *testing.T) {
	for r := rune(0x20); r < 0x3000; r++ {
		if !narrow(r) && r >= 0x80 {
			continue
		}
		s := "a" + string(r) + "b"
		if got, want := Width(s), ansi.StringWidth(s); got != want {
			t.Errorf("U+%04X %q: Width %d, ansi %d", r, string(r), got, want)
		}
	}
	styledLine := "\x1b[1;38;2;86;180;233mfence\x1b[0m 2 → 1 ⚠ ✓ ✗ ╭─╮"
	if got, want := Width(styledLine), ansi.StringWidth(styledLine); got != want {
		t.Errorf("styled: %d vs %d", got, want)
	}
}

// A cut block says where to see the rest, never a bare ellipsis; a block
// that fits is left as it is.
func TestClipSayingNamesWhere(t *testing.T) {
	lines := []string{"one", "two", "three", "four"}
	got := ClipSaying(lines, 2, "e exports all")
	if len(got) != 2 || got[0] != "one" || got[1] != "… e e" {
		t.Errorf("ClipSaying cut to the block's width: %q", got)
	}
	wide := []string{"a line wide enough", "two", "three"}
	if got := ClipSaying(wide, 2, "e exports all"); got[1] != "… e exports all" {
		t.Errorf("ClipSaying: %q", got)
	}
	if got := ClipSaying(lines, 4, "e exports all"); len(got) != 4 || got[3] != "four" {
		t.Errorf("a block that fits was changed: %q", got)
	}
}
