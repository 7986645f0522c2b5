package pgdsn_test

import (
	"testing"

	"github.com/leaserace/leaserace/engine/pgtest"
)

// TestMain gives the psql tests the shared servers of pgtest and stops
// them afterwards.
func TestMain(m *testing.M) { pgtest.Main(m) }
