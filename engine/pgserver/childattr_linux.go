package pgserver

import "syscall"

// childAttr runs a cluster's program as cred (nil: ourselves). Pdeathsig
// takes it with us if leaserace is killed outright; ownGroup puts it in a
// process group of its own, out of reach of the terminal's Ctrl-C.
func childAttr(cred *syscall.Credential, ownGroup bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: ownGroup, Pdeathsig: syscall.SIGKILL}
}
