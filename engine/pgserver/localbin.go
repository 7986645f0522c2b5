package pgserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ClusterDirPrefix starts the name of every local cluster's directory,
// which is how a leftover one is known.
const ClusterDirPrefix = "leaserace-pg-"

// LocalProvider runs a throwaway PostgreSQL cluster from the server binaries
// installed on this machine. The cluster lives in a temporary directory,
// listens only on a Unix socket there, and is deleted by Close. Start first
// removes the clusters beside it that a killed leaserace left (their owner
// process is gone) and says so through progress.
type LocalProvider struct {
	// Dir is where the temporary directory is made; empty means os.TempDir().
	// Keep it short: a Unix socket path must fit in about 100 bytes.
	Dir string
	// Made, if set, hears the cluster's directory as soon as it exists,
	// before initdb runs, so that a caller which may be killed outright
	// can have someone else remove it.
	Made func(dir string)
	// MaxConnections, when above PostgreSQL's default of 100, is the
	// cluster's max_connections: a room of many attendees needs more than
	// the default. At or below it, the default stays.
	MaxConnections int
	// ClusterCache keeps the first cluster initdb makes with these
	// binaries, and later starts copy it instead of running initdb again
	// (about a tenth of the time). Empty means os.UserCacheDir()/leaserace/
	// initdb; NoClusterCache runs initdb every time.
	ClusterCache string
}

// NoClusterCache, as LocalProvider.ClusterCache, runs initdb for every
// cluster.
const NoClusterCache = "-"

// DefaultMaxConnections is PostgreSQL's own default for max_connections.
const DefaultMaxConnections = 100

// Name is the provider's name on the command line.
func (LocalProvider) Name() string { return "local" }

// ErrNoServerBinaries means this machine has no PostgreSQL server installed.
var ErrNoServerBinaries = errors.New("PostgreSQL server binaries not found: install postgresql (Debian: apt-get install postgresql) or use --pg container / --dsn")

// The local cluster always uses this port number: with no TCP listener
// it only names the socket file inside our private directory, so it cannot
// clash with another server. Saying it explicitly keeps a PGPORT in the
// environment from sending the server or the client elsewhere.
const localPort = "5432"

// envBinDir, when set, is the only place findServerBinaries looks: a list
// of directories like PATH. Set and empty, it looks nowhere, which is how
// tests show leaserace a machine without PostgreSQL.
const envBinDir = "LEASERACE_PG_BINDIR"

// findServerBinaries looks for initdb and postgres side by side: on PATH
// (also behind a symlink there), then in Debian's versioned directories,
// newest first, then where a source build installs them.
func findServerBinaries() (initdb, postgres string, err error) {
	if only, ok := os.LookupEnv(envBinDir); ok {
		for _, d := range filepath.SplitList(only) {
			i, p := filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
			if d != "" && isExecutable(i) && isExecutable(p) {
				return i, p, nil
			}
		}
		return "", "", fmt.Errorf("%w (%s=%q says where to look)", ErrNoServerBinaries, envBinDir, only)
	}
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(debian, func(a, b string) int {
		return compareVersions(filepath.Base(filepath.Dir(b)), filepath.Base(filepath.Dir(a)))
	})
	dirs = append(dirs, debian...)
	dirs = append(dirs, "/usr/local/pgsql/bin")
	for _, d := range dirs {
		i, p := filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
		if isExecutable(i) && isExecutable(p) {
			return i, p, nil
		}
	}
	return "", "", ErrNoServerBinaries
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// compareVersions orders "9.6" before "15" before "16".
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// lastLines keeps the end of a tool's output for an error message.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
