// Package boottime makes the start of every binary that links
// testcontainers-go cheaper. That library's init lists every process on
// the machine (through gopsutil) to find its parent's start time, and for
// each process gopsutil works the boot time out again, probing how the
// machine is virtualised each time: 9 ms of a 15 ms `leaserace version`
// with 70 processes on the machine, 20 ms and more with a few hundred.
// With gopsutil's boot-time cache the probe runs once.
//
// It must run before that init, and it does: Go initialises, among the
// packages whose imports are ready, the first by import path, and this one
// imports only gopsutil, which testcontainers-go's init needs too, while
// github.com/leaserace sorts before github.com/testcontainers. Keep it
// importing nothing else of ours. cmd/leaserace's tests check the order in
// the real binary.
package boottime

import "github.com/shirou/gopsutil/v4/process"

func init() { process.EnableBootTimeCache(true) }
