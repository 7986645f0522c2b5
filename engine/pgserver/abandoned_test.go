//go:build unix

package pgserver

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The sweep removes a cluster directory whose owner was killed before its
// server ever ran (no lock file), and nothing it cannot be sure of.
func TestRemoveAbandonedByOwner(t *testing.T) {
	me := mustCurrentOwner(t)
	dead := killedOwner(t)
	parent := t.TempDir()
	cluster := func(name string, o *owner) string {
		t.Helper()
		dir := filepath.Join(parent, name)
		// As initdb leaves it when killed: a data directory, no lock file.
		if err := os.MkdirAll(filepath.Join(dir, "data", "base"), 0o700); err != nil {
			t.Fatal(err)
		}
		if o != nil {
			if err := writeOwnerFile(dir, *o); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	elsewhere := dead
	elsewhere.host = "elsewhere"
	abandoned := cluster("leaserace-pg-killed", &dead)
	kept := []string{
		cluster("leaserace-pg-alive", &me),
		cluster("leaserace-pg-elsewhere", &elsewhere),
		cluster("leaserace-pg-making", nil), // the owner file comes next
		cluster("someone-elses-pg-killed", &dead),
	}
	torn := cluster("leaserace-pg-torn", nil)
	if err := os.WriteFile(filepath.Join(torn, ownerFile), []byte("pid=1\nstart="), 0o644); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, torn)
	// A link to a killed owner's directory: the sweep must not follow it.
	target := cluster("target", &dead)
	if err := os.Symlink(target, filepath.Join(parent, "leaserace-pg-link")); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, target, filepath.Join(parent, "leaserace-pg-link"))
	if os.Geteuid() == 0 {
		// An owner file another user planted names a killed process of
		// ours, but it is not ours.
		planted := cluster("leaserace-pg-planted", &dead)
		if err := os.Chown(filepath.Join(planted, ownerFile), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, planted)
	}

	var progress progressLines
	removeAbandoned(parent, &me, -1, progress.add)

	if _, err := os.Lstat(abandoned); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v)", abandoned, err)
	}
	for _, dir := range kept {
		if _, err := os.Lstat(dir); err != nil {
			t.Errorf("%s was removed: %v", dir, err)
		}
	}
	want := []string{"removed " + abandoned + ", a cluster left by leaserace process " + strconv.Itoa(dead.pid) + ", which is gone"}
	if !slices.Equal(progress.lines, want) {
		t.Errorf("progress:\n%s\nwant:\n%s", strings.Join(progress.lines, "\n"), strings.Join(want, "\n"))
	}
}

// The run mark from LEASERACE_RUN_MARK goes with the owner into a
