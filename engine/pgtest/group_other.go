//go:build !unix

package pgtest

import "syscall"

// ownGroup: this system has no process groups to put the watcher in.
func ownGroup() *syscall.SysProcAttr { return nil }
