package pgserver

import (
	"os"
	"strconv"
)

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	parent := strconv.Itoa(pid)
	var kids []int
	for _, e := range entries {
		kid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process
		}
		if f, err := procStat(kid); err == nil && f[1] == parent {
			kids = append(kids, kid)
		}
	}
	return kids
}
