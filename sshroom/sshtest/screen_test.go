package sshtest

import "testing"

func TestScreenEmulator(t *testing.T) {
	s := NewScreen(10, 3)
	_, _ = s.Write([]byte("hello\r\nworld"))
	if got, want := s.String(), "hello\nworld"; got != want {
		t.Fatalf("plain text: got %q, want %q", got, want)
	}
	_, _ = s.Write([]byte("\x1b[1;1H\x1b[31mHE\x1b[0m\x1b[K\x1b[3;4Hxy"))
	if got, want := s.String(), "HE\nworld\n   xy"; got != want {
		t.Fatalf("cursor and erase: got %q, want %q", got, want)
	}
	_, _ = s.Write([]byte("\x1b[?1049h\x1b[2J\x1b[Halt"))
	if got, want := s.String(), "alt"; got != want {
		t.Fatalf("alternate screen: got %q, want %q", got, want)
	}
	_, _ = s.Write([]byte("\x1b[?1049l"))
	if got, want := s.String(), "HE\nworld\n   xy"; got != want {
		t.Fatalf("back from the alternate screen: got %q, want %q", got, want)
	}
	_, _ = s.Write([]byte("\x1b[3;1H0123456789ab"))
	if got, want := s.String(), "world\n0123456789\nab"; got != want {
		t.Fatalf("wrap and scroll: got %q, want %q", got, want)
	}
	s.Resize(4, 2)
	if got, want := s.String(), "worl\n0123"; got != want {
		t.Fatalf("resize: got %q, want %q", got, want)
	}
}
