//go:build unix

package pgtest

import "syscall"

// ownGroup puts the watcher in a process group of its own, so the Ctrl-C
// that kills the tests spares it.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
