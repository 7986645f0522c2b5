package pgserver_test

import (
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
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		kid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// state ppid pgrp session
		if f, err := pgserver.ProcStat(kid); err == nil && len(f) >= 4 && f[1] == strconv.Itoa(pid) && f[3] == e.Name() {
			return kid
		}
	}
	return 0
}

// gone says pid no longer runs: it has exited, or is a zombie waiting to
// be reaped.
func gone(pid int) bool {
	f, err := pgserver.ProcStat(pid)
	return err != nil || f[0] == "Z" || f[0] == "X"
}
