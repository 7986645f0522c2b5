package room_test

import (
	"testing"

	"github.com/leaserace/leaserace/engine/pgtest"

	"github.com/leaserace/leaserace/internal/testwait"
)

// TestMain gives the tests the shared servers of pgtest and stops them
// afterwards.
// The room's tests wait on LISTEN/NOTIFY, sweeps and reconnects, not on
// this process's CPU.
func TestMain(m *testing.M) {
	testwait.WaitingInParallel()
	pgtest.Main(m)
}
