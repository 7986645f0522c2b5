package pgtest

import (
	"fmt"
	"syscall"
)

// tmpfsMagic is statfs's f_type of a tmpfs (linux/magic.h).
const tmpfsMagic = 0x01021994

// memoryRoom is the least free space the memory filesystem must have: a
// cluster takes about 40 MB, and a package's tests hold a few at once.
const memoryRoom = 2 << 30

// memoryFS is /dev/shm when it is a tmpfs with room.
func memoryFS() (dir string, ok bool, why string) {
	const shm = "/dev/shm"
	var st syscall.Statfs_t
	if err := syscall.Statfs(shm, &st); err != nil {
		return "", false, fmt.Sprintf("no %s: %v", shm, err)
	}
	if st.Type != tmpfsMagic {
		return "", false, shm + " is not a tmpfs"
	}
	if free := uint64(st.Bavail) * uint64(st.Bsize); free < memoryRoom {
		return "", false, fmt.Sprintf("%s has %d MB free, under %d MB", shm, free>>20, memoryRoom>>20)
	}
	return shm, true, ""
}
