package sshroom

import (
	"io"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/ssh"
	"github.com/charmbracelet/x/ansi"
	gossh "golang.org/x/crypto/ssh"
)

// writes hands every write the painter makes to the test, one at a time.
type writes chan string

func (w writes) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

func (w writes) next(t *testing.T, what string) string {
	t.Helper()
	select {
	case s := <-w:
		return s
	case <-t.Context().Done():
		t.Fatalf("no write for %s", what)
	}
	return ""
}

// row is the start of what the painter writes for row n (from 1).
func row(n int) string {
	return ansi.CursorPosition(1, n) + ansi.ResetStyle + ansi.EraseEntireLine
}

// TestPainterWritesOnlyWhatChanged: the first frame takes the terminal
// (alternate screen, hidden cursor, bracketed paste) and draws every
// line; a frame asked for again draws nothing; a changed frame rewrites
// its changed lines only; a shorter one erases below; a resize repaints
// all; stop gives the terminal back, and nothing is drawn after it.
func TestPainterWritesOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	out := make(writes)
	p := newPainter(out, MaxFPS, 20, 5, nil)

	p.set("one\ntwo\nthree")
	first := out.next(t, "the first frame")
	for _, want := range []string{ansi.SetModeAltScreenSaveCursor, ansi.HideCursor, ansi.SetModeBracketedPaste, ansi.EraseEntireScreen, row(1) + "one", row(2) + "two", row(3) + "three"} {
		if !strings.Contains(first, want) {
			t.Errorf("the first frame lacks %q: %q", want, first)
		}
	}

	// The same frame, many times, then a changed second line: the next
	// write is the change, and only the second line.
	for range 50 {
		p.set("one\ntwo\nthree")
	}
	p.set("one\n2\nthree")
	second := out.next(t, "the changed line")
	if second != row(2)+"2" {
		t.Errorf("a frame with one changed line wrote %q, want only that line", second)
	}

	p.set("one")
	if got, want := out.next(t, "the shorter frame"), ansi.CursorPosition(1, 2)+ansi.ResetStyle+ansi.EraseScreenBelow; got != want {
		t.Errorf("a frame of fewer lines wrote %q, want %q", got, want)
	}

	p.resize(30, 5)
	resized := out.next(t, "the repaint after a resize")
	if !strings.Contains(resized, ansi.EraseEntireScreen) || !strings.Contains(resized, row(1)+"one") {
		t.Errorf("a resize wrote %q, want the screen erased and every line drawn", resized)
	}
	if strings.Contains(resized, ansi.SetModeAltScreenSaveCursor) {
		t.Errorf("a resize entered the alternate screen again: %q", resized)
	}

	done := make(chan struct{})
	go func() { p.stop(); close(done) }()
	restore := out.next(t, "stop")
	<-done
	for _, want := range []string{ansi.ResetModeAltScreenSaveCursor, ansi.ShowCursor, ansi.ResetModeBracketedPaste} {
		if !strings.Contains(restore, want) {
			t.Errorf("stop lacks %q: %q", want, restore)
		}
	}
	p.set("after")
	p.resize(10, 2)
	p.mu.Lock()
	pending := p.timer != nil
	p.mu.Unlock()
	if pending {
		t.Error("a draw was scheduled after stop")
	}
	p.stop() // twice is harmless and writes nothing more
}

// TestFrameLines: the lines a terminal of w×h shows, the last h of them,
// each cut to w cells (fit), wide characters and styles counted as cells.
func TestFrameLines(t *testing.T) {
	t.Parallel()
	red := "\x1b[31m"
	// Twice through a cache of three lines: the cases fill it and start
	// it again, and a width found in it must be the line's own.
	cache := newWidthCache(3)
	for _, c := range slices.Repeat([]struct {
		v    string
		w, h int
		want []string
	}{
		{"abc\ndef", 3, 2, []string{"abc", "def"}},
		{"abcd\nde", 3, 5, []string{"abc", "de"}},
		{"1\n2\n3\n4", 10, 2, []string{"3", "4"}},
		{red + "abc" + ansi.ResetStyle, 3, 1, []string{red + "abc" + ansi.ResetStyle}},
		{"日本語", 4, 1, []string{"日本"}},
		{"✓ ok", 4, 1, []string{"✓ ok"}},
		{"anything", 0, 0, []string{"anything"}},
	}, 2) {
		got := lastRows(strings.Split(c.v, "\n"), c.h)
		for i, l := range got {
			got[i] = fit(l, c.w, cache)
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("lines of %q, %d, %d) = %q, want %q", c.v, c.w, c.h, got, c.want)
		}
		for _, l := range got {
			if c.w > 0 && ansi.StringWidth(l) > c.w {
				t.Errorf("lines of %q, %d, %d): %q is wider than %d", c.v, c.w, c.h, l, c.w)
			}
		}
	}
}

// TestRawChannelOfARealSession: the painter's writes skip the emulated
// PTY's newline copying only if the session's channel is reachable; a
// real session over a real connection must give it, and writing to it
// reaches the client byte for byte.
func TestRawChannelOfARealSession(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	found := make(chan bool, 1)
	srv := &ssh.Server{Handler: func(s ssh.Session) {
		ch := rawChannel(s)
		found <- ch != nil
		if ch != nil {
			_, _ = io.WriteString(ch, "a\nb")
		}
	}}
	srv.SetOption(ssh.EmulatePty())
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	conn, err := gossh.Dial("tcp", ln.Addr().String(), &gossh.ClientConfig{User: "alice", HostKeyCallback: gossh.InsecureIgnoreHostKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sess, err := conn.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := sess.RequestPty("xterm", 24, 80, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	out, err := sess.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	if !<-found {
		t.Fatal("no channel found in a real session: every frame would be copied twice more")
	}
	got, _ := io.ReadAll(out)
	if string(got) != "a\nb" {
		t.Errorf("the client read %q, want %q (the channel's bytes as written)", got, "a\nb")
	}
}
