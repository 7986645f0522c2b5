package engine_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/leaserace/leaserace/"

// layers say where a top-level directory stands in the module's one-way
// imports: cmd → workshop → tui, sshroom → engine → scenario → assets. A
// package may import module packages of lower layers and of its own tree.
// internal holds leaves every layer may use (see leaves).
func layers() map[string]int {
	return map[string]int{
		"cmd":      5,
		"workshop": 4,
		"tui":      3,
		"sshroom":  3,
		"engine":   2,
		"scenario": 1,
		"assets":   0,
		"internal": 0,
	}
}

// importRule is a rule of the guide's layout that the layers alone do not
// say: an import some packages may not make.
type importRule struct {
	// who is the package tree the rule binds ("tui" binds tui and tui/...).
	who string
	// banned is an import path prefix those packages may not import. A
	// leaf under internal/ is never banned: it imports nothing.
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
	t.Parallel()
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
				if (pkg == r.who || strings.HasPrefix(pkg, r.who+"/")) && strings.HasPrefix(imp, r.banned) && !inTree(imp, modulePath+pkg) && !isLeaf(strings.TrimPrefix(imp, modulePath)) {
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

// leaves are the packages under internal/: small pieces every layer uses,
// such as the one queue of the room's path (internal/coalesce). A leaf
// imports only the standard library, so using it pulls nothing in.
func isLeaf(pkg string) bool { return pkg == "internal" || strings.HasPrefix(pkg, "internal/") }

// TestLeavesImportOnlyTheStandardLibrary holds every package under
// internal/ to the standard library.
func TestLeavesImportOnlyTheStandardLibrary(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	seen := 0
	walkModule(t, func(pkg, path string, data []byte) {
		if !isLeaf(pkg) {
			return
		}
		seen++
		f, err := parser.ParseFile(fset, path, data, parser.ImportsOnly)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s: a leaf under internal/ imports only the standard library", path, imp)
			}
		}
	})
	if seen == 0 {
		t.Error("no Go file found under internal/: the walk missed it, or the queue moved")
	}
}

// TestOneWayIntoAProgram: a message reaches a Bubble Tea program of the
// module only through a coalesce.Queue (tui.Inbox, sshroom's
// Session.Inbox), delivered by its Deliver. A channel of tea.Msg in
// non-test code would be a second way in, with drop rules of its own.
func TestOneWayIntoAProgram(t *testing.T) {
	t.Parallel()
	walkModule(t, func(pkg, path string, data []byte) {
		for i, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "chan tea.Msg") {
				t.Errorf("%s:%d: a channel of tea.Msg: send messages into a program through its inbox (a coalesce.Queue), the one way in (docs/room-path.md)", path, i+1)
			}
		}
	})
}

// roomPath are the packages a presenter's key passes through on its way
// to an attendee's frame (docs/room-path.md), but for the TUI itself.
func roomPath() []string { return []string{"sshroom", "workshop", "engine/room", "tui/outbox"} }

// TestNoHandWrittenQueuesOnTheRoomPath: on the room's path, a select that
// sends a value unless the channel is full (a send case beside default)
// is a queue with a drop rule of its own. Only a wake-up, struct{}{}, may
// be sent that way; values wait in a coalesce.Queue.
func TestNoHandWrittenQueuesOnTheRoomPath(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	walkModule(t, func(pkg, path string, data []byte) {
		if !slices.ContainsFunc(roomPath(), func(p string) bool { return pkg == p || strings.HasPrefix(pkg, p+"/") }) {
			return
		}
		f, err := parser.ParseFile(fset, path, data, 0)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectStmt)
			if !ok {
				return true
			}
			var sends []*ast.SendStmt
			hasDefault := false
			for _, c := range sel.Body.List {
				cc := c.(*ast.CommClause)
				switch comm := cc.Comm.(type) {
				case nil:
					hasDefault = true
				case *ast.SendStmt:
					sends = append(sends, comm)
				}
			}
			if !hasDefault {
				return true
			}
			for _, send := range sends {
				if !isEmptyStruct(send.Value) {
					t.Errorf("%s: a send of a value that is dropped when the channel is full: a hand-written queue on the room's path; use coalesce.Queue (docs/room-path.md)",
						fset.Position(send.Pos()))
				}
			}
			return true
		})
	})
}

// isEmptyStruct says whether e is the literal struct{}{}.
func isEmptyStruct(e ast.Expr) bool {
	lit, ok := e.(*ast.CompositeLit)
	if !ok || len(lit.Elts) != 0 {
		return false
	}
	st, ok := lit.Type.(*ast.StructType)
	return ok && len(st.Fields.List) == 0
}

// inTree reports whether imp is pkg or below it (sshroom/sshtest may
// import sshroom).
func inTree(imp, pkg string) bool {
	return imp == pkg || strings.HasPrefix(imp, pkg+"/") || strings.HasPrefix(pkg, imp+"/")
}

// lightCore are the packages that must build without the container
// provider: the engine, its room and batch runners, the other providers,
// the renderer and the TUI. Only engine/pgserver/pgcontainer (and what
// wires it: choose, cmd, containertest) may pull Docker in.
func lightCore() []string {
	return []string{"engine", "engine/room", "engine/batch", "engine/pgserver", "engine/pgtest", "tui/screen", "tui", "workshop", "sshroom"}
}

// isDockerPackage names the import paths of the container stack.
func isDockerPackage(path string) bool {
	return strings.Contains(path, "testcontainers") || strings.Contains(path, "docker") || strings.Contains(path, "moby")
}

// TestCoreBuildsWithoutDocker asks the go command for every package the
// light core builds with, its dependencies' dependencies too, and fails
// naming the chain of imports that reaches testcontainers, Docker or moby.
func TestCoreBuildsWithoutDocker(t *testing.T) {
	t.Parallel()
	graph := importGraph(t, lightCore()...)
	for _, pkg := range lightCore() {
		if chain := importChain(graph, modulePath+pkg, isDockerPackage); chain != nil {
			t.Errorf("%s builds with %s (%s): the container stack belongs to engine/pgserver/pgcontainer; what the core needs of it goes in a small package such as engine/pgdsn",
				pkg, chain[len(chain)-1], strings.Join(chain, " → "))
		}
	}
}

// TestOnlyContainerTestsLinkDocker: a test binary links the container
// stack (89 packages, about 5 s of CPU a run to link and start) only when
// its package's tests run containers, which they say by calling
// containertest.Main, or when the package itself builds with it.
func TestOnlyContainerTestsLinkDocker(t *testing.T) {
	t.Parallel()
	graph := importGraphOf(t, "-test", "./...")
	const containertest = modulePath + "engine/pgtest/containertest"
	binaries := 0
	for node := range graph {
		pkg, ok := strings.CutSuffix(node, ".test")
		if !ok || !strings.HasPrefix(pkg, modulePath) {
			continue
		}
		binaries++
		chain := importChain(graph, node, isDockerPackage)
		if chain == nil || importChain(graph, node, func(p string) bool {
			path, _, _ := strings.Cut(p, " ") // and its test variants
			return path == containertest
		}) != nil {
			continue
		}
		if importChain(graph, pkg, isDockerPackage) != nil {
			continue // the package itself runs containers (cmd/leaserace)
		}
		t.Errorf("the tests of %s link the container stack (%s) without calling containertest.Main: keep Docker out of them, or run containers through containertest",
			strings.TrimPrefix(pkg, modulePath), strings.Join(chain, " → "))
	}
	if binaries < 20 {
		t.Fatalf("go list -test found %d test binaries of the module, fewer than it has", binaries)
	}
}

// maxScreenDeps bounds the packages tui/screen builds with: half the 420
// it had while the engine pulled in PostgreSQL, HTTP and the container
// stack. The renderer draws data; it needs the engine's types, not the
// engine.
const maxScreenDeps = 210

// TestScreenBuildsLight counts the packages the renderer builds with.
func TestScreenBuildsLight(t *testing.T) {
	t.Parallel()
	graph := importGraph(t, "tui/screen")
	if n := len(graph); n > maxScreenDeps {
		var heavy []string
		for _, p := range []string{"engine", "engine/room", "engine/search", "engine/batch", "engine/resource", "github.com/jackc/pgx/v5", "net/http"} {
			if _, ok := graph[p]; ok {
				heavy = append(heavy, p)
			} else if _, ok := graph[modulePath+p]; ok {
				heavy = append(heavy, p)
			}
		}
		t.Errorf("tui/screen builds with %d packages, over %d; among them %v: move the types it draws into light packages (world, transcript, sweep, room/board)", n, maxScreenDeps, heavy)
	}
}

// importGraph is each package pkgs build with and its imports, as `go list
// -deps` reports them for this module.
func importGraph(t *testing.T, pkgs ...string) map[string][]string {
	t.Helper()
	args := make([]string, len(pkgs))
	for i, p := range pkgs {
		args[i] = "./" + p
	}
	graph := importGraphOf(t, args...)
	for _, p := range pkgs {
		if _, ok := graph[modulePath+p]; !ok {
			t.Fatalf("go list -deps did not list %s", p)
		}
	}
	return graph
}

// importGraphOf is importGraph for go list's own arguments (flags such as
// -test, and patterns).
func importGraphOf(t *testing.T, listArgs ...string) map[string][]string {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH, and the import graph comes from go list: %v", err)
	}
	// Tabs between fields: a test variant's path has a space in it
	// ("p [p.test]").
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}}\t{{join .Imports \"\\t\"}}"}, listArgs...)
	cmd := exec.Command(gocmd, args...)
	cmd.Dir = moduleRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, stderr.String())
	}
	graph := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimRight(line, "\n"), "\t")
		if f[0] != "" {
			graph[f[0]] = slices.DeleteFunc(f[1:], func(imp string) bool { return imp == "" })
		}
	}
	return graph
}

// importChain is the shortest chain of imports from pkg to a package bad
// says yes to, or nil when pkg builds without any.
func importChain(graph map[string][]string, pkg string, bad func(string) bool) []string {
	from := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if bad(p) {
			var chain []string
			for ; p != ""; p = from[p] {
				chain = append([]string{strings.TrimPrefix(p, modulePath)}, chain...)
			}
			return chain
		}
		for _, imp := range graph[p] {
			if _, seen := from[imp]; !seen {
				from[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return nil
}

// TestEveryPackageHasADoc finds, for every package of the module, a non-test
// file whose package clause carries a doc comment.
func TestEveryPackageHasADoc(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	doc := map[string]bool{}
	walkModule(t, func(pkg, path string, data []byte) {
		f, err := parser.ParseFile(fset, path, data, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		doc[pkg] = doc[pkg] || f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != ""
	})
	if len(doc) == 0 {
		t.Fatal("the walk found no package")
	}
	for pkg, ok := range doc {
		if !ok {
			t.Errorf("package %s has no doc comment: say what it is for above its package clause (a doc.go will do)", pkg)
		}
	}
}
