package search_test

import (
	"testing"

	"github.com/leaserace/leaserace/engine/pgtest"
)

// TestMain gives every test in package search the shared servers of pgtest
// and stops them afterwards.
func TestMain(m *testing.M) { pgtest.Main(m) }
