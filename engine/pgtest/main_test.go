package pgtest_test

import (
	"testing"

	"github.com/leaserace/leaserace/engine/pgtest/containertest"
)

// TestMain is containertest's: pgtest's own tests run containers too, and
// those of the watcher check it removes them.
func TestMain(m *testing.M) { containertest.Main(m) }
