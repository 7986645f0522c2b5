package pgtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/leaserace/leaserace/engine/pgserver"
)

// A panic inside a test, a -timeout or a Ctrl-C ends the test process
// without running Main's deferred cleanup, and with no reaper container
// nothing else would remove what the tests started. So the first server
// started also starts a watcher: this same test binary, run again with
// envWatcher set. It reads one line per server from a pipe, and if the pipe
// closes without a final "done" line it removes them itself.
const envWatcher = "LEASERACE_PGTEST_WATCHER"

// envWatcherVerbose makes the watcher say each thing it is told of, so a
// test can kill its child at a chosen moment.
const envWatcherVerbose = "LEASERACE_PGTEST_WATCHER_VERBOSE"

const watcherDone = "done"

// startedContainers is the watcher's word for the label of one container
// start: Docker finishes creating a container after its client died, so
// such a start is swept for twice.
const startedContainers = "container-start"

// scratchDir is the watcher's word for the test process's temporary
// directory (see useMemoryTmpdir), removed after the servers in it.
const scratchDir = "tmpdir"

// dockerLag is how long Docker may take to finish a create whose client
// is gone.
const dockerLag = 3 * time.Second

// watcherLink is the test process's end of the pipe.
type watcherLink struct {
	mu    sync.Mutex
	cmd   *exec.Cmd
	pipe  io.WriteCloser
	err   error // the watcher could not start; servers still get closed by Main
	tried bool
}

// add tells the watcher about a server, starting the watcher if need be.
func (w *watcherLink) add(srv *pgserver.Server) {
	if srv.ID == "" {
		return // not ours to remove
	}
	w.addLine(srv.Provider, srv.ID)
}

// addLine tells the watcher what to remove should the tests die: a local
// cluster's directory or a container's ID. Telling it twice is harmless.
func (w *watcherLink) addLine(provider, id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.tried {
		w.tried = true
		w.err = w.start()
		if w.err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: no watcher, so a crashed test may leave servers behind: %v\n", w.err)
		}
	}
	if w.err != nil {
		return
	}
	if _, err := fmt.Fprintf(w.pipe, "%s %s\n", provider, id); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: telling the watcher about %s: %v\n", id, err)
	}
}

func (w *watcherLink) start() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the test binary: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envWatcher+"=1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// Its own process group, so the Ctrl-C that kills the tests spares it.
	cmd.SysProcAttr = ownGroup()
	pipe, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("making the watcher's pipe: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the watcher: %w", err)
	}
	w.cmd, w.pipe = cmd, pipe
	return nil
}

// release tells the watcher everything is cleaned up and waits for it.
func (w *watcherLink) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd == nil {
		return
	}
	fmt.Fprintln(w.pipe, watcherDone)
	w.pipe.Close()
	w.cmd.Wait()
	w.cmd = nil
}

// watch is the watcher process: it returns the exit code. c removes
// containers; a binary without it never tells of any.
func watch(in io.Reader, log io.Writer, verbose bool, c Containers) int {
	var servers []string
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if sc.Text() == watcherDone {
			return 0
		}
		// A local cluster is announced when its directory is made and
		// again once it runs.
		if !slices.Contains(servers, sc.Text()) {
			servers = append(servers, sc.Text())
			if verbose {
				fmt.Fprintf(log, "pgtest watcher: told of %s\n", sc.Text())
			}
		}
	}
	// The test process went away without cleaning up: do it for it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := 0
	var tmpdirs []string
	for _, line := range servers {
		provider, id, _ := strings.Cut(line, " ")
		var err error
		switch provider {
		case scratchDir:
			tmpdirs = append(tmpdirs, id)
			continue
		case "local":
			// Its server died with the test process (a parent-death
			// signal); what is left is the directory.
			err = pgserver.RemoveLocalCluster(id)
		case "container", startedContainers:
			if c == nil {
				err = errNoContainers
				break
			}
			if provider == "container" {
				// The tests may have got to it first, or begun to before they died.
				err = c.Remove(ctx, id)
				break
			}
			err = c.RemoveStarted(ctx, id)
			if err == nil {
				time.Sleep(dockerLag)
				err = c.RemoveStarted(ctx, id)
			}
		default:
			err = fmt.Errorf("unknown provider %q", provider)
		}
		if err != nil {
			fmt.Fprintf(log, "pgtest watcher: the tests died and %s server %s could not be removed: %v\n", provider, id, err)
			code = 1
			continue
		}
		fmt.Fprintf(log, "pgtest watcher: the tests died; removed their %s server %s\n", provider, id)
	}
	for _, dir := range tmpdirs {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(log, "pgtest watcher: the tests died and their temporary directory %s could not be removed: %v\n", dir, err)
			code = 1
			continue
		}
		fmt.Fprintf(log, "pgtest watcher: the tests died; removed their temporary directory %s\n", dir)
	}
	return code
}
