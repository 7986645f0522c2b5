//go:build !linux

package pgtest

// memoryFS: only Linux is known to offer one (/dev/shm) to every user.
func memoryFS() (dir string, ok bool, why string) {
	return "", false, "no memory filesystem known on this system"
}
