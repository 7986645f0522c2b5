package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/tui/screen"
	"github.com/leaserace/leaserace/tui/tuitest"
)

// A download reports its bytes and rate again and again: on the boot screen
// each report replaces the last, so the lines before it stay in view.
func TestBootScreenShowsTheDownloadMoving(t *testing.T) {
	t.Parallel()
	m := newModel(context.Background(), tuitest.ASCIIRenderer(), "", nil)
	m.Boot = screen.NewBoot(m.Styles, "embedded")
	lines := []string{"trying embedded", "downloading PostgreSQL 16.9.0 once, from http://127.0.0.1:1/m2/x.jar"}
	for pct := 10; pct <= 100; pct += 10 {
		lines = append(lines, fmt.Sprintf("downloading PostgreSQL 16.9.0: %.1f MB of 18.0 MB (%d%%), 3.1 MB/s", 0.18*float64(pct), pct))
	}
	lines = append(lines, "unpacking PostgreSQL 16.9.0", "initdb: a line with a colon", "initdb: another")
	for _, l := range lines {
		m.Boot, _ = updateBoot(m.Boot, nil, progressMsg{line: l, ok: true})
	}
	v := m.Frame(100, 24)
	for _, want := range []string{"embedded provider", "trying embedded", "once, from", "18.0 MB of 18.0 MB (100%), 3.1 MB/s", "unpacking", "initdb: another"} {
		if !strings.Contains(v, want) {
			t.Errorf("boot screen lacks %q:\n%s", want, v)
		}
	}
	for _, gone := range []string{"(90%)", "(10%)", "initdb: a line"} {
		if strings.Contains(v, gone) {
			t.Errorf("boot screen still shows %q, replaced since:\n%s", gone, v)
		}
	}
	if len(m.Boot.Lines) != 5 {
		t.Errorf("boot lines %q, want 5", m.Boot.Lines)
	}
}
