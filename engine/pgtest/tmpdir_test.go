package pgtest

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leaserace/leaserace/engine/pgserver"
)

// The package's tests, and the servers they start, keep their files in
// the directory Main made on the memory filesystem.
func TestTemporaryFilesLiveInMainsDirectory(t *testing.T) {
	t.Parallel()
	h := mustHarness(t)
	if h.tmp.dir == "" {
		t.Skipf("Main made no temporary directory: %s", h.tmpWhy)
	}
	if got := os.TempDir(); got != h.tmp.dir {
		t.Errorf("os.TempDir() = %s, want Main's %s", got, h.tmp.dir)
	}
	if parent, ok, why := memoryFS(); !ok || filepath.Dir(h.tmp.dir) != parent {
		t.Errorf("%s is not on the memory filesystem %q (%s)", h.tmp.dir, parent, why)
	}
	fi, err := os.Stat(h.tmp.dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&(os.ModeSticky|os.ModePerm) != os.ModeSticky|0o777 {
		t.Errorf("%s has mode %v, want drwxrwxrwt like /tmp", h.tmp.dir, fi.Mode())
	}
	if os.Getenv(envTestDSN) != "" {
		return // the server is someone else's
	}
	u, err := url.Parse(DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	if host := u.Query().Get("host"); !strings.HasPrefix(host, h.tmp.dir+string(filepath.Separator)+pgserver.ClusterDirPrefix) {
		t.Errorf("the package's cluster lives in %s, not in %s", host, h.tmp.dir)
	}
}

func TestTemporaryDirectoryCloseNamesALeakedCluster(t *testing.T) {
	t.Parallel()
	for _, leak := range []bool{false, true} {
		dir, err := os.MkdirTemp("", "lrs")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.MkdirAll(filepath.Join(dir, "go-build1", "b001"), 0o755); err != nil {
			t.Fatal(err)
		}
		cluster := filepath.Join(dir, pgserver.ClusterDirPrefix+"123")
		if leak {
			if err := os.MkdirAll(filepath.Join(cluster, "data"), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		err = scratchTmp{dir: dir}.close()
		switch {
		case leak && (err == nil || !strings.Contains(err.Error(), cluster)):
			t.Errorf("a cluster left behind: close said %v, want an error naming %s", err, cluster)
		case !leak && err != nil:
			t.Errorf("nothing left behind but a build directory: close said %v", err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("leak=%v: %s is still there (%v)", leak, dir, err)
		}
	}
}
