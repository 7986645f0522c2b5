package engine_test

import (
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/leaserace/leaserace/"

// layers say where a top-level directory stands in the module's one-way
// imports: cmd → workshop → tui, sshroom → engine → scenario → assets. A
// package may import module packages of lower layers and of its own tree.
func layers() map[string]int {
	return map[string]int{
		"cmd":      5,
		"workshop": 4,
		"tui":      3,
		"sshroom":  3,
		"engine":   2,
		"scenario": 1,
		"assets":   0,
	}
}

// importRule is a rule of the guide's layout that the layers alone do not
// say: an import some packages may not make.
type importRule struct {
	// who is the package tree the rule binds ("tui" binds tui and tui/...).
	who string
	// banned is an import path prefix those packages may not import.
	banned string
	why    string
}

func importRules() []importRule {
	return []importRule{
		{"tui", "github.com/jackc/pgx", "the TUI reaches PostgreSQL only through the engine"},
		{"workshop", "github.com/jackc/pgx", "the room reaches PostgreSQL only through the engine"},
		{"cmd", "github.com/jackc/pgx", "commands reach PostgreSQL only through the engine"},
		{"cmd", modulePath + "tui/styles", "the explore map is the TUI's component, styles and all"},
		{"scenario", "github.com/jackc/pgx", "scenario is data and validation: no database"},
		{"scenario", "github.com/charmbracelet/", "scenario is data and validation: no terminal"},
		{"engine", "github.com/charmbracelet/", "the engine runs moves; drawing them is the TUI's"},
		{"tui/lanes", "github.com/charmbracelet/", "the lane diagram is data: the screen and the exports draw it"},
		{"sshroom", modulePath, "sshroom serves any Bubble Tea program and knows nothing of leaserace"},
	}
}

// TestImportsPointOneWay reads the imports of every non-test file of the
// module and holds them to the layers and the rules above.
func TestImportsPointOneWay(t *testing.T) {
	layerOf := layers()
	fset := token.NewFileSet()
	seen := map[string]bool{}
	walkModule(t, func(pkg, path string, data []byte) {
		f, err := parser.ParseFile(fset, path, data, parser.ImportsOnly)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		top, _, _ := strings.Cut(pkg, "/")
		from, ok := layerOf[top]
		if !ok {
			t.Errorf("%s: package %s is in no layer of the layout; add its directory to layerOf", path, pkg)
			return
		}
		seen[top] = true
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range importRules() {
				if (pkg == r.who || strings.HasPrefix(pkg, r.who+"/")) && strings.HasPrefix(imp, r.banned) && !inTree(imp, modulePath+pkg) {
					t.Errorf("%s imports %s: %s", path, imp, r.why)
				}
			}
			rel, ok := strings.CutPrefix(imp, modulePath)
			if !ok {
				continue
			}
			itop, _, _ := strings.Cut(rel, "/")
			if itop == top {
				continue
			}
			if to, ok := layerOf[itop]; !ok || to >= from {
				t.Errorf("%s (package %s) imports %s: imports point cmd → workshop → tui, sshroom → engine → scenario → assets", path, pkg, rel)
			}
		}
	})
	for top := range layerOf {
		if !seen[top] {
			t.Errorf("no Go file found under %s/: the walk missed the module, or layerOf is stale", top)
		}
	}
}

// inTree reports whether imp is pkg or below it (sshroom/sshtest may
// import sshroom).
func inTree(imp, pkg string) bool {
	return imp == pkg || strings.HasPrefix(imp, pkg+"/") || strings.HasPrefix(pkg, imp+"/")
}
