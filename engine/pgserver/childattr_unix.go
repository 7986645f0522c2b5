//go:build unix && !linux

package pgserver

import "syscall"

// childAttr runs a cluster's program as cred (nil: ourselves), in a process
// group of its own when ownGroup. This system has no parent-death signal:
// a leaserace killed outright leaves the server to the next start's sweep.
func childAttr(cred *syscall.Credential, ownGroup bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: ownGroup}
}
