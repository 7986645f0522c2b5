package pgtest

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine/pgserver/pgcontainer"
)

// envReadyChild makes TestContainerReadyChild ask ContainerReady; the test
// below runs this test binary that way, as a newcomer's go test would.
const envReadyChild = "LEASERACE_PGTEST_READY_CHILD"

func TestContainerReadyChild(t *testing.T) {
	if os.Getenv(envReadyChild) == "" {
		t.Skip("only runs as a child of TestContainerReadyWithoutTheImage")
	}
	ContainerReady(t)
	t.Log("ContainerReady let the test go on")
}

// A machine with a Docker engine but without the image: the container
// tests skip and say how to get one, or fail under
// LEASERACE_REQUIRE_POSTGRES=1. They never pull, and they never start a
// container that would try to.
func TestContainerReadyWithoutTheImage(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pgcontainer.DockerAvailable(ctx); err != nil {
		unavailable(t, "no Docker engine: "+err.Error())
	}
	const absent = "leaserace-test/no-such-image:0"
	for _, c := range []struct {
		require string
		want    string
	}{{"", "--- SKIP"}, {"1", "--- FAIL"}} {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestContainerReadyChild$", "-test.v")
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return strings.HasPrefix(kv, envRequire+"=") || strings.HasPrefix(kv, "LEASERACE_PG_IMAGE=")
		}), envReadyChild+"=1", "LEASERACE_PG_IMAGE="+absent, envRequire+"="+c.require)
		out, _ := cmd.CombinedOutput()
		got := string(out)
		for _, want := range []string{c.want, "tests never pull an image", "docker pull " + absent, "LEASERACE_PG_IMAGE"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s=%q: the child's output lacks %q:\n%s", envRequire, c.require, want, got)
			}
		}
		if strings.Contains(got, "let the test go on") {
			t.Errorf("%s=%q: ContainerReady let a test go on without the image:\n%s", envRequire, c.require, got)
		}
	}
}
