//go:build !unix

package pgserver

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	embeddedpostgres "github.com/fergusstrange/embedded-postgres"
)

// Without Unix process control (credentials, process groups, signals) the
// local provider cannot run, and the embedded server is run by the
// library itself, through pg_ctl, on binaries this package downloaded.

// errNeedsUnix is the local provider's answer on such a system.
var errNeedsUnix = errors.New("the local provider needs a Unix system (it runs PostgreSQL's programs under its own process control): use --pg embedded, container or dsn")

// Start says the local provider does not run here.
func (LocalProvider) Start(context.Context, func(string)) (*Server, error) {
	return nil, errNeedsUnix
}

// RemoveLocalCluster cannot find a server to stop here; it removes the
// directory.
func RemoveLocalCluster(dir string) error {
	if !filepath.IsAbs(dir) || !strings.HasPrefix(filepath.Base(dir), ClusterDirPrefix) {
		return fmt.Errorf("refusing to remove %q: it is not a local cluster's directory", dir)
	}
	return os.RemoveAll(dir)
}

func fileUID(fs.FileInfo) (int, bool) { return 0, false }

// lockCache takes no lock here: starts that meet download side by side,
// as they all did before there was a lock.
func lockCache(context.Context, string, func()) (func(), error) {
	return nil, errors.ErrUnsupported
}

// Start downloads the binaries (once) and lets the library run initdb and
// pg_ctl on a throwaway data directory, listening on 127.0.0.1 at a free
// port with a random password.
func (p EmbeddedProvider) Start(ctx context.Context, progress func(string)) (*Server, error) {
	began := time.Now()
	bin, port, err := p.prepare(ctx, progress)
	if err != nil {
		return nil, err
	}
	portNum, _ := strconv.Atoi(port)
	parent := p.Dir
	if parent == "" {
		parent = os.TempDir()
	}
	dir, err := os.MkdirTemp(parent, ClusterDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("making a directory for the embedded PostgreSQL cluster: %w", err)
	}
	if p.Made != nil {
		p.Made(dir)
	}
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("making the server log file: %w", err)
	}
	password := rand.Text()
	params := map[string]string{"listen_addresses": "127.0.0.1", "fsync": "off"}
	if p.MaxConnections > DefaultMaxConnections {
		params["max_connections"] = strconv.Itoa(p.MaxConnections)
	}
	db := embeddedpostgres.NewDatabase(embeddedpostgres.DefaultConfig().
		Version(embeddedpostgres.PostgresVersion(p.version())).
		BinariesPath(bin).RuntimePath(filepath.Join(dir, "run")).DataPath(filepath.Join(dir, "data")).
		Port(uint32(portNum)).Password(password).Logger(log).StartParameters(params))
	cleanup := func() error {
		log.Close()
		return os.RemoveAll(dir)
	}
	report(progress, "initdb and starting postgres")
	if err := db.Start(); err != nil {
		return nil, errors.Join(WithoutSecret(err, password), cleanup())
	}
	dsn := (&url.URL{Scheme: "postgres", User: url.UserPassword("postgres", password),
		Host: "127.0.0.1:" + port, Path: "/postgres", RawQuery: "sslmode=disable"}).String()
	version, err := ServerVersion(ctx, dsn)
	if err != nil {
		return nil, errors.Join(WithoutSecret(err, password), db.Stop(), cleanup())
	}
	stop := func(context.Context) error { return errors.Join(db.Stop(), cleanup()) }
	return &Server{Provider: "embedded", DSN: dsn, Took: time.Since(began), Version: version, ID: dir, stop: stop}, nil
}
