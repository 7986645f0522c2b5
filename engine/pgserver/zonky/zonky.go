// Package zonky fetches PostgreSQL binaries as zonky.io publishes them in
// Maven repositories (the builds github.com/fergusstrange/embedded-postgres
// runs): a jar holding one .txz of bin/, lib/ and share/. A fetch streams
// the jar to disk with progress, checks it against the repository's
// .sha256, unpacks it beside the cache and renames it into place whole, so
// the cache never holds a part.
package zonky

import (
	"archive/tar"
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/xi2/xz"
)

// JarURL is where a Maven-layout repository keeps the binaries of version
// for one system (zonky's names: "linux"/"amd64", "darwin"/"arm64v8").
func JarURL(mirror, system, arch, version string) string {
	artifact := "embedded-postgres-binaries-" + system + "-" + arch
	return strings.TrimRight(mirror, "/") + "/io/zonky/test/postgres/" + artifact + "/" + version + "/" + artifact + "-" + version + ".jar"
}

// Platform names this machine the way zonky's artifacts do.
func Platform() (system, arch string) {
	system, arch = runtime.GOOS, runtime.GOARCH
	if arch == "arm64" && (system == "linux" || system == "darwin") {
		arch = "arm64v8"
	}
	if system == "linux" {
		if _, err := os.Stat("/etc/alpine-release"); err == nil {
			arch += "-alpine" // musl, not glibc
		}
	}
	return system, arch
}

// ChecksumError is a download whose sha256 is not the one the repository
// publishes beside it. Nothing of it is cached.
type ChecksumError struct {
	URL       string
	Got, Want string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("the sha256 checksum of %s is %s, but %s.sha256 says %s: refusing the download (nothing was cached)", e.URL, e.Got, e.URL, e.Want)
}

// StallError is a mirror that sent nothing for a while.
type StallError struct {
	URL   string
	After time.Duration
}

func (e *StallError) Error() string {
	return fmt.Sprintf("%s sent nothing for %s: the mirror hangs (choose another with --pg-mirror or LEASERACE_PG_MIRROR)", e.URL, e.After)
}

// ErrNoTxz means a jar without the .txz archive the binaries come in.
var ErrNoTxz = errors.New("the jar holds no .txz archive of PostgreSQL binaries")

// ErrNotPostgres means an archive without bin/initdb and bin/postgres.
var ErrNotPostgres = errors.New("the archive holds no bin/initdb and bin/postgres")

// Fetch is one download into the cache.
type Fetch struct {
	// URL is the jar's; Version names it in progress and errors.
	URL, Version string
	Client       *http.Client
	// Stall gives up on a mirror that sends nothing for this long.
	Stall time.Duration
	// Progress, if not nil, hears what the fetch does.
	Progress func(string)
}

// partialPrefix starts the name of a download under way in the cache.
const partialPrefix = ".partial-"

// partialAbandonedAfter is how long a partial download must have been
// untouched before a later start removes it: far longer than the stall
// timeout, so a live download is never taken for a dead one.
const partialAbandonedAfter = 10 * time.Minute

// Into downloads, checks and unpacks the binaries as cacheRoot/name.
func (f Fetch) Into(ctx context.Context, cacheRoot, name string) error {
	if err := os.MkdirAll(cacheRoot, 0o755); err != nil {
		return fmt.Errorf("making the PostgreSQL cache directory: %w", err)
	}
	sweepPartials(cacheRoot, f.Progress)
	part, err := os.MkdirTemp(cacheRoot, partialPrefix+name+"-")
	if err != nil {
		return fmt.Errorf("writing to the PostgreSQL cache directory %s: %w", cacheRoot, err)
	}
	defer os.RemoveAll(part)
	jar := filepath.Join(part, "download.jar")
	got, err := f.download(ctx, f.URL, jar, true)
	if err != nil {
		return err
	}
	sumFile := filepath.Join(part, "download.sha256")
	if _, err := f.download(ctx, f.URL+".sha256", sumFile, false); err != nil {
		return fmt.Errorf("the checksum beside the jar: %w", err)
	}
	b, err := os.ReadFile(sumFile)
	if err != nil {
		return err
	}
	// The file may be "hex" or "hex  name", as sha256sum writes it.
	fields := strings.Fields(string(b))
	want := ""
	if len(fields) > 0 {
		want = strings.ToLower(fields[0])
	}
	if want != got {
		return &ChecksumError{URL: f.URL, Got: got, Want: want}
	}
	tree := filepath.Join(part, "pg")
	if err := os.Mkdir(tree, 0o755); err != nil {
		return err
	}
	// The directory is what the server's user walks into: not the umask's.
	if err := os.Chmod(tree, 0o755); err != nil {
		return err
	}
	say(f.Progress, "unpacking PostgreSQL "+f.Version)
	if err := unpackJar(jar, tree); err != nil {
		return fmt.Errorf("unpacking %s: %w", f.URL, err)
	}
	if !Installed(tree) {
		return fmt.Errorf("unpacking %s: %w", f.URL, ErrNotPostgres)
	}
	final := filepath.Join(cacheRoot, name)
	if err := os.Rename(tree, final); err != nil {
		if Installed(final) {
			return nil // another leaserace was quicker: same files
		}
		return fmt.Errorf("moving the binaries into the cache: %w", err)
	}
	return nil
}

// Installed tells whether dir holds the server's programs.
func Installed(dir string) bool {
	return isExecutable(filepath.Join(dir, "bin", "initdb")) && isExecutable(filepath.Join(dir, "bin", "postgres"))
}

// download writes url's body to file and returns its sha256. A body that
// stops for f.Stall is given up with a StallError; loud reports progress.
func (f Fetch) download(ctx context.Context, url, file string, loud bool) (string, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stalled := &StallError{URL: url, After: f.Stall}
	timer := time.AfterFunc(f.Stall, func() { cancel(stalled) })
	defer timer.Stop()
	fail := func(err error) (string, error) {
		if errors.Is(context.Cause(ctx), stalled) {
			return "", stalled
		}
		return "", fmt.Errorf("could not download PostgreSQL %s from %s: %w", f.Version, url, err)
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("the mirror URL gives a bad address %q: %w", url, err)
	}
	resp, err := f.Client.Do(req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("could not download PostgreSQL %s: the mirror answered %s for %s (it has no such version for this system, or is not a Maven repository)", f.Version, resp.Status, url)
	}
	out, err := os.Create(file)
	if err != nil {
		return "", fmt.Errorf("writing the download into the cache: %w", err)
	}
	defer out.Close()
	sum := sha256.New()
	meter := newMeter(f.Version, resp.ContentLength, f.Progress)
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, rerr := resp.Body.Read(buf)
		if k > 0 {
			timer.Reset(f.Stall)
			if _, err := out.Write(buf[:k]); err != nil {
				return "", fmt.Errorf("writing the download into the cache: %w", err)
			}
			sum.Write(buf[:k])
			n += int64(k)
			if loud {
				meter.update(n)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return fail(rerr)
		}
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return "", fmt.Errorf("could not download PostgreSQL %s from %s: it ended after %d of %d bytes", f.Version, url, n, resp.ContentLength)
	}
	if err := out.Close(); err != nil {
		return "", fmt.Errorf("writing the download into the cache: %w", err)
	}
	if loud {
		meter.finish(n)
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// meter turns bytes received into progress lines: one each tenth of the
// way (or each few seconds when the size is unknown), with the rate.
type meter struct {
	version   string
	total     int64
	start     time.Time
	said      time.Time
	lastTenth int64
	progress  func(string)
}

func newMeter(version string, total int64, progress func(string)) *meter {
	now := time.Now()
	return &meter{version: version, total: total, start: now, said: now, lastTenth: 0, progress: progress}
}

func (m *meter) update(n int64) {
	if m.total > 0 {
		if tenth := n * 10 / m.total; tenth != m.lastTenth && tenth < 10 {
			m.lastTenth = tenth
			m.say(n)
		}
		return
	}
	if time.Since(m.said) >= 2*time.Second {
		m.say(n)
	}
}

func (m *meter) finish(n int64) { m.say(n) }

func (m *meter) say(n int64) {
	m.said = time.Now()
	line := fmt.Sprintf("downloading PostgreSQL %s: %s", m.version, megabytes(n))
	if m.total > 0 {
		line += fmt.Sprintf(" of %s (%d%%)", megabytes(m.total), n*100/m.total)
	}
	if s := time.Since(m.start).Seconds(); s > 0 {
		line += fmt.Sprintf(", %s/s", megabytes(int64(float64(n)/s)))
	}
	say(m.progress, line)
}

func megabytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// unpackJar finds the .txz in the jar and unpacks its tar into dir.
func unpackJar(jar, dir string) error {
	zr, err := zip.OpenReader(jar)
	if err != nil {
		return fmt.Errorf("it is not a jar (zip archive): %w", err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.FileInfo().IsDir() || !strings.HasSuffix(f.Name, ".txz") {
			continue
		}
		r, err := f.Open()
		if err != nil {
			return fmt.Errorf("opening %s in the jar: %w", f.Name, err)
		}
		defer r.Close()
		// xi2/xz, as the library uses: a pure-Go decoder many times
		// faster here than the alternatives.
		x, err := xz.NewReader(r, 0)
		if err != nil {
			return fmt.Errorf("%s in the jar is not xz: %w", f.Name, err)
		}
		if err := untar(tar.NewReader(x), dir); err != nil {
			return fmt.Errorf("%s in the jar: %w", f.Name, err)
		}
		return nil
	}
	return ErrNoTxz
}

// untar writes a tar's directories, files and links under dir. Every name,
// and every link's target, must stay inside dir.
func untar(tr *tar.Reader, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the tar: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." {
			continue
		}
		if !filepath.IsLocal(name) {
			return fmt.Errorf("the tar names %q, outside its own tree", h.Name)
		}
		if dir := path.Dir(name); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			w, err := root.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(w, tr)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("writing %s: %w", name, err)
			}
			// The umask must not take the others' read and execute bits:
			// the server may run as another user.
			if err := root.Chmod(name, mode); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if path.IsAbs(h.Linkname) || !filepath.IsLocal(path.Join(path.Dir(name), h.Linkname)) {
				return fmt.Errorf("the tar's link %s points outside its tree, to %q", name, h.Linkname)
			}
			if err := root.Symlink(h.Linkname, name); err != nil {
				return err
			}
		case tar.TypeLink:
			target := path.Clean(h.Linkname)
			if !filepath.IsLocal(target) {
				return fmt.Errorf("the tar's link %s points outside its tree, to %q", name, h.Linkname)
			}
			if err := root.Link(target, name); err != nil {
				return err
			}
		}
	}
}

// sweepPartials removes the partial downloads in cacheRoot that a killed
// leaserace left: untouched for partialAbandonedAfter. Best effort.
func sweepPartials(cacheRoot string, progress func(string)) {
	dirs, _ := filepath.Glob(filepath.Join(cacheRoot, partialPrefix+"*"))
	for _, d := range dirs {
		newest := time.Time{}
		filepath.WalkDir(d, func(_ string, e fs.DirEntry, err error) error {
			if err == nil {
				if fi, err := e.Info(); err == nil && fi.ModTime().After(newest) {
					newest = fi.ModTime()
				}
			}
			return nil
		})
		if newest.IsZero() || time.Since(newest) < partialAbandonedAfter {
			continue
		}
		if err := os.RemoveAll(d); err == nil {
			say(progress, "removed "+d+", a download a stopped leaserace left")
		}
	}
}

func say(progress func(string), line string) {
	if progress != nil {
		progress(line)
	}
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
