//go:build unix

package pgserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A leaserace killed outright (SIGKILL) takes its local server with it, by
// the parent-death signal, but cannot delete the cluster's directory. These
// helpers find such leftovers and remove them.

// abandonedAfter keeps the clean-up away from a cluster whose owner may
// still be busy stopping it.
const abandonedAfter = time.Minute

// RemoveLocalCluster kills whatever still runs on a local cluster's
// directory and deletes the directory. It refuses any other directory.
func RemoveLocalCluster(dir string) error {
	if !filepath.IsAbs(dir) || !strings.HasPrefix(filepath.Base(dir), ClusterDirPrefix) {
		return fmt.Errorf("refusing to remove %q: it is not a local cluster's directory", dir)
	}
	if pid := runningPostmaster(dir); pid > 0 {
		killTree(pid)
		for i := 0; i < 100 && processAlive(pid); i++ {
			time.Sleep(50 * time.Millisecond)
		}
	}
	// A killed initdb's bootstrap backend may still be writing for a moment,
	// so a first attempt can meet a file made behind it.
	var err error
	for range 20 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("removing the local cluster's directory: %w", err)
}

// removeAbandoned deletes the local clusters in parent that a killed
// leaserace left, and says which through progress. A cluster whose owner
// file names a process of ours that is gone is abandoned, whatever stage it
// was killed in; one without an owner file (made before there were owner
// files) is abandoned once its lock file says a server ran that is gone.
// Best effort: what it cannot judge or delete it leaves alone.
func removeAbandoned(parent string, me *owner, serverUID int, progress func(string)) {
	dirs, _ := filepath.Glob(filepath.Join(parent, ClusterDirPrefix+"*"))
	for _, dir := range dirs {
		why, ok := abandonedCluster(dir, me, serverUID)
		if !ok {
			continue
		}
		if err := RemoveLocalCluster(dir); err != nil {
			report(progress, fmt.Sprintf("could not remove %s, %s: %v", dir, why, err))
			continue
		}
		report(progress, fmt.Sprintf("removed %s, %s", dir, why))
	}
}

// abandonedCluster says whether dir is a cluster of ours whose owner is
// gone, and why. me is nil when this process could not name itself; then
// only the lock-file rule applies.
func abandonedCluster(dir string, me *owner, serverUID int) (why string, ok bool) {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return "", false
	}
	st, isUnix := fi.Sys().(*syscall.Stat_t)
	if !isUnix {
		return "", false
	}
	uid := os.Geteuid()
	if me != nil {
		o, err := readOwnerFile(dir, me.uid)
		switch {
		case err == nil && me.gone(o):
			return fmt.Sprintf("a cluster left by %s, which is gone", o), true
		case err == nil, !errors.Is(err, fs.ErrNotExist):
			// Its owner runs, or the file is not one we can trust.
			return "", false
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, ownerFile)); err == nil {
		return "", false // an owner this process cannot judge
	}
	// Ours: made by us, or handed to the server's user.
	if int(st.Uid) != uid && int(st.Uid) != serverUID {
		return "", false
	}
	lock, err := os.Stat(filepath.Join(dir, "data", "postmaster.pid"))
	// No lock file: the cluster is being made, or its owner stopped it
	// and is removing it now.
	if err != nil || time.Since(lock.ModTime()) < abandonedAfter || runningPostmaster(dir) != 0 {
		return "", false
	}
	return "an abandoned cluster whose server is gone", true
}

// runningPostmaster returns the pid of the server running on dir's cluster,
// or 0. The lock file's pid counts only while that process is alive and
// still runs on this data directory, as pids get reused.
func runningPostmaster(dir string) int {
	data := filepath.Join(dir, "data")
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 || !processAlive(pid) {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), data) {
		return 0
	}
	return pid
}

// processAlive treats a zombie as gone: it holds no files, and in a
// container nobody may ever reap it.
func processAlive(pid int) bool {
	f, err := procStat(pid)
	if err != nil {
		// Unreadable: gone. Read but not understood: left alone, as alive.
		return errors.Is(err, errStatForm)
	}
	return f[0] != "Z"
}
