package batch_test

import (
	"testing"

	"github.com/leaserace/leaserace/engine/pgtest/containertest"
)

// TestMain gives every test in package engine the shared servers of pgtest
// and stops them afterwards.
//
// The tests that play live runs and look only at their own run in parallel
// (t.Parallel), as go test runs parallel tests only after the serial ones
// are done. The stress tests stay serial: they count every stress and
// resource schema on the shared server before and after, and check that no
// goroutine outlived them.
func TestMain(m *testing.M) { containertest.Main(m) }
