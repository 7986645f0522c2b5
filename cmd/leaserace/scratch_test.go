package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinaryRunsFromScratch: the binary deploy/Dockerfile puts in an image
// FROM scratch needs nothing else. It is static (no interpreter, no shared
// library), and, chrooted into a directory that holds only it, as the image
// holds only it, it starts, prints its version and serve's help.
func TestBinaryRunsFromScratch(t *testing.T) {
	t.Parallel()
	f, err := elf.Open(built.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary asks for a program interpreter: it is not static")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v (%v)", libs, err)
	}

	if os.Geteuid() != 0 {
		t.Skip("chroot needs root: checked only that the binary is static")
	}
	root := t.TempDir()
	data, err := os.ReadFile(built.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "leaserace"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--version"}, {"serve", "--help"}} {
		out, err := exec.Command("chroot", append([]string{root, "/leaserace"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("leaserace %v in an empty root: %v\n%s", args, err, out)
		}
		if want := map[bool]string{true: "leaserace ", false: "--room-idle"}[args[0] == "--version"]; !strings.Contains(string(out), want) {
			t.Errorf("leaserace %v in an empty root printed no %q:\n%s", args, want, out)
		}
	}
}
