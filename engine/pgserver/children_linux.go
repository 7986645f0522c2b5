package pgserver

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var kids []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // it exited meanwhile
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(string(f[1])); err == nil && ppid == pid {
			if kid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				kids = append(kids, kid)
			}
		}
	}
	return kids
}
