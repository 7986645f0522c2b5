package htmlpage

import (
	"testing"

	"github.com/leaserace/leaserace/engine/pgtest"
)

// The played runs' pages are played on a real server; pgtest starts it on
// first use only, so the tests that need none do not wait for one.
func TestMain(m *testing.M) { pgtest.Main(m) }
