//go:build unix

package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockPollInterval is how often a start waiting for another's lock tries
// again. flock has no cancellable blocking form: polling is what lets
// Ctrl-C end the wait at once, with no goroutine left in the kernel.
const lockPollInterval = 20 * time.Millisecond

// lockCache takes the exclusive lock named by path, a file it creates when
// needed, and returns the function that gives it up. waiting, if not nil,
// is called once if another holds the lock. The kernel drops the lock of
// a process that dies, so a killed holder keeps no one waiting.
//
// The holder removes the file before unlocking: a cache holds nothing of
// a start that is over. A waiter that then gets the lock on the removed
// file sees that the path names another file, or none, and starts again.
func lockCache(ctx context.Context, path string, waiting func()) (func(), error) {
	said := false
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("opening the lock file %s: %w", path, err)
		}
		err = pollLock(ctx, f, func() {
			if !said && waiting != nil {
				waiting()
			}
			said = true
		})
		if err != nil {
			f.Close()
			return nil, err
		}
		if sameFile(f, path) {
			return func() {
				os.Remove(path)
				f.Close() // unlocks, after the removal
			}, nil
		}
		f.Close() // the holder before us removed it: take the new one
	}
}

// pollLock tries f's lock until it has it or ctx ends; busy is called each
// time another holds it.
func pollLock(ctx context.Context, f *os.File, busy func()) error {
	var tick *time.Ticker
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return fmt.Errorf("locking %s: %w", f.Name(), err)
		}
		busy()
		if tick == nil {
			tick = time.NewTicker(lockPollInterval)
			defer tick.Stop()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// sameFile tells whether path still names the open file f.
func sameFile(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(path)
	return err == nil && os.SameFile(held, now)
}

// removeUnheldLock removes the lock file at path if nobody holds it: it
// tries the lock once, without waiting, and giving it up removes the file.
func removeUnheldLock(path string) {
	once, cancel := context.WithCancel(context.Background())
	cancel()
	if release, err := lockCache(once, path, nil); err == nil {
		release()
	}
}
