//go:build unix

package pgserver

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A new entry replaces those made by an older build of the same initdb
// or by binaries since removed, and leaves the entries of other binaries
// alone; it removes the lock files nobody holds (left by starts killed
// while making an entry) and leaves those held, its own among them; the
// entry it writes is a whole copy, found by copyFromTemplate.
func TestSaveTemplateReplacesOnlyEntriesOfTheSameInitdb(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	old := func(name, initdb string) {
		if err := os.MkdirAll(filepath.Join(cache, name, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cache, name, templateMarker), []byte(initdb), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old("cluster-older", "/opt/pg/bin/initdb")
	other := filepath.Join(t.TempDir(), "initdb") // other binaries, still there
	if err := os.WriteFile(other, nil, 0o700); err != nil {
		t.Fatal(err)
	}
	old("cluster-other", other)
	old("cluster-gone", filepath.Join(t.TempDir(), "removed", "initdb"))
	old("not-a-cluster", "/opt/pg/bin/initdb")

	data := filepath.Join(t.TempDir(), "data")
	for _, f := range []string{"PG_VERSION", "global/pg_control", "base/1/1259"} {
		p := filepath.Join(data, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	entry := filepath.Join(cache, "cluster-new")
	if err := os.WriteFile(filepath.Join(cache, ".lock-cluster-killed"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, lock := range []string{clusterLock(entry), filepath.Join(cache, ".lock-cluster-busy")} {
		release, err := lockCache(t.Context(), lock, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
	}
	saveTemplate(entry, data, "/opt/pg/bin/initdb")

	var names []string
	list, _ := os.ReadDir(cache)
	for _, e := range list {
		names = append(names, e.Name())
	}
	if want := []string{".lock-cluster-busy", ".lock-cluster-new", "cluster-new", "cluster-other", "not-a-cluster"}; !slices.Equal(names, want) {
		t.Errorf("the cache holds %v, want %v", names, want)
	}
	copied := filepath.Join(t.TempDir(), "data")
	if !copyFromTemplate(entry, copied, nil) {
		t.Fatal("copyFromTemplate found no usable entry")
	}
	for _, f := range []string{"PG_VERSION", "global/pg_control", "base/1/1259"} {
		b, err := os.ReadFile(filepath.Join(copied, f))
		if err != nil || string(b) != f {
			t.Errorf("%s in the copy: %q, %v", f, b, err)
		}
		fi, err := os.Stat(filepath.Join(copied, f))
		if err == nil && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s in the copy has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	// An entry without PG_VERSION is not a cluster: initdb runs instead,
	// and nothing is left where the copy would have gone.
	if copyFromTemplate(filepath.Join(cache, "cluster-other"), filepath.Join(t.TempDir(), "data"), nil) {
		t.Error("an entry without PG_VERSION was copied")
	}
}
