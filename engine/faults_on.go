//go:build leaserace_faults

package engine

// Built only with -tags leaserace_faults, which the command's end-to-end
// tests use: they need a real binary to fail inside a real step, and no
// input can make it (a scenario that could would be a bug of its own).
//
// LEASERACE_FAULT lists faults, comma-separated, each KIND@T for the step at
// logical time T, each fired once per run:
//
//	panic@1080          panic inside that step, after its SQL ran
//	resource-down@1075  kill the run's resource just before that step
//
// LEASERACE_TRACE_PLAYS names a file to which every live run appends a line,
// "SCENARIO RENEWAL/FENCING", each time it plays the last move of its log:
// the tests count with it how often each run is played.

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/leaserace/leaserace/scenario"
)

const faultsBuilt = true

// faultState remembers which faults already fired, so a Reconnect's replay
// does not hit them again.
type faultState struct{ fired map[string]bool }

func (l *live) faultPoint(stage faultStage, mv scenario.Move) {
	for _, f := range strings.Split(os.Getenv("LEASERACE_FAULT"), ",") {
		f = strings.TrimSpace(f)
		kind, at, ok := strings.Cut(f, "@")
		if !ok || l.faults.fired[f] {
			continue
		}
		t, err := strconv.ParseInt(at, 10, 64)
		if err != nil || t != mv.T {
			continue
		}
		switch {
		case kind == "resource-down" && stage == beforeStepSQL:
			l.host.killResource()
		case kind == "panic" && stage == afterStepSQL:
		default:
			continue
		}
		if l.faults.fired == nil {
			l.faults.fired = map[string]bool{}
		}
		l.faults.fired[f] = true
		if kind == "panic" {
			panic(fmt.Sprintf("injected fault: panic inside the step at t=%d", mv.T))
		}
	}
}

// tracePlayed appends the run's scenario and knobs to LEASERACE_TRACE_PLAYS.
// One write per line, with O_APPEND, so lines from runs side by side do
// not interleave.
func (l *live) tracePlayed(name string, k scenario.Knobs) {
	path := os.Getenv("LEASERACE_TRACE_PLAYS")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = fmt.Fprintf(f, "%s %s\n", name, k)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		// A test build only: the test that reads the file sees the gap.
		fmt.Fprintf(os.Stderr, "leaserace: cannot trace a play to %s: %v\n", path, err)
	}
}

// killResource stops the resource the hard way, as if its process had
// died: its listener and every open connection close at once.
func (h *Host) killResource() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.svc != nil {
		h.svc.Kill()
	}
}
