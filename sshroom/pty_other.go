//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris)

package sshroom

import (
	"io"

	"github.com/charmbracelet/ssh"
)

// realPTY is nil here: the SSH library allocates no PTY on this system.
func realPTY(ssh.Session) io.Writer { return nil }
