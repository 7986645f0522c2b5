package engine_test

// Faults injected for real: a PostgreSQL server stopped, killed or
// restarted under a run, its sessions terminated from another session, and
// the resource's listener closed. Each test checks that the next step fails
// with an error that names the part, that the transcript so far survives,
// and, where the server comes back, that Reconnect replays to the very same
// state and the run finishes exactly as an undisturbed one.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine"
	"github.com/leaserace/leaserace/engine/enginetest"
	"github.com/leaserace/leaserace/engine/pgserver"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/transcript"
	"github.com/leaserace/leaserace/scenario"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// faultNoticeLimit is how long a step may take to report a fault: the TUI
// must say so within a second.
const faultNoticeLimit = time.Second

// ownCluster is a local cluster one test owns, so it can stop and restart
// it without disturbing the package's shared server.
type ownCluster struct {
	srv  *pgserver.Server
	data string
	log  string
}

func startOwnCluster(t *testing.T) *ownCluster {
	t.Helper()
	srv := pgtest.NewLocal(t)
	return &ownCluster{srv: srv, data: filepath.Join(srv.ID, "data"), log: filepath.Join(t.TempDir(), "restarted.log")}
}

// pid is the running postmaster's, from its lock file.
func (c *ownCluster) pid(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.data, "postmaster.pid"))
	if err != nil {
		t.Fatalf("the cluster has no postmaster.pid: %v", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		t.Fatalf("postmaster.pid starts with %q", first)
	}
	return pid
}

// stop sends the postmaster sig (SIGQUIT is what pg_ctl -m immediate sends,
// SIGINT what -m fast sends) and waits until it has exited.
func (c *ownCluster) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	pid := c.pid(t)
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("signalling the postmaster %d: %v", pid, err)
	}
	waitGone(t, pid, 15*time.Second)
}

// waitGone waits for a process to exit (a zombie counts as gone).
func waitGone(t *testing.T, pid int, limit time.Duration) {
	t.Helper()
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d did not exit within %s", pid, limit)
}

// restart starts the server again on the same data directory and socket,
// with the command line the first start recorded in postmaster.opts, and
// waits until it answers. The test stops it at its end.
func (c *ownCluster) restart(t *testing.T) {
	t.Helper()
	opts, err := os.ReadFile(filepath.Join(c.data, "postmaster.opts"))
	if err != nil {
		t.Fatalf("reading postmaster.opts: %v", err)
	}
	argv := splitOpts(strings.TrimSpace(string(opts)))
	if len(argv) < 2 {
		t.Fatalf("postmaster.opts holds %q", opts)
	}
	logFile, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.srv.ID
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// As the provider does: the postgres user when we are root, a process
	// group of its own, and gone with us if the test binary dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: serverCredential(t), Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("restarting the cluster: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	// Registered after the run's own cleanup, so it runs before it: the run
	// then finds the server gone, which its Close must survive.
	t.Cleanup(func() {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	end := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.srv.DSN)
		if err == nil {
			_ = conn.Close(ctx)
			cancel()
			return
		}
		cancel()
		select {
		case <-exited:
			log, _ := os.ReadFile(c.log)
			t.Fatalf("the restarted server exited:\n%s", log)
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("the restarted server did not answer within 30 s: %v", err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// splitOpts splits postmaster.opts: the binary, then "quoted" arguments.
func splitOpts(s string) []string {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return append(out, s[1:])
			}
			out = append(out, s[1:1+end])
			s = s[2+end:]
			continue
		}
		word, rest, _ := strings.Cut(s, " ")
		out = append(out, word)
		s = rest
	}
	return out
}

// serverCredential is whom PostgreSQL runs as: the postgres user when the
// tests run as root, which the server refuses to be.
func serverCredential(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("no postgres user to run the server as: %v", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		t.Fatalf("postgres user %s:%s", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// blindOff is the knob setting the fault tests play: its run ends in a conflict.
func blindOff() scenario.Knobs {
	return scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff}
}

// openFaultRun opens renewal-race on dsn and moves to just after pos
// events. Its cleanup closes the run without judging the result: each test
// closes it itself where the outcome is known.
func openFaultRun(t *testing.T, dsn string, pos int) *engine.Run {
	t.Helper()
	sc, err := scenario.Builtin("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Open(enginetest.Ctx(t), engine.Config{DSN: dsn, Scenario: sc, Knobs: blindOff()})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = r.Close(ctx)
	})
	if err := r.Seek(enginetest.Ctx(t), pos); err != nil {
		t.Fatalf("seek to %d: %v", pos, err)
	}
	return r
}

// fault is what stepping into a fault gave: the error, how long the failing
// step took, and the view and transcript just before it.
type fault struct {
	err    error
	took   time.Duration
	before engine.View
	tr     transcript.Transcript
}

// stepIntoFault steps until a step fails. Steps that touch neither
// PostgreSQL nor the resource (a heartbeat leaving) may pass first.
func stepIntoFault(t *testing.T, r *engine.Run) fault {
	t.Helper()
	for range r.Len() + 1 {
		var f fault
		f.before = r.View()
		tr, err := r.Transcript()
		if err != nil {
			t.Fatal(err)
		}
		f.tr = tr
		t0 := time.Now()
		_, f.err = r.Next(enginetest.Ctx(t))
		f.took = time.Since(t0)
		if errors.Is(f.err, engine.ErrEnd) {
			t.Fatal("the run reached its end without noticing the fault")
		}
		if f.err != nil {
			t.Logf("step %d failed after %s: %v", f.before.Pos+1, f.took.Round(time.Microsecond), f.err)
			return f
		}
	}
	t.Fatal("no step failed")
	return fault{}
}

// checkFault holds what every fault must give: an error naming the part, in
// time, nothing moved, and the transcript so far intact and exportable.
func checkFault(t *testing.T, r *engine.Run, f fault, part string) {
	t.Helper()
	gone, down := engine.IsServerGone(f.err), engine.IsResourceDown(f.err)
	switch part {
	case engine.PartPostgreSQL:
		if !gone || down {
			t.Errorf("IsServerGone %v, IsResourceDown %v for a PostgreSQL fault: %v", gone, down, f.err)
		}
	case engine.PartResource:
		if gone || !down {
			t.Errorf("IsServerGone %v, IsResourceDown %v for a resource fault: %v", gone, down, f.err)
		}
	}
	if got := engine.Part(f.err); got != part {
		t.Errorf("Part = %q, want %q: %v", got, part, f.err)
	}
	if !strings.Contains(f.err.Error(), part) {
		t.Errorf("the message does not name %s: %v", part, f.err)
	}
	if f.took > faultNoticeLimit {
		t.Errorf("the failing step took %s to report the fault; the limit is %s", f.took, faultNoticeLimit)
	}
	if got := r.View(); !reflect.DeepEqual(got, f.before) {
		t.Errorf("the failed step changed the state:\nbefore %+v\nafter  %+v", f.before, got)
	}
	tr, err := r.Transcript()
	if err != nil {
		t.Fatalf("no transcript after the fault: %v", err)
	}
	if len(tr.Steps) != f.before.Pos || tr.Digest != f.tr.Digest {
		t.Errorf("the transcript changed with the fault: %d steps, digest %s; before %d, %s", len(tr.Steps), tr.Digest, f.before.Pos, f.tr.Digest)
	}
	var buf bytes.Buffer
	if err := tr.WriteJSON(&buf); err != nil {
		t.Fatalf("exporting the transcript after the fault: %v", err)
	}
	back, err := transcript.Read(&buf)
	if err != nil {
		t.Fatalf("reading the exported transcript back: %v", err)
	}
	if d, err := back.ComputeDigest(); err != nil || d != tr.Digest {
		t.Errorf("the exported transcript's digest is %s (%v), want %s", d, err, tr.Digest)
	}
}

// checkRecovery reconnects, expects exactly the state before the fault,
// then plays to the end and expects the transcript of an undisturbed run.
func checkRecovery(t *testing.T, r *engine.Run, f fault, dsn string) {
	t.Helper()
	t0 := time.Now()
	if err := r.Reconnect(enginetest.Ctx(t)); err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	t.Logf("reconnected and replayed %d steps in %s", f.before.Pos, time.Since(t0).Round(time.Microsecond))
	if got := r.View(); !reflect.DeepEqual(got, f.before) {
		t.Fatalf("after Reconnect the state differs:\nbefore %+v\nafter  %+v", f.before, got)
	}
	tr, err := r.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	if tr.Digest != f.tr.Digest {
		t.Errorf("after Reconnect the transcript digest is %s, before the fault %s", tr.Digest, f.tr.Digest)
	}
	if err := r.PlayAll(enginetest.Ctx(t)); err != nil {
		t.Fatalf("playing on after Reconnect: %v", err)
	}
	tr, err = r.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	if want := undisturbedDigest(t); tr.Digest != want {
		t.Errorf("the finished run's digest is %s; an undisturbed run gives %s", tr.Digest, want)
	}
	if tr.Outcome.Effects != 2 || tr.Outcome.Verdict != scenario.VerdictConflict {
		t.Errorf("blind/off outcome %+v, want 2 effects and a conflict", tr.Outcome)
	}
	schema := r.Schema()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		t.Errorf("close after recovery: %v", err)
	}
	if left := runSchemas(t, dsn, schema); len(left) > 0 {
		t.Errorf("schemas left on the server after Close: %v", left)
	}
}

// undisturbedDigest is the digest of renewal-race blind/off played through
// on the shared server: the same on any server, per the transcript format.
func undisturbedDigest(t *testing.T) string {
	t.Helper()
	sc, err := scenario.Builtin("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	r := enginetest.OpenScenario(t, pgtest.DSN(t), sc, blindOff())
	if err := r.PlayAll(enginetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	tr, err := r.Transcript()
	if err != nil {
		t.Fatal(err)
	}
	return tr.Digest
}

// runSchemas lists the run's schemas still on the server.
func runSchemas(t *testing.T, dsn, schema string) []string {
	t.Helper()
	ctx := enginetest.Ctx(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("checking for schemas: %v", err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname = $1 OR nspname = $1 || '_res'`, schema)
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return left
}

// In renewal-race, event 3 is B's acquire (a coordinator statement) and
// event 4 B's effect (a write through the resource, whose store is
// PostgreSQL too): a fault is met by each path.
const (
	beforeAcquire = 2
	beforeEffect  = 3
)

// The tests with a cluster of their own run side by side: stopping and
// restarting a server is mostly waiting, and no other test sees theirs.
func TestFaultLocalClusterImmediateShutdown(t *testing.T) {
	t.Parallel()
	for _, pos := range []int{beforeAcquire, beforeEffect} {
		t.Run(fmt.Sprintf("after %d steps", pos), func(t *testing.T) {
			t.Parallel()
			c := startOwnCluster(t)
			r := openFaultRun(t, c.srv.DSN, pos)
			c.stop(t, syscall.SIGQUIT)
			f := stepIntoFault(t, r)
			checkFault(t, r, f, engine.PartPostgreSQL)

			// While the server is down, reconnecting fails, says why, and
			// keeps what was shown.
			err := r.Reconnect(enginetest.Ctx(t))
			if err == nil || !engine.IsServerGone(err) {
				t.Fatalf("reconnect to a stopped server: %v", err)
			}
			if tr, err := r.Transcript(); err != nil || len(tr.Steps) != f.before.Pos {
				t.Fatalf("after a failed reconnect the transcript has %d steps (%v), want %d", len(tr.Steps), err, f.before.Pos)
			}
			// So does stepping, backwards as well as forwards, without a panic.
			if _, err := r.Next(enginetest.Ctx(t)); !engine.IsServerGone(err) {
				t.Errorf("a step after a failed reconnect: %v", err)
			}
			if err := r.Seek(enginetest.Ctx(t), 0); !engine.IsServerGone(err) {
				t.Errorf("stepping back after a failed reconnect: %v", err)
			}

			c.restart(t)
			checkRecovery(t, r, f, c.srv.DSN)
		})
	}
}

func TestFaultDSNServerRestarted(t *testing.T) {
	t.Parallel() // a cluster of its own
	c := startOwnCluster(t)
	// The server is someone else's as far as the run knows: it came in
	// through the dsn provider, which never starts or stops anything.
	srv, err := pgserver.DSNProvider{DSN: c.srv.DSN}.Start(enginetest.Ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := openFaultRun(t, srv.DSN, beforeEffect)
	c.stop(t, syscall.SIGINT) // fast shutdown, as pg_ctl restart does
	// The step is taken while the server is down. Taken after the restart,
	// it may or may not fail: the pool checks a connection idle for over a
	// second before using it, so a restart slower than that (a loaded
	// machine) is healed without a fault.
	f := stepIntoFault(t, r)
	checkFault(t, r, f, engine.PartPostgreSQL)
	c.restart(t)
	checkRecovery(t, r, f, srv.DSN)
}

func TestFaultConnectionReset(t *testing.T) {
	// Not parallel: beside other tests' load the pool once replaced a
	// terminated connection before the run used it, and the run never
	// met the fault (failed once in go test ./...).
	dsn := pgtest.DSN(t)
	for _, pos := range []int{beforeAcquire, beforeEffect} {
		t.Run(fmt.Sprintf("after %d steps", pos), func(t *testing.T) {
			r := openFaultRun(t, dsn, pos)
			killed := terminateSessions(t, dsn, r.Schema())
			// The run's pooled connections (named for the actor that used
			// them last) and the resource's (named for the run's state).
			coord, res := 0, 0
			for _, name := range killed {
				if strings.Contains(name, r.Schema()+"_res") {
					res++
				} else {
					coord++
				}
			}
			if coord == 0 || res == 0 {
				t.Fatalf("terminated only %v", killed)
			}
			t.Logf("terminated %d sessions: %v", len(killed), killed)
			f := stepIntoFault(t, r)
			checkFault(t, r, f, engine.PartPostgreSQL)
			checkRecovery(t, r, f, dsn)
		})
	}
}

// terminateSessions ends, from a session of its own, every session whose
// application_name carries the run's schema, and waits until each is gone.
func terminateSessions(t *testing.T, dsn, schema string) []string {
	t.Helper()
	ctx := enginetest.Ctx(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The second argument makes the server wait (up to 5 s) until the
	// backend has really exited.
	rows, _ := conn.Query(ctx, `SELECT application_name FROM pg_stat_activity
		WHERE application_name LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()
		  AND pg_terminate_backend(pid, 5000)`, schema)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("terminating the run's sessions: %v", err)
	}
	return names
}

func TestFaultResourceDown(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	r := openFaultRun(t, dsn, beforeEffect)
	oldURL := r.ResourceURL()
	engine.KillResource(r)
	f := stepIntoFault(t, r)
	checkFault(t, r, f, engine.PartResource)
	if !strings.Contains(f.err.Error(), oldURL) {
		t.Errorf("the message does not say where the resource was: %v", f.err)
	}
	checkRecovery(t, r, f, dsn)
}

func TestFaultContainerStoppedOrKilled(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"stop", "kill"} {
		t.Run(how, func(t *testing.T) {
			srv := pgtest.NewContainer(t)
			u, err := url.Parse(srv.DSN)
			if err != nil {
				t.Fatal(err)
			}
			password, _ := u.User.Password()
			r := openFaultRun(t, srv.DSN, beforeAcquire)

			ctx := enginetest.Ctx(t)
			cli, err := testcontainers.NewDockerClientWithOpts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			switch how {
			case "stop":
				timeout := 5
				_, err = cli.ContainerStop(ctx, srv.ID, client.ContainerStopOptions{Timeout: &timeout})
			case "kill":
				_, err = cli.ContainerKill(ctx, srv.ID, client.ContainerKillOptions{Signal: "KILL"})
			}
			if err != nil {
				t.Fatalf("docker %s: %v", how, err)
			}

			f := stepIntoFault(t, r)
			checkFault(t, r, f, engine.PartPostgreSQL)
			// The container is gone for good (a new one gets a new port and
			// password), so reconnecting must fail, and say it is PostgreSQL.
			rerr := r.Reconnect(ctx)
			if rerr == nil || engine.Part(rerr) != engine.PartPostgreSQL {
				t.Errorf("reconnect to a %sped container: %v (part %q)", how, rerr, engine.Part(rerr))
			}
			cerr := r.Close(ctx)
			for _, e := range []error{f.err, rerr, cerr} {
				if e != nil && password != "" && strings.Contains(e.Error(), password) {
					t.Errorf("an error shows the container's password: %v", e)
				}
			}
			if tr, err := r.Transcript(); err != nil || len(tr.Steps) != beforeAcquire {
				t.Errorf("the transcript after the fault: %d steps, %v", len(tr.Steps), err)
			}
		})
	}
}

// TestFaultClassifiesRealErrors runs into errors that are not faults as
// well, so IsServerGone does not cry wolf.
func TestFaultClassifiesRealErrors(t *testing.T) {
	t.Parallel() // a cluster of its own
	sc, err := scenario.Builtin("control")
	if err != nil {
		t.Fatal(err)
	}
	open := func(ctx context.Context, dsn string) error {
		r, err := engine.Open(ctx, engine.Config{DSN: dsn, Scenario: sc, Knobs: blindOff()})
		if err == nil {
			_ = r.Close(ctx)
		}
		return err
	}
	dir, role, right := pgtest.NewPasswordServer(t)
	asURL := func(pw, db string) string {
		return fmt.Sprintf("postgres://%s:%s@/%s?host=%s&port=5432&sslmode=disable", role, url.QueryEscape(pw), db, dir)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		dsn  string
		gone bool
		part string
	}{
		{"wrong password", enginetest.Ctx(t), asURL("wrong-password", "postgres"), false, engine.PartPostgreSQL},
		{"missing database", enginetest.Ctx(t), asURL(right, "no_such_db"), false, engine.PartPostgreSQL},
		{"port refused", enginetest.Ctx(t), "postgres://u:pw@127.0.0.1:1/db?sslmode=disable&connect_timeout=5", true, engine.PartPostgreSQL},
		{"no socket", enginetest.Ctx(t), "host=" + filepath.Join(t.TempDir(), "none") + " user=u dbname=db", true, engine.PartPostgreSQL},
		{"cancelled by the person", cancelled, asURL(right, "postgres"), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := open(tc.ctx, tc.dsn)
			if err == nil {
				t.Fatal("opened")
			}
			if got := engine.IsServerGone(err); got != tc.gone {
				t.Errorf("IsServerGone = %v: %v", got, err)
			}
			if engine.IsResourceDown(err) {
				t.Errorf("IsResourceDown: %v", err)
			}
			if got := engine.Part(err); got != tc.part {
				t.Errorf("Part = %q, want %q: %v", got, tc.part, err)
			}
		})
	}
	if engine.IsServerGone(nil) || engine.IsResourceDown(nil) || engine.Part(nil) != "" {
		t.Error("nil is classified as a fault")
	}
}
