package sshroom

import (
	"context"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// The frame rate is DefaultFPS unless set, and must be 1 to MaxFPS.
func TestFPSBounds(t *testing.T) {
	t.Parallel()
	app := func(context.Context, Session) (tea.Model, func(), error) { return nil, nil, nil }
	for _, c := range []struct {
		fps, want int
		ok        bool
	}{{0, DefaultFPS, true}, {1, 1, true}, {MaxFPS, MaxFPS, true}, {-1, 0, false}, {MaxFPS + 1, 0, false}} {
		s, err := New(Config{Listen: "127.0.0.1:0", HostKeyDir: t.TempDir(), FPS: c.fps}, app)
		if !c.ok {
			if err == nil {
				t.Errorf("FPS %d: no error", c.fps)
			}
			continue
		}
		if err != nil {
			t.Fatalf("FPS %d: %v", c.fps, err)
		}
		if s.cfg.FPS != c.want {
			t.Errorf("FPS %d: the server draws at %d, want %d", c.fps, s.cfg.FPS, c.want)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
}
