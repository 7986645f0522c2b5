package scenario

import (
	"fmt"
	"io/fs"
	"os"
	"path"
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
