//go:build unix

package sshroom

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/leaserace/leaserace/internal/testwait"
)

// TestPainterInTmux draws a run of frames into a real terminal (tmux) and
// reads the screen back after each: what the terminal shows is the frame,
// whatever it showed before, and stop returns to the screen as it was.
func TestPainterInTmux(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skipf("tmux is not installed: %v", err)
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "frames")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "tmux")
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v %s", args, err, out)
		}
		return string(out)
	}
	// The pane prints a line of its own, then copies the painter's bytes
	// to the terminal as they come.
	tmux("new-session", "-d", "-s", "p", "-x", "12", "-y", "4", "echo before; stty raw -echo; cat "+fifo+"; sleep 60")
	t.Cleanup(func() { _, _ = exec.Command("tmux", "-S", socket, "kill-server").CombinedOutput() })
	testwait.Eventually(t, "the pane's first line", func() bool { return strings.Contains(tmux("capture-pane", "-p", "-t", "p"), "before") })
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	p := newPainter(f, MaxFPS, 12, 4, newWidthCache(2))
	defer p.stop()
	screen := func() string {
		return strings.TrimRight(tmux("capture-pane", "-p", "-t", "p"), "\n")
	}
	shows := func(want string) {
		t.Helper()
		testwait.Eventually(t, "the pane showing "+want, func() bool { return screen() == want })
	}
	p.set("first line\nsecond\nthird\nfourth")
	shows("first line\nsecond\nthird\nfourth")
	p.set("first\n\x1b[31msecond\x1b[m\nthird line is too wide\nfourth")
	shows("first\nsecond\nthird line i\nfourth")
	p.set("top\nmiddle")
	shows("top\nmiddle")
	// Taller than the terminal: its last four lines.
	p.set("a\nb\nc\nd\ne\nf")
	shows("c\nd\ne\nf")
	tmux("resize-window", "-t", "p", "-x", "8", "-y", "3")
	p.resize(8, 3)
	p.set("wide enough?\nx")
	shows("wide eno\nx")
	p.stop()
	testwait.Eventually(t, "the screen from before the painter", func() bool { return strings.HasPrefix(screen(), "before") })
}
