//go:build unix

package pgserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A second taker waits, says so once, and gives up as soon as its context
// ends; the holder's release removes the lock file, and a waiter that was
// queued on the removed file takes the lock on a new one at the same path.
func TestLockCacheWaitsHandsOverAndStopsOnCancel(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".lock-x")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	releaseA, err := lockCache(ctx, path, func() { t.Error("the first taker waited") })
	if err != nil {
		t.Fatal(err)
	}

	// A waiter whose context ends returns at once with its error.
	waitCtx, stop := context.WithCancel(ctx)
	said := 0
	began := time.Now()
	_, err = lockCache(waitCtx, path, func() {
		if said++; said == 1 {
			stop()
		}
	})
	if !errors.Is(err, context.Canceled) || said != 1 {
		t.Errorf("a cancelled waiter: %v, said it waited %d times; want context.Canceled, once", err, said)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the cancelled waiter took %s", took)
	}

	// B waits on A's file; A releases, removing it; B must then hold the
	// lock of whatever file the path names.
	waiting := make(chan struct{})
	type result struct {
		release func()
		err     error
	}
	got := make(chan result)
	go func() {
		r, err := lockCache(ctx, path, func() { close(waiting) })
		got <- result{r, err}
	}()
	select {
	case <-waiting:
	case <-ctx.Done():
		t.Fatal("the second taker never waited")
	}
	releaseA()
	b := <-got
	if b.err != nil {
		t.Fatal(b.err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("B holds the lock but the path names no file: %v", err)
	}
	cancelled, cancelNow := context.WithCancel(ctx)
	cancelNow()
	if _, err := lockCache(cancelled, path, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a third taker got %v while B held the lock; want context.Canceled", err)
	}
	b.release()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock file is still there after its release (%v)", err)
	}
}

// Without a lock file to make (a cache that cannot be written) the caller
// hears why, not a context error, and goes on without the lock.
func TestLockCacheInAnUnwritableDirectory(t *testing.T) {
	t.Parallel()
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := lockCache(context.Background(), filepath.Join(blocker, ".lock-x"), nil)
	if err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want an error opening the lock file", err)
	}
}
