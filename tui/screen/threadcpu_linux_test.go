package screen

import (
	"syscall"
	"time"
)

// threadCPU is the calling thread's CPU time (RUSAGE_THREAD, Linux's).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
