// Command racepkgs lists the packages CI's race phase tests: those whose
// own code (not its tests) is concurrent. A package is when one of its
// files has a go statement or a channel type, or imports sync, sync/atomic
// or golang.org/x/sync: it starts goroutines, or is made to be shared by
// them. The race detector finds races only where goroutines
// share memory, so a package of pure functions (a renderer, a format, a
// parser) is left to go test ./..., even when its tests drive concurrent
// code of another package: that package's own tests run under the
// detector.
//
//	go run ./.ci/racepkgs [PATTERN...]   (default ./...)
//
// It prints one import path per line, sorted, and exits 1 when a package
// cannot be listed or a file cannot be parsed.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// pkg is what go list -json says of a package that racepkgs reads.
type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
}

func main() {
	patterns := os.Args[1:]
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	pkgs, err := list(patterns)
	if err != nil {
		fmt.Fprintln(os.Stderr, "racepkgs:", err)
		os.Exit(1)
	}
	var out []string
	for _, p := range pkgs {
		yes, err := concurrent(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "racepkgs:", err)
			os.Exit(1)
		}
		if yes {
			out = append(out, p.ImportPath)
		}
	}
	slices.Sort(out)
	for _, p := range out {
		fmt.Println(p)
	}
}

// list runs go list -json on patterns.
func list(patterns []string) ([]pkg, error) {
	cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Dir,GoFiles,CgoFiles"}, patterns...)...)
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", strings.Join(patterns, " "), err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading go list's output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

// concurrent says whether one of p's files starts a goroutine, uses a
// channel, or imports a package for sharing memory between goroutines.
func concurrent(p pkg) (bool, error) {
	fset := token.NewFileSet()
	for _, name := range slices.Concat(p.GoFiles, p.CgoFiles) {
		path := filepath.Join(p.Dir, name)
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return false, fmt.Errorf("parsing %s: %w", path, err)
		}
		for _, imp := range f.Imports {
			ip, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return false, fmt.Errorf("%s: import %s: %w", fset.Position(imp.Pos()), imp.Path.Value, err)
			}
			if ip == "sync" || ip == "sync/atomic" || ip == "golang.org/x/sync" || strings.HasPrefix(ip, "golang.org/x/sync/") {
				return true, nil
			}
		}
		found := false
		ast.Inspect(f, func(n ast.Node) bool {
			switch n.(type) {
			case *ast.GoStmt, *ast.ChanType:
				found = true
			}
			return !found
		})
		if found {
			return true, nil
		}
	}
	return false, nil
}
