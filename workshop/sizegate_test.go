package workshop_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/sshroom/sshtest"
	"github.com/leaserace/leaserace/tui/screen"
	"github.com/leaserace/leaserace/workshop"
)

// TestRoomGatesByTheTUIRule: the room's size gate is the TUI's own rule.
// A window one cell too narrow or too low for the TUI gets the room's
// gate; one of exactly the TUI's minimum gets the TUI, drawn whole and not
// its own too-small line.
func TestRoomGatesByTheTUIRule(t *testing.T) {
	t.Parallel()
	d := scratch(t)
	r := serve(t, d, workshop.Config{Room: "edge"})
	addr := r.Addr().String()
	gate := fmt.Sprintf("least %dx%d", screen.MinWidth, screen.MinHeight)
	for _, sz := range [][2]int{{screen.MinWidth - 1, screen.MinHeight}, {screen.MinWidth, screen.MinHeight - 1}} {
		if !screen.TooSmall(sz[0], sz[1]) {
			t.Fatalf("the TUI takes %dx%d, want it too small", sz[0], sz[1])
		}
		c := sshtest.MustDial(t, addr, sshtest.Options{User: fmt.Sprintf("w%dh%d", sz[0], sz[1]), Width: sz[0], Height: sz[1]})
		c.WaitScreen(pgtest.WaitTimeout(), "Make the")
		if scr := sshtest.Flat(c.Screen()); !strings.Contains(scr, gate) {
			t.Errorf("the %dx%d window shows %q, want the room's gate", sz[0], sz[1], scr)
		}
	}
	if screen.TooSmall(screen.MinWidth, screen.MinHeight) {
		t.Fatalf("the TUI calls its own minimum too small")
	}
	fits := sshtest.MustDial(t, addr, sshtest.Options{User: "fits", Width: screen.MinWidth, Height: screen.MinHeight})
	// The TUI's first frame waits on the attendee's run being made in
	// PostgreSQL (schemas and all): twice the usual wait.
	fits.WaitScreen(2*pgtest.WaitTimeout(), "renewal-race")
	if scr := sshtest.Flat(fits.Screen()); strings.Contains(scr, "Make the") || strings.Contains(scr, "needs a terminal") {
		t.Errorf("the %dx%d window is gated: %q", screen.MinWidth, screen.MinHeight, scr)
	}
}
