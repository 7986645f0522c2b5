//go:build unix

package pgserver

import (
	"context"
	"os"
	"path/filepath"
)

// HoldDownloadLock takes the lock a start of p takes before downloading,
// so that tests can make starts wait.
func HoldDownloadLock(ctx context.Context, p EmbeddedProvider) (func(), error) {
	dir, err := p.CachePath()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	return lockCache(ctx, downloadLock(dir), nil)
}

// HoldClusterLock takes the lock a local start with this cluster cache
// takes before it runs initdb to fill the cache.
func HoldClusterLock(ctx context.Context, cache string) (func(), error) {
	initdb, postgres, err := findServerBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	entry := templateEntry(cache, initdb, postgres, initdbArgs(cache, false), cred)
	if err := os.MkdirAll(filepath.Dir(entry), 0o700); err != nil {
		return nil, err
	}
	return lockCache(ctx, clusterLock(entry), nil)
}

// KillTree is the last step of stopping a local server: the kill of the
// postmaster pid and of its children.
func KillTree(pid int) { killTree(pid) }

// ProcStat is /proc/PID/stat's fields after the command name.
func ProcStat(pid int) ([]string, error) { return procStat(pid) }
