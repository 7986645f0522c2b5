package search_test

import (
	"encoding/json"
	"flag"
	"os"
	"slices"
	"testing"

	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/search/searchtest"
	"github.com/leaserace/leaserace/scenario"
)

var update = flag.Bool("update", false, "rewrite "+searchtest.File+" from live searches of every built-in scenario")

// smallSearch: go test ./... searches again the built-ins whose recording
// has at most this many states (a second or two each); a soak
// (LEASERACE_SOAK above 1, CI's soak phase) and -update search them all.
const smallSearch = 2000

// TestRecordedSearchesMatchLiveOnes searches each built-in scenario on the
// server and compares what it finds with searchtest's recording, setting
// by setting: counts, shortest lists, goals. Tests that read the recording
// rely on this one to keep it true.
func TestRecordedSearchesMatchLiveOnes(t *testing.T) {
	scs, err := scenario.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	all := *update || pgtest.Soak(t) > 1
	// The shared search: the scenarios searched here are those other
	// tests of the package ask about too.
	o := sharedSearch(t, pgtest.DSN(t))
	got := map[string][]searchtest.Setting{}
	for _, sc := range scs {
		t.Run(sc.Name, func(t *testing.T) {
			want, err := searchtest.Settings(sc.Name)
			if err == nil && !all && statesOf(want) > smallSearch {
				t.Skipf("%d states: searched again in a soak (%s=10, as CI's soak phase) or with -update", statesOf(want), pgtest.EnvSoak)
			}
			if err != nil && !*update {
				t.Fatal(err)
			}
			rs, err := o.SearchAll(enginetest.Ctx(t), sc, nil)
			if err != nil {
				t.Fatal(err)
			}
			live := searchtest.Record(rs)
			got[sc.Name] = live
			if *update {
				return
			}
			if len(live) != len(want) {
				t.Fatalf("%d settings searched, %d recorded", len(live), len(want))
			}
			for i := range live {
				if l, w := jsonOf(t, live[i]), jsonOf(t, want[i]); l != w {
					t.Errorf("under %s/%s the search finds\n%s\nand the recording says\n%s", live[i].Renewal, live[i].Fencing, l, w)
				}
			}
		})
	}
	if *update {
		b, err := searchtest.Encode(got)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(searchtest.File, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", searchtest.File)
		return
	}
	// A scenario recorded but no longer built in is a stale recording.
	names := make([]string, len(scs))
	for i, sc := range scs {
		names[i] = sc.Name
	}
	for _, name := range searchtest.Names() {
		if !slices.Contains(names, name) {
			t.Errorf("%s records %s, which is not a built-in scenario", searchtest.File, name)
		}
	}
}

func statesOf(settings []searchtest.Setting) int {
	n := 0
	for _, s := range settings {
		n += s.States
	}
	return n
}

func jsonOf(t *testing.T, s searchtest.Setting) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
