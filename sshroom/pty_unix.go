//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris

package sshroom

import (
	"io"

	"github.com/charmbracelet/ssh"
)

// realPTY is the session's allocated PTY, which wish has Bubble Tea write
// to, nil when the PTY is emulated or there is none.
func realPTY(sess ssh.Session) io.Writer {
	if pty, _, ok := sess.Pty(); ok && !sess.EmulatedPty() && pty.Slave != nil {
		return pty.Slave
	}
	return nil
}
