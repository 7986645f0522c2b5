package engine_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxPackageLines is issue 11's rule for every package of the module: no
// more lines than this in its non-test Go files. A package that grows past
// it is split by concern, not squeezed.
const maxPackageLines = 2500

// TestNoPackageOverMaxLines counts every line of every non-test .go file
// (build-tagged ones too), package by package, over the whole module, as
// `cat *.go | wc -l` would without the tests.
func TestNoPackageOverMaxLines(t *testing.T) {
	t.Parallel()
	lines := map[string]int{}
	walkModule(t, func(pkg, _ string, data []byte) {
		lines[pkg] += bytes.Count(data, []byte("\n"))
	})
	// The walk itself must have seen the module, or the rule holds by
	// looking at nothing.
	if lines["engine"] == 0 || lines["scenario"] == 0 {
		t.Fatalf("the walk found no engine or scenario package: %v", lines)
	}
	pkgs := make([]string, 0, len(lines))
	for p := range lines {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	for _, p := range pkgs {
		n := lines[p]
		t.Logf("%5d %s", n, p)
		if n > maxPackageLines {
			t.Errorf("package %s has %d lines of non-test Go, over %d: split it by concern", p, n, maxPackageLines)
		}
	}
}

// walkModule calls fn with every non-test .go file of the module (build-
// tagged ones too): its package's directory relative to the module root,
// its path and its contents. It skips what the go command leaves out, and
// nested modules.
func walkModule(t *testing.T, fn func(pkg, path string, data []byte)) {
	t.Helper()
	root := moduleRoot(t)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == root {
				return nil
			}
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(rel), path, data)
		return nil
	})
	if err != nil {
		t.Fatalf("walking the module at %s: %v", root, err)
	}
}

// moduleRoot is the directory of the go.mod above the test's working
// directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}
