package screen

import (
	"testing"

	"github.com/leaserace/leaserace/scenario"
)

// A screen reads the built-ins only when its list first opens, and then
// lists every one with its title and the cursor on the current scenario.
func TestChooserReadsBuiltinsWhenItOpens(t *testing.T) {
	t.Parallel()
	c := New(nil).Chooser
	if c.Open || c.Names != nil {
		t.Fatalf("a new screen's list is open=%v with %d names; want closed and unread", c.Open, len(c.Names))
	}
	names := scenario.BuiltinNames()
	if len(names) < 2 {
		t.Fatalf("want at least two built-ins, have %v", names)
	}
	for _, current := range []string{names[0], names[len(names)-1]} {
		shown := c.Show(current)
		if !shown.Open || len(shown.Names) != len(names) || len(shown.Titles) != len(names) {
			t.Fatalf("Show(%q): open=%v, %d names, %d titles; want open with %d", current, shown.Open, len(shown.Names), len(shown.Titles), len(names))
		}
		if shown.Names[shown.Cursor] != current {
			t.Errorf("Show(%q) put the cursor on %q", current, shown.Names[shown.Cursor])
		}
		for i, n := range shown.Names {
			sc, err := scenario.Builtin(n)
			if err != nil {
				t.Fatal(err)
			}
			if shown.Titles[i] != sc.Title || sc.Title == "" {
				t.Errorf("%s: title %q, want %q", n, shown.Titles[i], sc.Title)
			}
		}
		// Opening again keeps what was read and moves only the cursor.
		again := shown.Show(names[0])
		if &again.Names[0] != &shown.Names[0] || again.Names[again.Cursor] != names[0] {
			t.Errorf("a second Show read the built-ins again or missed the cursor")
		}
	}
}
