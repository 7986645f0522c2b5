//go:build unix

package pgserver

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Start brings the server up; progress, if not nil, hears what it does.
func (p LocalProvider) Start(ctx context.Context, progress func(string)) (*Server, error) {
	began := time.Now()
	initdb, postgres, err := findServerBinaries()
	if err != nil {
		return nil, err
	}
	return startCluster(ctx, cluster{
		provider: "local", initdb: initdb, postgres: postgres, began: began,
		parent: p.Dir, made: p.Made, maxConnections: p.MaxConnections, port: localPort,
		clusterCache: p.ClusterCache,
	}, progress)
}

// cluster is what startCluster needs to know about one throwaway cluster.
type cluster struct {
	// provider names the provider in the Server and its messages.
	provider string
	// initdb and postgres are the server's programs.
	initdb, postgres string
	began            time.Time
	// parent, made and maxConnections are as in LocalProvider.
	parent         string
	made           func(dir string)
	maxConnections int
	// port names the Unix socket and, with tcp, the TCP port.
	port string
	// tcp also listens on 127.0.0.1 at port, for password logins only
	// (the password is random and kept nowhere): the socket in the
	// private directory stays the only way in without one.
	tcp bool
	// check, if set, runs once the server's user is known, before any
	// directory is made: it may refuse to go on.
	check func(cred *syscall.Credential) error
	// clusterCache is as LocalProvider.ClusterCache. With tcp, the copies
	// share the first cluster's password: random and kept nowhere, as
	// each cluster's own would be.
	clusterCache string
}

// startCluster makes a cluster in a new directory under c.parent, starts
// its server and waits until it answers. The directory is removed on every
// failure and by the Server's Close.
func startCluster(ctx context.Context, c cluster, progress func(string)) (*Server, error) {
	initdb, postgres, began := c.initdb, c.postgres, c.began
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	if c.check != nil {
		if err := c.check(cred); err != nil {
			return nil, err
		}
	}

	parent := c.parent
	if parent == "" {
		parent = os.TempDir()
	}
	// Without a name for this process (no /proc), clusters get no owner
	// file, and only the lock-file rule can find abandoned ones.
	var me *owner
	if o, err := currentOwner(); err == nil {
		me = &o
	}
	serverUID := -1
	if cred != nil {
		serverUID = int(cred.Uid)
	}
	removeAbandoned(parent, me, serverUID, progress)
	dir, err := os.MkdirTemp(parent, ClusterDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("making a directory for the %s PostgreSQL cluster: %w", c.provider, err)
	}
	started := false
	defer func() {
		if !started {
			os.RemoveAll(dir)
		}
	}()
	// Before anything slow: killed from here on, the next start knows
	// whose directory this is and that its owner is gone.
	if me != nil {
		if err := writeOwnerFile(dir, *me); err != nil {
			return nil, err
		}
	}
	if c.made != nil {
		c.made(dir)
	}
	initArgs := initdbArgs(dir, c.tcp)
	if c.tcp {
		pwfile := filepath.Join(dir, "pwfile")
		if err := os.WriteFile(pwfile, []byte(rand.Text()), 0o600); err != nil {
			return nil, fmt.Errorf("writing the cluster's password file: %w", err)
		}
		if cred != nil {
			if err := os.Chown(pwfile, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, fmt.Errorf("handing %s to the postgres user: %w", pwfile, err)
			}
		}
		defer os.Remove(pwfile) // initdb has read it by then
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("handing %s to the postgres user: %w", dir, err)
		}
	}
	data := filepath.Join(dir, "data")

	runInitdb := func() error {
		report(progress, "initdb")
		cmd := exec.CommandContext(ctx, initdb, initArgs...)
		cmd.Dir = dir // the postgres user may not be allowed into our working directory
		// Killed outright, we take initdb with us (where the system can) instead
		// of leaving it writing into a directory someone is removing.
		cmd.SysProcAttr = childAttr(cred, false)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("initdb failed: %w\n%s", err, lastLines(out, 15))
		}
		return nil
	}
	entry := templateEntry(c.clusterCache, initdb, postgres, initArgs, cred)
	if err := makeData(ctx, entry, data, initdb, cred, runInitdb, progress); err != nil {
		return nil, err
	}

	report(progress, "starting postgres")
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("making the server log file: %w", err)
	}
	defer logFile.Close() // the child holds its own copy
	listen := ""
	if c.tcp {
		listen = "127.0.0.1"
	}
	// Not CommandContext: ctx only bounds the start, the server must outlive it.
	// Dynamic shared memory in files under data, not in /dev/shm: a server
	// killed outright (SIGKILL, its parent's death) cannot remove its
	// segments, and those in /dev/shm would outlive the cluster.
	args := []string{"-D", data, "-k", dir, "-p", c.port,
		"-c", "listen_addresses=" + listen,
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off",
		"-c", "dynamic_shared_memory_type=mmap"}
	if c.maxConnections > DefaultMaxConnections {
		args = append(args, "-c", "max_connections="+strconv.Itoa(c.maxConnections))
	}
	srv := exec.Command(postgres, args...)
	srv.Dir = dir
	srv.Stdout = logFile
	srv.Stderr = logFile
	// Its own process group, so a Ctrl-C in the terminal reaches only us and
	// we stop the server in order; and, where the system can, it goes with
	// us if leaserace is killed outright. (That signal follows the forking
	// thread; Go keeps its threads alive.)
	srv.SysProcAttr = childAttr(cred, true)
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", postgres, err)
	}
	exited := make(chan struct{})
	go func() {
		srv.Wait()
		close(exited)
	}()
	stop := func(ctx context.Context) error {
		err := stopProcessGroup(ctx, srv.Process.Pid, exited)
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("removing the %s cluster's directory: %w", c.provider, rmErr))
		}
		return err
	}

	dsn := (&url.URL{
		Scheme: "postgres",
		User:   url.User("postgres"),
		Path:   "/postgres",
		// Slashes stay readable: they are legal in a query.
		RawQuery: "host=" + strings.ReplaceAll(url.QueryEscape(dir), "%2F", "/") +
			"&port=" + c.port + "&sslmode=disable",
	}).String()
	version, err := waitForLocal(ctx, dsn, exited)
	if err != nil {
		// Stop first so the log is complete; the deferred clean-up then
		// removes the directory.
		stopErr := stopProcessGroup(ctx, srv.Process.Pid, exited)
		log, _ := os.ReadFile(logPath)
		return nil, errors.Join(fmt.Errorf("%w\nserver log:\n%s", err, lastLines(log, 15)), stopErr)
	}
	started = true
	return &Server{Provider: c.provider, DSN: dsn, Took: time.Since(began), Version: version, ID: dir, stop: stop}, nil
}

// initdbArgs are initdb's arguments for a cluster in dir; with tcp, it
// reads the password from dir/pwfile.
func initdbArgs(dir string, tcp bool) []string {
	args := []string{"-D", filepath.Join(dir, "data"), "-U", "postgres",
		"--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"}
	if tcp {
		args = append(args, "--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile="+filepath.Join(dir, "pwfile"))
	}
	return args
}

// waitForLocal connects until the server answers, it dies, or ctx ends.
func waitForLocal(ctx context.Context, dsn string, exited <-chan struct{}) (string, error) {
	// A bound of our own, in case the caller's ctx has none.
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		version, err := ServerVersion(ctx, dsn)
		if err == nil {
			return version, nil
		}
		select {
		case <-exited:
			return "", errors.New("the local PostgreSQL server stopped while starting")
		case <-ctx.Done():
			return "", fmt.Errorf("the local PostgreSQL server did not accept connections in time: %w", err)
		case <-tick.C:
		}
	}
}

// stopProcessGroup asks the server to shut down fast, then immediately, then
// kills it and its children. It waits for the postmaster to exit, bounded by
// a few seconds per step. A done ctx (after Ctrl-C or SIGTERM) skips only the
// fast shutdown: immediate shutdown takes milliseconds, and it is the one
// that lets the postmaster reap its own children. A postmaster killed
// outright can orphan a child it was just forking, which then never learns
// its parent is gone.
func stopProcessGroup(ctx context.Context, pid int, exited <-chan struct{}) error {
	wait := func(sig syscall.Signal, d time.Duration, done <-chan struct{}) bool {
		if err := syscall.Kill(pid, sig); err != nil {
			return false // already gone, or not ours: the kill below settles it
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-exited:
			return true
		case <-done:
		case <-t.C:
		}
		return false
	}
	if ctx.Err() == nil && wait(syscall.SIGINT, 5*time.Second, ctx.Done()) { // fast shutdown
		return nil
	}
	if wait(syscall.SIGQUIT, 3*time.Second, nil) { // immediate shutdown
		return nil
	}
	select {
	case <-exited:
		return nil
	default:
	}
	killTree(pid)
	select {
	case <-exited:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("the local PostgreSQL server (pid %d) did not exit after SIGKILL", pid)
	}
}

// killTree kills the postmaster pid and its children. PostgreSQL's children
// each start a session of their own, so the group kill alone misses them.
// The postmaster is stopped first so that it forks no child we then miss.
func killTree(pid int) {
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	for _, child := range childrenOf(pid) {
		_ = syscall.Kill(child, syscall.SIGKILL)
	}
	// The negative pid reaches any child that has not left the group yet.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// serverCredential says whom the server must run as: nil means ourselves.
// PostgreSQL refuses to run as root, so root hands it to the postgres user.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL will not run as root and there is no postgres user to run it as (install postgresql, create that user, or run leaserace as a normal user): %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("reading the postgres user's uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("reading the postgres user's gid %q: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
