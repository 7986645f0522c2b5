package sshroom

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/leaserace/leaserace/internal/testwait"
)

// TestMain fails the package's run if a goroutine outlives its tests. The
// package needs no PostgreSQL, so it checks with goleak directly rather
// than through pgtest.Main. Its sessions wait on SSH clients, timeouts and
// shutdowns, not on this process's CPU, so more of them run at once.
func TestMain(m *testing.M) {
	testwait.WaitingInParallel()
	goleak.VerifyTestMain(m)
}
