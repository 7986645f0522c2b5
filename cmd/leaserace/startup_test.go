package main

import (
	"strings"
	"testing"
)

// TestBootTimeCachedBeforeTestcontainersInit: the binary turns gopsutil's
// boot-time cache on before testcontainers-go's init lists every process
// on the machine (engine/pgserver/internal/boottime says why); after it,
// the cache would save nothing.
func TestBootTimeCachedBeforeTestcontainersInit(t *testing.T) {
	t.Parallel()
	res := leaseraceEnv(t, []string{"GODEBUG=inittrace=1"}, "version")
	if res.code != 0 {
		t.Fatalf("version: %s", res)
	}
	const (
		cache   = "github.com/leaserace/leaserace/engine/pgserver/internal/boottime"
		listing = "github.com/testcontainers/testcontainers-go/internal/core/bootstrap"
	)
	order := map[string]int{}
	n := 0
	for line := range strings.SplitSeq(res.stderr, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			order[f[1]] = n
			n++
		}
	}
	c, okc := order[cache]
	l, okl := order[listing]
	switch {
	case !okc || !okl:
		t.Fatalf("the init trace lacks %s or %s:\n%s", cache, listing, res.stderr)
	case c > l:
		t.Errorf("%s ran its init after %s's: the listing paid for the boot time again for every process", cache, listing)
	}
}
