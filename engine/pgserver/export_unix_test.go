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
