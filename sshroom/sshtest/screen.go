package sshtest

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Screen is a small terminal emulator: enough of VT100 for what
// bubbletea's renderer writes (cursor moves, erases, the alternate screen),
// so a test can assert on what an attendee would see rather than on the
// byte stream. Colours are ignored; the raw bytes keep them. It is not safe
// for concurrent use: Client guards its own.
type Screen struct {
	w, h      int
	main, alt [][]rune
	altOn     bool
	x, y      int
	p         *ansi.Parser
}

// NewScreen is an empty w×h screen.
func NewScreen(w, h int) *Screen {
	s := &Screen{w: w, h: h, main: grid(w, h), alt: grid(w, h), p: ansi.NewParser()}
	s.p.SetHandler(ansi.Handler{
		Print:     s.print,
		Execute:   s.execute,
		HandleCsi: s.csi,
	})
	return s
}

func grid(w, h int) [][]rune {
	g := make([][]rune, h)
	for i := range g {
		g[i] = blank(w)
	}
	return g
}

func blank(w int) []rune {
	r := make([]rune, w)
	for i := range r {
		r[i] = ' '
	}
	return r
}

func (s *Screen) cells() [][]rune {
	if s.altOn {
		return s.alt
	}
	return s.main
}

// Write feeds terminal output to the screen.
func (s *Screen) Write(b []byte) (int, error) {
	s.p.Parse(b)
	return len(b), nil
}

func (s *Screen) print(r rune) {
	wd := ansi.StringWidth(string(r))
	if wd == 0 {
		return
	}
	if s.x+wd > s.w {
		s.x = 0
		s.lineFeed()
	}
	row := s.cells()[s.y]
	row[s.x] = r
	for i := 1; i < wd && s.x+i < s.w; i++ {
		row[s.x+i] = 0 // the right half of a wide character
	}
	s.x += wd
}

func (s *Screen) execute(b byte) {
	switch b {
	case '\r':
		s.x = 0
	case '\n', '\v', '\f':
		s.lineFeed()
	case '\b':
		if s.x > 0 {
			s.x--
		}
	case '\t':
		s.x = min(s.w-1, (s.x/8+1)*8)
	}
}

func (s *Screen) lineFeed() {
	if s.y < s.h-1 {
		s.y++
		return
	}
	c := s.cells()
	copy(c, c[1:])
	c[s.h-1] = blank(s.w)
}

func (s *Screen) csi(cmd ansi.Cmd, params ansi.Params) {
	n := func(i, def int) int {
		v, _, _ := params.Param(i, def)
		if v == 0 {
			v = def
		}
		return v
	}
	if cmd.Prefix() == '?' {
		mode, _, _ := params.Param(0, 0)
		if mode == 1049 || mode == 1047 || mode == 47 {
			switch cmd.Final() {
			case 'h':
				s.alt = grid(s.w, s.h)
				s.altOn = true
			case 'l':
				s.altOn = false
			}
		}
		return
	}
	if cmd.Prefix() != 0 || cmd.Intermediate() != 0 {
		return
	}
	switch cmd.Final() {
	case 'H', 'f':
		s.y, s.x = n(0, 1)-1, n(1, 1)-1
	case 'A':
		s.y -= n(0, 1)
	case 'B':
		s.y += n(0, 1)
	case 'C':
		s.x += n(0, 1)
	case 'D':
		s.x -= n(0, 1)
	case 'E':
		s.y, s.x = s.y+n(0, 1), 0
	case 'F':
		s.y, s.x = s.y-n(0, 1), 0
	case 'G':
		s.x = n(0, 1) - 1
	case 'd':
		s.y = n(0, 1) - 1
	case 'K':
		s.clamp()
		mode, _, _ := params.Param(0, 0)
		s.eraseLine(mode)
	case 'J':
		s.clamp()
		mode, _, _ := params.Param(0, 0)
		c := s.cells()
		switch mode {
		case 0:
			s.eraseLine(0)
			for y := s.y + 1; y < s.h; y++ {
				c[y] = blank(s.w)
			}
		case 1:
			s.eraseLine(1)
			for y := 0; y < s.y; y++ {
				c[y] = blank(s.w)
			}
		default:
			for y := range c {
				c[y] = blank(s.w)
			}
		}
	}
	s.clamp()
}

func (s *Screen) eraseLine(mode int) {
	row := s.cells()[s.y]
	from, to := 0, s.w
	switch mode {
	case 0:
		from = min(s.x, s.w)
	case 1:
		to = min(s.x+1, s.w)
	}
	for i := from; i < to; i++ {
		row[i] = ' '
	}
}

func (s *Screen) clamp() {
	s.x = max(0, min(s.x, s.w-1))
	s.y = max(0, min(s.y, s.h-1))
}

// Resize keeps what fits, as a terminal does when its window changes.
func (s *Screen) Resize(w, h int) {
	fit := func(g [][]rune) [][]rune {
		n := grid(w, h)
		for y := 0; y < min(h, len(g)); y++ {
			copy(n[y], g[y][:min(w, len(g[y]))])
		}
		return n
	}
	s.main, s.alt = fit(s.main), fit(s.alt)
	s.w, s.h = w, h
	s.clamp()
}

// String is the screen's text, each line trimmed on the right.
func (s *Screen) String() string {
	lines := make([]string, 0, s.h)
	for _, row := range s.cells() {
		var b strings.Builder
		for _, r := range row {
			if r != 0 {
				b.WriteRune(r)
			}
		}
		lines = append(lines, strings.TrimRight(b.String(), " "))
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// Flat is s's words joined by single spaces, for text that wraps.
func Flat(s string) string { return strings.Join(strings.Fields(s), " ") }
