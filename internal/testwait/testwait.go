// Package testwait holds the one rule for how long a test waits for
// something it expects to happen, and a helper that polls for it. It
// imports only the standard library, so any package's tests may use it
// (sshroom's included, which must not import engine/…).
package testwait

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// envScale multiplies Timeout: CI on a loaded machine sets it above 1.
// Tests wait for events; the timeout only says when to give up.
const envScale = "LEASERACE_TEST_TIMEOUT_SCALE"

// base is how long a test waits for something that should happen.
// Nothing a test waits for takes more than a second on an idle machine;
// the rest is room for a machine shared by many processes.
const base = 10 * time.Second

// maxScale bounds the scale: a larger value is taken for a typo, not a
// wish to wait for hours.
const maxScale = 1000

// Timeout is the one bound on how long a test waits for something it
// expects to happen (a screen, a row, a process to exit): 10 s, times
// LEASERACE_TEST_TIMEOUT_SCALE when that is a number in (0, 1000]. It is
// only ever reached when the test is failing. A wait that covers something
// genuinely longer (starting a server or a cluster) uses a small multiple
// of it.
func Timeout() time.Duration {
	return scaled(os.Getenv(envScale))
}

// scaled is Timeout for the scale's value v.
func scaled(v string) time.Duration {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0 && f <= maxScale) {
		return base
	}
	return time.Duration(float64(base) * f)
}

// Eventually checks cond, quickly at first and then every 50 ms, until it
// holds; after Timeout it fails the test, saying what did not happen.
// For state that has no event to wait on (a row, a process list): where the
// code can signal, wait on the signal instead.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if err := eventually(Timeout(), cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eventually is Eventually with its limit given, returning an error
// instead of failing a test.
func eventually(limit time.Duration, cond func() bool) error {
	deadline := time.Now().Add(limit)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("still not so after %s", limit)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
	return nil
}

// WaitingInParallel lets twice as many of a package's parallel tests run at
// once as go test would (-parallel defaults to the number of CPUs), unless
// the person running them chose -parallel. It is for packages whose tests
// spend most of their time waiting (on processes of their own, sessions,
// timers), not on this process's CPU: two at a time on two cores leaves
// the cores idle and holds one of go test's package slots for longer.
// Call it from TestMain, before m.Run.
func WaitingInParallel() {
	if !flag.Parsed() {
		flag.Parse()
	}
	chosen := false
	flag.Visit(func(f *flag.Flag) { chosen = chosen || f.Name == "test.parallel" })
	if !chosen {
		_ = flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	}
}
