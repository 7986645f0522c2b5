package pgserver_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/pgtest"
)

// TestKillTreeReachesChildrenInTheirOwnSessions stops one of PostgreSQL's
// children, which then cannot notice its postmaster die, and kills the
// tree. Each child starts a session of its own, so only a kill aimed at it
// ends it: the group kill alone would leave it running for good.
func TestKillTreeReachesChildrenInTheirOwnSessions(t *testing.T) {
	t.Parallel() // a cluster of its own
	srv := startLocal(t, nil)
	b, err := os.ReadFile(filepath.Join(srv.ID, "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		t.Fatalf("postmaster.pid: %v", err)
	}
	var child int
	pgtest.Eventually(t, "the postmaster has a child in a session of its own", func() bool {
		child = childInOwnSession(pid)
		return child != 0
	})
	if err := syscall.Kill(child, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) }) // if the test fails

	pgserver.KillTree(pid)

	pgtest.Eventually(t, "the stopped child is gone", func() bool { return gone(child) })
	pgtest.Eventually(t, "nothing runs on the cluster", func() bool {
		return len(processesMentioning(t, srv.ID)) == 0
	})
}

// childInOwnSession finds a child of pid that leads a session of its own.
func childInOwnSession(pid int) int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
		// state ppid pgrp session
		if len(f) < 4 || string(f[1]) != strconv.Itoa(pid) {
			continue
		}
		me := filepath.Base(filepath.Dir(p))
		if string(f[3]) == me {
			n, _ := strconv.Atoi(me)
			return n
		}
	}
	return 0
}

// gone says pid no longer runs: it has exited, or is a zombie waiting to
// be reaped.
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	return len(f) > 0 && (string(f[0]) == "Z" || string(f[0]) == "X")
}
