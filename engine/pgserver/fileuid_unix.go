//go:build unix

package pgserver

import (
	"io/fs"
	"syscall"
)

// fileUID is the user owning a file; ok is false where the system does
// not say.
func fileUID(fi fs.FileInfo) (uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
