// Package zonkytest builds, from this machine's own PostgreSQL binaries, a
// jar laid out like zonky.io's embedded-postgres-binaries, and serves it
// from a loopback Maven repository: the embedded provider's tests download
// a real server without the internet.
package zonkytest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/leaserace/leaserace/engine/pgserver"
)

// Version is the version the jar is published under. Its server is the
// machine's own PostgreSQL, whatever its version.
const Version = "15.0.0-leaserace-test"

// Jar is a built jar and its sha256 in hex.
type Jar struct {
	Bytes []byte
	Sum   string
}

// The jars of this test process, each built on first use: building costs
// time, and every test may share them, as nothing changes them.
var (
	tree       = sync.OnceValues(buildTree)
	stored     = sync.OnceValues(func() (Jar, error) { return buildJar(storedXz) })
	compressed = sync.OnceValues(func() (Jar, error) { return buildJar(xzCommand) })
)

// Get returns the jar whose .txz keeps the tree in stored (uncompressed)
// LZMA2 chunks: a real xz file that the provider's decoder reads like any
// other, at the cost of a copy. Unpacking a compressed one takes 0.9 s
// here, and 11 s under the race detector, in every test that downloads.
// It skips the test when this machine has no Debian-layout PostgreSQL to
// build the jar from.
func Get(t testing.TB) Jar { t.Helper(); return jarOrSkip(t, stored) }

// Compressed returns a jar as zonky's are, its .txz compressed by the xz
// command: for the tests and benchmarks that must decompress real LZMA2.
// It skips, as Get does, and also without an xz command.
func Compressed(t testing.TB) Jar { t.Helper(); return jarOrSkip(t, compressed) }

func jarOrSkip(t testing.TB, build func() (Jar, error)) Jar {
	t.Helper()
	j, err := build()
	if errors.Is(err, errNoBinaries) || errors.Is(err, errNoXz) {
		if os.Getenv("LEASERACE_REQUIRE_POSTGRES") == "1" {
			t.Fatalf("LEASERACE_REQUIRE_POSTGRES=1: %v", err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("building the test jar: %v", err)
	}
	return j
}

var errNoXz = errors.New("no xz command (Debian: apt-get install xz-utils) to build the test jar with")

var errNoBinaries = errors.New("no PostgreSQL binaries in /usr/lib/postgresql/*/bin to build a jar from")

// buildTree lays out PostgreSQL as zonky's .txz does (bin/ of symlinks
// into lib/postgresql/N/bin, beside lib/postgresql/N/lib and
// share/postgresql/N; Debian's binaries find lib/ and share/ relative to
// themselves), without the JIT's bitcode, which zonky's builds do not have
// either. It returns the tar.
func buildTree() ([]byte, error) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		return nil, errNoBinaries
	}
	slices.Sort(bins)
	major := filepath.Base(filepath.Dir(filepath.Dir(bins[len(bins)-1])))
	var b bytes.Buffer
	if err := writeTar(&b, major); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// buildJar puts the tree, xz'd by xz, into a jar as zonky's hold it.
func buildJar(xz func(out *bytes.Buffer, tar []byte) error) (Jar, error) {
	t, err := tree()
	if err != nil {
		return Jar{}, err
	}
	var txz bytes.Buffer
	if err := xz(&txz, t); err != nil {
		return Jar{}, err
	}
	var jar bytes.Buffer
	zw := zip.NewWriter(&jar)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "postgres-linux-x86_64.txz", Method: zip.Store})
	if err != nil {
		return Jar{}, err
	}
	if _, err := w.Write(txz.Bytes()); err != nil {
		return Jar{}, err
	}
	if err := zw.Close(); err != nil {
		return Jar{}, err
	}
	sum := sha256.Sum256(jar.Bytes())
	return Jar{Bytes: jar.Bytes(), Sum: hex.EncodeToString(sum[:])}, nil
}

// xzCommand compresses through the xz command (Go has no encoder fast
// enough to build it for every test run). Preset 0: on this tree it takes
// 1.9 s of CPU where 1 took 3.2 s, for a jar 5 % larger that unpacks as
// fast.
func xzCommand(out *bytes.Buffer, tar []byte) error {
	path, err := exec.LookPath("xz")
	if err != nil {
		return fmt.Errorf("%w: %v", errNoXz, err)
	}
	cmd := exec.Command(path, "-0", "-T1", "-c")
	cmd.Stdin = bytes.NewReader(tar)
	cmd.Stdout = out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("xz: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

func writeTar(w io.Writer, major string) error {
	tw := tar.NewWriter(w)
	lib := "lib/postgresql/" + major
	trees := [][2]string{
		{"/usr/lib/postgresql/" + major + "/bin", lib + "/bin"},
		{"/usr/lib/postgresql/" + major + "/lib", lib + "/lib"},
		{"/usr/share/postgresql/" + major, "share/postgresql/" + major},
	}
	for _, tr := range trees {
		if err := addTree(tw, tr[0], tr[1]); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "bin/", Mode: 0o755}); err != nil {
		return err
	}
	names, err := os.ReadDir(trees[0][0])
	if err != nil {
		return err
	}
	for _, n := range names {
		h := &tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + n.Name(), Linkname: "../" + lib + "/bin/" + n.Name(), Mode: 0o777}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
	}
	return tw.Close()
}

// addTree adds src as dst, following symlinks except a relative one to a
// neighbour (postmaster -> postgres), which stays a link.
func addTree(tw *tar.Writer, src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() && d.Name() == "bitcode" {
			return filepath.SkipDir
		}
		name := filepath.ToSlash(filepath.Join(dst, rel))
		if d.Type()&fs.ModeSymlink != 0 {
			if target, err := os.Readlink(p); err == nil && !strings.Contains(target, "/") {
				return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777})
			}
		}
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755})
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(fi.Mode().Perm()), Size: fi.Size()}); err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
}

// Mirror is a Maven-layout repository on loopback serving one jar.
type Mirror struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
	jars     int
}

// Serve says how a Mirror answers.
type Serve struct {
	// Jar is the jar's body; Sum the .sha256's ("" for none: 404).
	Jar []byte
	Sum string
	// Hang answers the jar's request with nothing until the client goes.
	Hang bool
	// CutAfter, when above zero, promises the whole jar but hangs up after
	// this many bytes.
	CutAfter int
}

// NewMirror serves s, for any version, until the test ends.
func NewMirror(t testing.TB, s Serve) *Mirror {
	t.Helper()
	m := &Mirror{}
	// Every version of this machine's artifact: the jar is the machine's
	// own PostgreSQL whatever version is asked for.
	artifacts := path.Dir(path.Dir(pgserver.EmbeddedJarURL("", Version))) + "/"
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.requests++
		m.mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, artifacts) && strings.HasSuffix(r.URL.Path, ".jar"):
			m.mu.Lock()
			m.jars++
			m.mu.Unlock()
			if s.Hang {
				<-r.Context().Done()
				return
			}
			w.Header().Set("Content-Length", fmt.Sprint(len(s.Jar)))
			if s.CutAfter > 0 {
				w.Write(s.Jar[:s.CutAfter])
				if hj, ok := w.(http.Hijacker); ok {
					if c, _, err := hj.Hijack(); err == nil {
						c.Close()
					}
				}
				return
			}
			w.Write(s.Jar)
		case strings.HasPrefix(r.URL.Path, artifacts) && strings.HasSuffix(r.URL.Path, ".jar.sha256"):
			if s.Sum == "" {
				http.NotFound(w, r)
				return
			}
			io.WriteString(w, s.Sum)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(m.Close)
	return m
}

// Requests counts the requests the mirror has had.
func (m *Mirror) Requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests
}

// JarRequests counts the requests for the jar itself: one per download,
// whatever the .sha256 beside it was asked.
func (m *Mirror) JarRequests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.jars
}

// OpenDir is a new directory the postgres user can walk into (the server
// runs as that user when the tests run as root), removed after the test.
func OpenDir(t testing.TB, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
