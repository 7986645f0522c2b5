package sshtest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if a goroutine outlives its tests. The
// package needs no PostgreSQL, so it checks with goleak directly rather
// than through pgtest.Main.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
