package pgtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/leaserace/leaserace/engine/pgserver"
)

// The tests make and remove local clusters all the time (about a thousand
// files each) in TMPDIR. On ext4 without a journal, as on the 2-core
// machine this project is built on, making a file skips every inode of its
// group freed in the last one to five minutes, and looking at each costs a
// buffer lookup: with the suite's own churn, a cluster's copy cost a second
// of system CPU instead of 50 ms (docs/testing.md, "6 December 2026, night").
// So, unless the person running the tests chose a TMPDIR, the test process
// and its children keep their temporary files in a directory of their own
// on a memory filesystem, when the machine has one with room.

// envTmpdir is the variable the scratch directory is published in.
const envTmpdir = "TMPDIR"

// scratchTmp is the temporary directory Main made for this test process,
// or nothing.
type scratchTmp struct {
	dir string
}

// useMemoryTmpdir points TMPDIR at a new directory on the memory
// filesystem, if TMPDIR is unset and one with room is there. why says what
// was decided, for the verbose log.
func useMemoryTmpdir() (s scratchTmp, why string) {
	if v, set := os.LookupEnv(envTmpdir); set && v != "" {
		return scratchTmp{}, "TMPDIR is set: the tests use it"
	}
	parent, ok, why := memoryFS()
	if !ok {
		return scratchTmp{}, why
	}
	dir, err := os.MkdirTemp(parent, "lrt")
	if err != nil {
		return scratchTmp{}, fmt.Sprintf("cannot make a directory in %s: %v", parent, err)
	}
	// Like /tmp: the postgres user, which servers run as under root,
	// must reach directories the tests make in it.
	if err := os.Chmod(dir, os.ModeSticky|0o777); err != nil {
		os.Remove(dir)
		return scratchTmp{}, fmt.Sprintf("cannot open %s to every user: %v", dir, err)
	}
	os.Setenv(envTmpdir, dir)
	return scratchTmp{dir: dir}, "temporary files in " + dir
}

// close removes the directory with whatever the tests left in it, and
// says so if that held a local cluster: a cluster the tests made and did
// not remove is a leak, as it was when it lived in /tmp.
func (s scratchTmp) close() error {
	if s.dir == "" {
		return nil
	}
	var leaked []string
	if entries, err := os.ReadDir(s.dir); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), pgserver.ClusterDirPrefix) {
				leaked = append(leaked, filepath.Join(s.dir, e.Name()))
			}
		}
	}
	err := os.RemoveAll(s.dir)
	if err != nil {
		err = fmt.Errorf("removing the tests' temporary directory: %w", err)
	}
	if len(leaked) > 0 {
		err = errors.Join(fmt.Errorf("local clusters outlived the tests (now removed): %s", strings.Join(leaked, ", ")), err)
	}
	return err
}
