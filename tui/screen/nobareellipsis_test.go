package screen

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// bareCut is a cell of a frame that holds only an ellipsis: something was
// cut without saying where to see it.
var bareCut = regexp.MustCompile(`(^|│)\s*…\s*($|│)`)

// No golden screen cuts a section to a bare "…": every cut says which
// key shows the rest (issue 20).
func TestGoldenScreensNameWhereACutGoes(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/*/*.golden")
	if len(files) == 0 {
		t.Fatal("no golden screens")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(data), "\n") {
			for _, cell := range strings.Split(l, "││") {
				if bareCut.MatchString(cell) {
					t.Errorf("%s:%d: a bare … : %q", f, i+1, l)
				}
			}
		}
	}
}

// The status line keeps to its lines and says that ? shows the rest; with
// the full help on, it shows every line (a long error read in full).
func TestStatusSaysWhereTheRestIs(t *testing.T) {
	t.Parallel()
	lines := []string{"⚠ The last step failed: R reconnects", "  and replays; the error was long", "  and went on", "  to a fourth line"}
	var m Screen
	got := m.clipStatus(lines, 3)
	if len(got) != 3 || !strings.HasPrefix(got[2], "… ? shows all of it") {
		t.Errorf("clipped status: %q", got)
	}
	m.ToggleFullHelp()
	if got := m.clipStatus(lines, 3); len(got) != 4 {
		t.Errorf("with ? on, the status is cut: %q", got)
	}
}
