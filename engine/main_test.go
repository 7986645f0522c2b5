package engine_test

import (
	"testing"

	"github.com/leaserace/leaserace/engine/pgtest/containertest"
)

// TestMain gives every test in package engine the shared servers of pgtest
// and stops them afterwards.
func TestMain(m *testing.M) { containertest.Main(m) }
