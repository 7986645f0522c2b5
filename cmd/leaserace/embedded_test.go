package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine/pgtest/zonkytest"
	"github.com/leaserace/leaserace/scenario"
)

// bareLaptop is the environment of a machine with neither Docker nor
// PostgreSQL: only the embedded server can start. Its cache and its
// temporary directory are the test's own.
func bareLaptop(cache, tmp string) []string {
	return []string{
		"LEASERACE_PG_BINDIR=",
		"DOCKER_HOST=unix://" + filepath.Join(cache, "no-docker.sock"),
		"XDG_CACHE_HOME=" + cache,
		"TMPDIR=" + tmp,
	}
}

// assertEmpty fails when a run left anything in its temporary directory.
func assertEmpty(t *testing.T, tmp string) {
	t.Helper()
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		t.Errorf("left behind in TMPDIR: %s", e.Name())
	}
}

func TestRunOnEmbedded(t *testing.T) {
	t.Parallel()
	jar := zonkytest.Get(t)
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: jar.Bytes, Sum: jar.Sum})
	cache, tmp := zonkytest.OpenDir(t, "lrec"), zonkytest.OpenDir(t, "lret")
	env := bareLaptop(cache, tmp)
	race := []string{"run", "--renewal", "blind", "--fencing", "off"}

	res := leaseraceEnv(t, env, args([]string{"--pg", "embedded", "--pg-mirror", mirror.URL}, append(race, "--format", "json")...)...)
	if res.code != 0 {
		t.Fatalf("want exit 0, got %v", res)
	}
	for _, want := range []string{"downloading PostgreSQL", "(100%)", "MB/s", "initdb"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("the first run's stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if !regexp.MustCompile(`PostgreSQL via embedded in \d`).MatchString(res.stderr) {
		t.Errorf("stderr does not say the embedded server served:\n%s", res.stderr)
	}
	tr := readTranscript(t, res.stdout)
	if tr.Outcome.Effects != 2 || tr.Outcome.Verdict != scenario.VerdictConflict {
		t.Errorf("outcome: %d effects, %s; want 2, conflict", tr.Outcome.Effects, tr.Outcome.Verdict)
	}
	assertEmpty(t, tmp)

	// The mirror is gone: the second run plays from the cache, and auto
	// takes the embedded server, saying why it passed over the others.
	mirror.Close()
	for _, pg := range [][]string{{"--pg", "embedded", "--pg-mirror", mirror.URL}, {"--pg", "auto"}} {
		res := leaseraceEnv(t, env, args(pg, append(race, "--format", "md")...)...)
		if res.code != 0 {
			t.Fatalf("%v: want exit 0, got %v", pg, res)
		}
		for _, want := range []string{"**CONFLICT**", "| Provider | embedded |"} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("%v: the transcript lacks %q:\n%s", pg, want, clipOut(res.stdout))
			}
		}
		if !strings.Contains(res.stderr, "from the cache") || strings.Contains(res.stderr, "downloading") {
			t.Errorf("%v: stderr of a cached run:\n%s", pg, res.stderr)
		}
		assertEmpty(t, tmp)
	}
	auto := leaseraceEnv(t, env, args([]string{"--pg", "auto"}, race...)...)
	if auto.code != 0 {
		t.Fatalf("auto: want exit 0, got %v", auto)
	}
	if !regexp.MustCompile(`(?s)container did not work \(.*; trying local.*local did not work \(PostgreSQL server binaries not found.*; trying embedded.*PostgreSQL via embedded`).MatchString(auto.stderr) {
		t.Errorf("auto does not say, in order, what it passed over and what it took:\n%s", auto.stderr)
	}
}

func TestEmbeddedRefusesABadChecksumAndCachesNothing(t *testing.T) {
	t.Parallel()
	jar := zonkytest.Get(t)
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: jar.Bytes, Sum: strings.Repeat("0", 64)})
	cache, tmp := zonkytest.OpenDir(t, "lrec"), zonkytest.OpenDir(t, "lret")
	res := leaseraceEnv(t, bareLaptop(cache, tmp), "run", "--pg", "embedded", "--pg-mirror", mirror.URL)
	if res.code != 3 {
		t.Fatalf("want exit 3, got %v", res)
	}
	for _, want := range []string{"sha256 checksum", jar.Sum, strings.Repeat("0", 64), "nothing was cached"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("the error lacks %q:\n%s", want, res.stderr)
		}
	}
	versions, _ := filepath.Glob(filepath.Join(cache, "leaserace", "postgres", "*"))
	hidden, _ := filepath.Glob(filepath.Join(cache, "leaserace", "postgres", ".*"))
	if len(versions)+len(hidden) > 0 {
		t.Errorf("the cache holds %v %v", versions, hidden)
	}
	assertEmpty(t, tmp)
}

func TestEmbeddedBadMirrorFlag(t *testing.T) {
	t.Parallel()
	res := leaserace(t, "run", "--pg", "embedded", "--pg-mirror", "ftp://u:Secr3tpw@example.invalid/m2")
	if res.code != 2 || !strings.Contains(res.stderr, "--pg-mirror") || strings.Contains(res.stderr, "Secr3tpw") {
		t.Errorf("want a usage error naming --pg-mirror without the password, got %v", res)
	}
}

// TestEmbeddedLeftoversSweptAfterSIGKILL kills leaserace outright mid-run:
// its server goes with it, and the next start removes the cluster's
// directory, saying so.
func TestEmbeddedLeftoversSweptAfterSIGKILL(t *testing.T) {
	t.Parallel()
	jar := zonkytest.Get(t)
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: jar.Bytes, Sum: jar.Sum})
	cache, tmp := zonkytest.OpenDir(t, "lrec"), zonkytest.OpenDir(t, "lret")
	env := bareLaptop(cache, tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, built.path, "run", "--scenario", longScenario(t, 1000), "--pg", "embedded", "--pg-mirror", mirror.URL)
	cmd.Env = append(childEnv(), env...)
	stderr := &lockedWriter{w: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !stderr.waitFor("PostgreSQL via embedded", 3*time.Minute) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the embedded server never came up:\n%s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	left, _ := filepath.Glob(filepath.Join(tmp, "leaserace-pg-*"))
	if len(left) != 1 {
		t.Fatalf("want the killed run's cluster directory under %s, found %v", tmp, left)
	}
	if procs := processesUnder(t, tmp); len(procs) > 0 {
		t.Errorf("the killed run's server outlived it: %v", procs)
	}
	res := leaseraceEnv(t, env, "run", "--pg", "embedded", "--pg-mirror", mirror.URL)
	if res.code != 0 {
		t.Fatalf("want exit 0, got %v", res)
	}
	if !strings.Contains(res.stderr, "removed "+left[0]) {
		t.Errorf("the next start does not say it removed %s:\n%s", left[0], res.stderr)
	}
	assertEmpty(t, tmp)
}

func TestCleanupEmbedded(t *testing.T) {
	t.Parallel()
	jar := zonkytest.Get(t)
	mirror := zonkytest.NewMirror(t, zonkytest.Serve{Jar: jar.Bytes, Sum: jar.Sum})
	cache := zonkytest.OpenDir(t, "lrec")
	all := endings("embedded")
	// After every ending: the runs that started together waited for one
	// download instead of each making its own. (Once, today: no ending is
	// signalled before initdb, which follows the download; one that cut a
	// download short would leave the next to download again.)
	t.Cleanup(func() {
		if n := mirror.JarRequests(); n >= len(all) {
			t.Errorf("%d runs downloaded the jar %d times: they did not wait for one another", len(all), n)
		}
	})
	for _, e := range all {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			// The cache is shared, as on a laptop: the first runs wait for
			// one of them to download it, and the rest start from it.
			e.env = []string{"LEASERACE_PG_BINDIR=", "XDG_CACHE_HOME=" + cache,
				"DOCKER_HOST=unix://" + filepath.Join(cache, "no-docker.sock")}
			// Once each: the process control is the local provider's own
			// (TestCleanupLocal repeats it), so what differs is the cache.
			repeatEnding(t, e, 1, func(t *testing.T, i int) []string {
				return []string{"--pg", "embedded", "--pg-mirror", mirror.URL}
			})
		})
	}
}
