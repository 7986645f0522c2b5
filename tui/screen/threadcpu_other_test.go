//go:build !linux

package screen

import "time"

// threadCPU is unknown here: cpu-µs/op reads 0.
func threadCPU() time.Duration { return 0 }
