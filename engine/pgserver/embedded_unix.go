//go:build unix

package pgserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Start brings the server up; progress, if not nil, hears what it does:
// the download's bytes and rate on a first run.
func (p EmbeddedProvider) Start(ctx context.Context, progress func(string)) (*Server, error) {
	began := time.Now()
	bin, port, err := p.prepare(ctx, progress)
	if err != nil {
		return nil, err
	}
	return startCluster(ctx, cluster{
		provider: "embedded",
		initdb:   filepath.Join(bin, "bin", "initdb"), postgres: filepath.Join(bin, "bin", "postgres"),
		began: began, parent: p.Dir, made: p.Made, maxConnections: p.MaxConnections,
		port: port, tcp: true, clusterCache: p.ClusterCache,
		check: func(cred *syscall.Credential) error { return reachableBy(bin, cred) },
	}, progress)
}

// reachableBy says why the server's user (cred; nil is ourselves) cannot
// walk into dir, if it cannot: as root, the cache sits in root's home,
// which is usually closed to everyone else.
func reachableBy(dir string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		perm := fi.Mode().Perm()
		var x os.FileMode = 0o001
		switch {
		case ok && st.Uid == cred.Uid:
			x = 0o100
		case ok && st.Gid == cred.Gid:
			x = 0o010
		}
		if perm&x == 0 {
			return fmt.Errorf("PostgreSQL will not run as root, and the postgres user it runs as cannot reach the cached binaries in %s (%s is mode %v): run leaserace as a normal user, or point XDG_CACHE_HOME at a directory others may read", dir, d, perm)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
