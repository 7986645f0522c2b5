package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestConcurrentPackages lists a module of its own: each way of being
// concurrent is found, tests do not count, and pure packages are left out.
func TestConcurrentPackages(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":              "module example.com/m\n\ngo 1.26\n",
		"pure/pure.go":        "package pure\n\nfunc Twice(n int) int { return 2 * n }\n",
		"pure/pure_test.go":   "package pure\n\nimport (\n\t\"sync\"\n\t\"testing\"\n)\n\nfunc TestTwice(t *testing.T) {\n\tvar wg sync.WaitGroup\n\twg.Go(func() { Twice(1) })\n\tgo Twice(2)\n\twg.Wait()\n}\n",
		"starts/starts.go":    "package starts\n\nfunc Start(f func()) { go f() }\n",
		"locks/locks.go":      "package locks\n\nimport \"sync\"\n\ntype Counter struct {\n\tmu sync.Mutex\n\tn  int\n}\n",
		"atomics/atomics.go":  "package atomics\n\nimport \"sync/atomic\"\n\nvar _ atomic.Int64\n",
		"chans/chans.go":      "package chans\n\ntype Gate struct{ c chan struct{} }\n",
		"other/other.go":      "package other\n\nimport \"strings\"\n\nvar _ = strings.ToUpper\n",
		"nested/deep/deep.go": "package deep\n\nfunc Later(f func()) func() { return func() { go f() } }\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	pkgs, err := list([]string{"./..."})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pkgs {
		yes, err := concurrent(p)
		if err != nil {
			t.Fatal(err)
		}
		if yes {
			got = append(got, p.ImportPath)
		}
	}
	slices.Sort(got)
	want := []string{"example.com/m/atomics", "example.com/m/chans", "example.com/m/locks", "example.com/m/nested/deep", "example.com/m/starts"}
	if !slices.Equal(got, want) {
		t.Errorf("concurrent packages %q, want %q", got, want)
	}
}

// TestUnparsableFileIsAnError: a file that does not parse is named, not
// taken as pure.
func TestUnparsableFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.go"), []byte("package bad\n\nfunc {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := concurrent(pkg{ImportPath: "example.com/bad", Dir: dir, GoFiles: []string{"bad.go"}})
	if err == nil {
		t.Fatal("a file that does not parse was taken as pure")
	}
	if want := filepath.Join(dir, "bad.go"); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s", err, want)
	}
}
