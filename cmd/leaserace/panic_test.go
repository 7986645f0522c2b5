package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/cmd/leaserace/internal/cli"
	"github.com/leaserace/leaserace/engine/pgtest"
)

// explore, check and check --evidence play their runs on worker
// goroutines, where an uncaught panic would end the process before any
// deferred Close. A panic inside a step there must come back to the command:
// exit 70 with a bug report, every run's schema and session gone, no
// half-written evidence.
func TestPanicInAWorkerIsReportedAndLeavesNothing(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	cases := []struct {
		name string
		args func(dir string) []string
	}{
		{"explore", func(string) []string { return []string{"explore", "--vary", "arrival=1073..1076"} }},
		{"check", func(string) []string { return []string{"check"} }},
		{"check --evidence", func(dir string) []string {
			return []string{"check", "--evidence", filepath.Join(dir, "evidence")}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := pgtest.ScratchDatabase(t, dsn, "lr_cli_")
			scratch := pgtest.WithDatabase(t, dsn, db)
			dir := t.TempDir()
			res := leaseraceEnv(t, []string{"LEASERACE_FAULT=panic@1075"},
				append(c.args(dir), "--pg", "dsn", "--dsn", scratch)...)
			if res.code != cli.ExitBug {
				t.Fatalf("exit %d, want %d\n%s", res.code, cli.ExitBug, res)
			}
			for _, want := range []string{"leaserace: hit a bug (", "panic: injected fault: panic inside the step at t=1075)", "This is a bug in leaserace", "goroutine "} {
				if !strings.Contains(res.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
				}
			}
			for _, l := range dsnLeftovers(scratch, db)(t) {
				t.Errorf("left behind: %s", l)
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Errorf("%d entries written into %s after the panic, want none", len(entries), dir)
			}
		})
	}
}
