package scenario

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/leaserace/leaserace/assets"
)

// BuiltinNames lists the built-in scenarios: the race first, then the
// seeds' other cases, then the stories from real incidents.
func BuiltinNames() []string {
	entries, err := fs.ReadDir(assets.FS, "scenarios")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, n)
		}
	}
	order := map[string]int{
		"renewal-race": 0, "control": 1, "busy-holder": 2, "revoked-writer": 3,
		"paused-holder": 4, "river-reelect": 5, "slow-renewal": 6, "zombie-producer": 7,
	}
	sort.SliceStable(names, func(i, j int) bool {
		oi, iok := order[names[i]]
		oj, jok := order[names[j]]
		switch {
		case iok && jok:
			return oi < oj
		case iok != jok:
			return iok
		}
		return names[i] < names[j]
	})
	return names
}

// BuiltinSource returns a built-in scenario's YAML text.
func BuiltinSource(name string) ([]byte, error) {
	for _, n := range BuiltinNames() {
		if n == name {
			return fs.ReadFile(assets.FS, path.Join("scenarios", name+".yaml"))
		}
	}
	return nil, fmt.Errorf("no built-in scenario %q (built-ins: %s)", name, strings.Join(BuiltinNames(), ", "))
}

// Builtin loads a built-in scenario by name.
func Builtin(name string) (*Scenario, error) {
	src, err := BuiltinSource(name)
	if err != nil {
		return nil, err
	}
	s, err := Parse("builtin:"+name, src)
	if err != nil {
		return nil, fmt.Errorf("built-in scenario is broken: %w", err)
	}
	s.Source = "builtin"
	return s, nil
}

// Builtins loads every built-in scenario.
func Builtins() ([]*Scenario, error) {
	var out []*Scenario
	for _, n := range BuiltinNames() {
		s, err := Builtin(n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Load resolves what a person typed after --scenario: a built-in name, or a
// path to a YAML file.
func Load(nameOrFile string) (*Scenario, error) {
	if nameOrFile == "" {
		nameOrFile = "renewal-race"
	}
	if !strings.ContainsAny(nameOrFile, "/\\.") {
		if _, err := BuiltinSource(nameOrFile); err == nil {
			return Builtin(nameOrFile)
		}
		if _, err := os.Stat(nameOrFile); err != nil {
			return nil, fmt.Errorf("no built-in scenario %q and no such file (built-ins: %s)", nameOrFile, strings.Join(BuiltinNames(), ", "))
		}
	}
	return LoadFile(nameOrFile)
}

// Renaming is one change of words between releases: what matches Was
// (a regular expression) now reads Now ($1 and the like name its groups).
type Renaming struct {
	Was *regexp.Regexp
	Now string
}

// Renamed lists the words of the built-in scenarios, and of what a run
// says about them, that an earlier release wrote otherwise. The reports'
// values were "report v2'" and the like, which read like a lease_version
// and whose primes nothing explained; the fence went by "token" and
// "epoch" in the values; a lease was "A, fence 1, v1, expires 1060". A
// transcript recorded before is read with today's words through these,
// so that it still verifies against a live run.
func Renamed() []Renaming {
	var out []Renaming
	for _, p := range [][2]string{
		{"report v1 (A, fence 1)", "report #1 from A (fence 1)"},
		{"report v2 (B, fence 2)", "report #2 from B (fence 2)"},
		{"report v2' (A, fence 1)", "report #2 from A (fence 1)"},
		{"report v3 (B, fence 2)", "report #3 from B (fence 2)"},
		{"report v3' (A, fence 1)", "report #3 from A (fence 1)"},
		{"file v32 (token 32)", "file as of fence 32"},
		{"file v34 (B, token 34)", "file from B (fence 34)"},
		{"file v33' (A, token 33)", "file from A (fence 33)"},
		{"batch 1 (P1, epoch 5)", "batch 1 (P1, fence 5)"},
		{"batch 2 (P1, epoch 5)", "batch 2 (P1, fence 5)"},
		{"batch 2 (P2, epoch 6)", "batch 2 (P2, fence 6)"},
		{"batch 3 (P2, epoch 6)", "batch 3 (P2, fence 6)"},
	} {
		out = append(out, Renaming{Was: regexp.MustCompile(regexp.QuoteMeta(p[0])), Now: strings.ReplaceAll(p[1], "$", "$$")})
	}
	// The narration, the judgements and the resource's reasons, which
	// called the fence an epoch. They are matched in JSON text, where >
	// is written \u003e.
	n := `(-?[0-9]+)`
	for _, p := range [][2]string{
		// Lease.String: "A, fence 1, v1, expires 1060".
		{`(, fence -?[0-9]+), v` + n + `, expires `, "${1}, lease_version ${2}, expires "},
		{` with an epoch that is no longer current\.`, " with a lease that is no longer current."},
		{`\(its epoch is not current\)`, "(its lease is not current)"},
		{`renewed an epoch that was no longer current`, "renewed a lease that was no longer current"},
		{`'s write with epoch ` + n, "'s write with fence ${1}"},
		{` after a newer epoch \(`, " after a newer fence ("},
		{`; stored epoch ` + n + ` → ` + n + `\)`, "; stored fence ${1} → ${2})"},
		{`: stored epoch ` + n + ` (\\u003c|≤) new epoch ` + n + `: accepted`, ": the resource's highest fence accepted ${1} ${2} fence ${3}: accepted"},
		{` wants stored epoch (\\u003c|≤) new epoch, and`, " wants the resource's highest fence accepted ${1} the write's fence, and"},
		{`epoch ` + n + ` is not above the stored epoch ` + n + `: strict fencing accepts only epoch \\u003e stored`, "fence ${1} is not above the resource's highest fence accepted, ${2}: strict fencing accepts only a fence above it"},
		{`epoch ` + n + ` is below the stored epoch ` + n + `: monotonic fencing accepts epoch \\u003e= stored`, "fence ${1} is below the resource's highest fence accepted, ${2}: monotonic fencing accepts a fence at or above it"},
		{`new epoch ` + n + ` < highest accepted ` + n, "fence ${1} < the resource's highest fence accepted ${2}"},
		{`new epoch ` + n + ` \\u003c highest accepted ` + n, "fence ${1} \\u003c the resource's highest fence accepted ${2}"},
		{`highest accepted ` + n + ` ≤ new epoch ` + n, "the resource's highest fence accepted ${1} ≤ fence ${2}"},
	} {
		out = append(out, Renaming{Was: regexp.MustCompile(p[0]), Now: p[1]})
	}
	return out
}
