package workshop_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/sshroom"
	"github.com/leaserace/leaserace/sshroom/sshtest"
	"github.com/leaserace/leaserace/workshop"
)

// The benchmark's knobs, from the environment so that CI can run it short:
//
//	LEASERACE_BENCH_ATTENDEES  how many attendees (default 100)
//	LEASERACE_BENCH_DURATION   how long they step (default 30s)
//	LEASERACE_BENCH_EVERY      how often each presses a key (default 500ms)
const (
	envAttendees = "LEASERACE_BENCH_ATTENDEES"
	envDuration  = "LEASERACE_BENCH_DURATION"
	envEvery     = "LEASERACE_BENCH_EVERY"
	// envProfile, when set, is where the server's CPU profile of the
	// stepping (not the joining) goes.
	envProfile = "LEASERACE_BENCH_CPUPROFILE"
	// envFPS, when set, is the room's frame rate (sshroom.Config.FPS).
	envFPS = "LEASERACE_BENCH_FPS"
	// envChildAddr runs TestRoomBenchAttendees as the benchmark's
	// attendees, against the room at this address.
	envChildAddr = "LEASERACE_BENCH_ROOM"
)

func benchSettings(tb testing.TB) (n int, dur, every time.Duration) {
	tb.Helper()
	n, dur, every = 100, 30*time.Second, 500*time.Millisecond
	var err error
	if v := os.Getenv(envAttendees); v != "" {
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			tb.Fatalf("%s=%q: want a number of attendees, at least 1", envAttendees, v)
		}
	}
	if v := os.Getenv(envDuration); v != "" {
		if dur, err = time.ParseDuration(v); err != nil || dur <= 0 {
			tb.Fatalf("%s=%q: want a duration such as 30s", envDuration, v)
		}
	}
	if v := os.Getenv(envEvery); v != "" {
		if every, err = time.ParseDuration(v); err != nil || every <= 0 {
			tb.Fatalf("%s=%q: want a duration such as 500ms", envEvery, v)
		}
	}
	return n, dur, every
}

// benchFPS is the frame rate LEASERACE_BENCH_FPS asks for, 0 (the
// room's default) if unset.
func benchFPS(tb testing.TB) int {
	tb.Helper()
	v := os.Getenv(envFPS)
	if v == "" {
		return 0
	}
	fps, err := strconv.Atoi(v)
	if err != nil || fps < 1 || fps > sshroom.MaxFPS {
		tb.Fatalf("%s=%q: want frames a second, 1 to %d", envFPS, v, sshroom.MaxFPS)
	}
	return fps
}

// benchResult is what the attendees' process measured.
type benchResult struct {
	Connected int `json:"connected"`
	Presses   int `json:"presses"`
	// First is each key press to the first frame received after it; Done
	// to the frame that shows what the key did; both in milliseconds.
	First []float64 `json:"first"`
	Done  []float64 `json:"done"`
	// DoneBy is Done by what the key was for ("step", "question",
	// "answer", "start").
	DoneBy map[string][]float64 `json:"done_by"`
	// Errors are real failures, each with its kind (errKey, errScreen,
	// errSession) in Kinds: a key whose effect never showed, a screen that
	// showed an error, a session that ended.
	Errors []string       `json:"errors"`
	Kinds  map[string]int `json:"kinds"`
	// Slow counts keys whose effect showed, but after slowKey. RoomWaits
	// counts the times a screen said the room had not taken its reports
	// for a while (still retrying): the room was slow, nothing was lost.
	Slow      int `json:"slow"`
	RoomWaits int `json:"room_waits"`
}

// logErrors writes the first ten errors to standard error: a benchmark's
// log keeps only its first lines.
func (res benchResult) logErrors(bench string) {
	for i, e := range res.Errors {
		if i == 10 {
			fmt.Fprintf(os.Stderr, "%s: … and %d more errors\n", bench, len(res.Errors)-10)
			break
		}
		fmt.Fprintf(os.Stderr, "%s error: %s\n", bench, briefError(e))
	}
}

// reportKinds reports the attendees' errors by kind (room-errors: the
// screen errors that said the room did not take a report) and their
// slowness apart: slow-keys and room-waits.
func (res benchResult) reportKinds(b *testing.B) {
	b.ReportMetric(float64(res.Kinds[errKey]), "key-errors")
	b.ReportMetric(float64(res.Kinds[errScreen]), "screen-errors")
	b.ReportMetric(float64(res.Kinds[errSession]), "session-errors")
	roomErrs := 0
	for _, e := range res.Errors {
		if strings.Contains(e, roomFailedText) {
			roomErrs++
		}
	}
	b.ReportMetric(float64(roomErrs), "room-errors")
	b.ReportMetric(float64(res.Slow), "slow-keys")
	b.ReportMetric(float64(res.RoomWaits), "room-waits")
}

// The kinds of real failures.
const (
	errKey     = "key"     // a key's effect did not show within keyBound
	errScreen  = "screen"  // the screen showed an error
	errSession = "session" // the session ended or could not send
)

// BenchmarkRoom: N attendees, each a real SSH client with a PTY, press a
// key every 500 ms for 30 s, stepping through renewal-race (answering its
// two questions, then back to the start) on runs of their own. The
// attendees run in a child process, so that the heap measured here is the
// server's; both share this machine's CPUs with PostgreSQL. It reports
// attendees, p50-ms and p99-ms (a key press to the next frame received),
// step-p50-ms, step-p99-ms and step-max-ms (to the frame showing the
// key's effect); errors, which are real failures only (key-errors: a key
// whose effect did not show within keyBound; screen-errors, room-errors
// among them; session-errors; refused reports), and slowness apart
// (slow-keys: effects that took over slowKey; room-waits: screens that
// said the room had not taken their reports yet); frames/press and
// frames-shared-%; queue depth and age; server-cpu-ms/press and
// pg-cpu-ms/press; pg-conns (the most connections of the room seen in
// pg_stat_activity) and heap-KB/attendee (the heap grown by the connected
// attendees, over N). It fails if anything of an attendee is left once all
// have disconnected.
//
// Run it once, with -benchtime=1x:
//
//	go test ./workshop -run '^$' -bench BenchmarkRoom -benchtime=1x
//	LEASERACE_BENCH_ATTENDEES=10 LEASERACE_BENCH_DURATION=3s go test ./workshop -run '^$' -bench BenchmarkRoom -benchtime=1x
func BenchmarkRoom(b *testing.B) {
	n, dur, every := benchSettings(b)
	d := scratch(b)
	r, err := workshop.Start(testCtx(b), workshop.Config{
		DSN: d.dsn, Room: "bench", SSH: sshroom.Config{Listen: "127.0.0.1:0", HostKeyDir: b.TempDir() + "/k", MaxAttendees: n + 10, FPS: benchFPS(b)},
		OnError: func(err error) { b.Logf("room: %v", err) },
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		// Shutdown ends every session and drops every schema the room
		// made: twice the usual wait.
		ctx, cancel := context.WithTimeout(context.Background(), 2*pgtest.WaitTimeout())
		defer cancel()
		if err := r.Shutdown(ctx); err != nil {
			b.Errorf("Shutdown: %v", err)
		}
	}()
	heap0 := heapNow()

	// The most connections of the room at once, sampled all along.
	stopConns := sampleConns(b, d)
	pgCPU0, pgCPUErr := clusterCPU(b, d)

	child, stdin, next := startAttendees(b, r.Addr().String(), n, dur, every)
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()

	ready := next("READY ")
	heap1 := heapNow()
	attendees := len(r.Attendees())
	b.Logf("%s connected; %d attendees in the room; heap %.1f MB → %.1f MB", ready, attendees, float64(heap0)/1e6, float64(heap1)/1e6)
	// What the attendees cost sitting idle, then while they step.
	idle0, idleAt := selfCPU(), time.Now()
	time.Sleep(2 * time.Second)
	b.Logf("server CPU with %d attendees idle: %.0f%% of one core", attendees, 100*float64(selfCPU()-idle0)/float64(time.Since(idleAt)))
	stopProfile := func() {}
	if path := os.Getenv(envProfile); path != "" {
		stopProfile = profileCPU(b, path)
		defer stopProfile()
	}
	self0 := selfCPU()
	psi0, psiErr := cpuPressure()
	stepAt := time.Now()
	pgCPU1, _ := clusterCPU(b, d)
	if _, err := io.WriteString(stdin, "GO\n"); err != nil {
		b.Fatal(err)
	}
	var res benchResult
	if err := json.Unmarshal([]byte(next("RESULT ")), &res); err != nil {
		b.Fatalf("the attendees' result: %v", err)
	}
	stopProfile()
	self1 := selfCPU()
	psi1, _ := cpuPressure()
	stepped := time.Since(stepAt)
	pgCPU2, _ := clusterCPU(b, d)
	_ = stdin.Close()
	if err := child.Wait(); err != nil {
		b.Errorf("the attendees' process: %v", err)
	}
	pgConns := stopConns()
	if psiErr == nil {
		// The machine is shared: how much of the time something (ours or
		// not) was ready to run and waited for a CPU.
		load, _ := os.ReadFile("/proc/loadavg")
		b.Logf("while stepping, some task waited for a CPU %.0f%% of the time (PSI); load average %s",
			100*float64(psi1-psi0)/float64(stepped), strings.Join(strings.Fields(string(load))[:3], " "))
	}
	// Where the CPU went while the attendees stepped (the attendees'
	// process: its whole life, connecting included).
	if pgCPUErr == nil {
		b.Logf("CPU while stepping: server %s, PostgreSQL %s; attendees' process %s in all (PostgreSQL %s while they connected)",
			self1-self0, pgCPU2-pgCPU1, child.ProcessState.UserTime()+child.ProcessState.SystemTime(), pgCPU1-pgCPU0)
	} else {
		b.Logf("CPU while stepping: server %s; attendees' process %s in all; PostgreSQL's unknown (%v)",
			self1-self0, child.ProcessState.UserTime()+child.ProcessState.SystemTime(), pgCPUErr)
	}

	// Nothing of any attendee is left once they all disconnected: no
	// session, no seat, no run schema (the Host's own two remain until
	// Shutdown).
	left := func() (sessions, seats int, schemas []string) {
		if bd, err := r.Store().Board(testCtx(b)); err == nil {
			seats = len(bd.Seats)
		}
		for _, s := range d.schemas(b) {
			if !strings.HasPrefix(s, "lr_base_") && !strings.HasPrefix(s, "lr_res_") {
				schemas = append(schemas, s)
			}
		}
		return len(r.Attendees()), seats, schemas
	}
	// Every attendee's session ends and drops its run's schemas and its
	// seat, all of them at once: three times the usual wait.
	limit := 3 * pgtest.WaitTimeout()
	for end := time.Now().Add(limit); ; time.Sleep(100 * time.Millisecond) {
		sessions, seats, schemas := left()
		if sessions == 0 && seats == 0 && len(schemas) == 0 {
			break
		}
		if time.Now().After(end) {
			b.Errorf("%s after every attendee disconnected: %d sessions, %d seats and %d run schemas left", limit, sessions, seats, len(schemas))
			break
		}
	}

	for _, k := range []string{"step", "question", "answer", "start"} {
		v := res.DoneBy[k]
		b.Logf("%-8s %5d presses, p50 %6.1f ms, p99 %6.1f ms to the frame showing it", k, len(v), percentile(v, 50), percentile(v, 99))
	}
	res.logErrors("BenchmarkRoom")
	b.ReportMetric(float64(res.Connected), "attendees")
	b.ReportMetric(percentile(res.First, 50), "p50-ms")
	b.ReportMetric(percentile(res.First, 99), "p99-ms")
	b.ReportMetric(percentile(res.Done, 50), "step-p50-ms")
	b.ReportMetric(percentile(res.Done, 99), "step-p99-ms")
	b.ReportMetric(slices.Max(append(slices.Clone(res.Done), 0)), "step-max-ms")
	// Real failures only: a key whose effect never showed (within
	// keyBound), a screen showing an error, a session that ended, a report
	// the room refused. Slowness is apart: keys slower than slowKey, and
	// screens that said the room had not taken their reports yet.
	bl := r.Backlog()
	b.ReportMetric(float64(len(res.Errors)+bl.Refused), "errors")
	b.ReportMetric(float64(bl.Refused), "refused")
	res.reportKinds(b)
	// Frames: how many of the attendees' frames found their sections drawn.
	if fs := r.Frames(); fs.Hits+fs.Misses+fs.Unshared > 0 {
		all := fs.Hits + fs.Misses + fs.Unshared
		b.Logf("frames: %d drawn, %d found their sections drawn, %d drew them, %d alone; %d entries kept, %d dropped", all, fs.Hits, fs.Misses, fs.Unshared, fs.Entries, fs.Evicted)
		b.ReportMetric(100*float64(fs.Hits)/float64(all), "frames-shared-%")
		if res.Presses > 0 {
			b.ReportMetric(float64(all)/float64(res.Presses), "frames/press")
		}
	}
	b.ReportMetric(float64(pgConns), "pg-conns")
	b.ReportMetric(float64(res.Presses), "presses")
	if res.Connected > 0 {
		b.ReportMetric(float64(int64(heap1)-int64(heap0))/float64(res.Connected)/1024, "heap-KB/attendee")
	}
	// Back-pressure: reports the room could not take at once waited in
	// each attendee's queue (merged, retried) instead of failing.
	b.Logf("reports: %d landed, %d tries made again, %d refused; most waiting for one attendee %d, in all %d; waited mean %s, max %s",
		bl.Landed, bl.Retries, bl.Refused, bl.MaxDepth, bl.MaxWaiting, bl.MeanAge, bl.MaxAge)
	b.ReportMetric(float64(bl.MaxDepth), "queue-depth-max")
	b.ReportMetric(float64(bl.MaxWaiting), "queue-waiting-max")
	b.ReportMetric(float64(bl.MeanAge.Microseconds())/1000, "queue-age-mean-ms")
	b.ReportMetric(float64(bl.MaxAge.Microseconds())/1000, "queue-age-max-ms")
	if res.Presses > 0 {
		b.ReportMetric(float64((self1-self0).Microseconds())/1000/float64(res.Presses), "server-cpu-ms/press")
		if pgCPUErr == nil {
			b.ReportMetric(float64((pgCPU2-pgCPU1).Microseconds())/1000/float64(res.Presses), "pg-cpu-ms/press")
		}
	}
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		// The machine is shared: the load goes with every figure.
		l1, _ := strconv.ParseFloat(strings.Fields(string(load))[0], 64)
		b.ReportMetric(l1, "loadavg-1m")
	}
}

// briefError is an error with only the last lines of its screen (the
// status line and key help say what went wrong), so that the log keeps
// them all.
func briefError(e string) string {
	head, scr, ok := strings.Cut(e, "\n")
	if !ok {
		return e
	}
	var lines []string
	for _, l := range strings.Split(scr, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return head + " … " + strings.Join(lines[max(0, len(lines)-4):], " / ")
}

// selfCPU is the CPU time this process used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clusterCPU is the CPU time used so far by the PostgreSQL server of d and
// its live processes, read from /proc: the server must run on this
// machine, under a data directory this process may read.
func clusterCPU(b *testing.B, d db) (time.Duration, error) {
	var dir string
	if err := d.admin.QueryRow(testCtx(b), "SHOW data_directory").Scan(&dir); err != nil {
		return 0, err
	}
	pidFile, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	root, _, _ := strings.Cut(string(pidFile), "\n")
	procs, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		// The command may hold spaces: the fields after it start past ")".
		i := strings.LastIndexByte(string(data), ')')
		f := strings.Fields(string(data)[i+1:])
		pid := filepath.Base(filepath.Dir(p))
		if len(f) < 13 || (pid != root && f[1] != root) {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += ut + st
	}
	// Linux counts in USER_HZ, 100 a second everywhere it runs today.
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// profileCPU writes this process's CPU profile to path until the returned
// function is called.
func profileCPU(b *testing.B, path string) func() {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				b.Error(err)
			}
		})
	}
}

// cpuPressure is the total time some task waited for a CPU, from the
// kernel's pressure stall information.
func cpuPressure() (time.Duration, error) {
	data, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, err
	}
	for _, f := range strings.Fields(strings.SplitN(string(data), "\n", 2)[0]) {
		if v, ok := strings.CutPrefix(f, "total="); ok {
			us, err := strconv.ParseInt(v, 10, 64)
			return time.Duration(us) * time.Microsecond, err
		}
	}
	return 0, fmt.Errorf("no total in /proc/pressure/cpu: %q", data)
}

// heapNow is the live heap after a collection.
func heapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// sampleConns counts the room's connections in pg_stat_activity every
// 50 ms until the returned function is called, which returns the most seen.
func sampleConns(b *testing.B, d db) func() int {
	conn, err := pgx.Connect(testCtx(b), d.dsn)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	most := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var n int
			err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name LIKE 'leaserace%'`, d.name).Scan(&n)
			if err != nil {
				if ctx.Err() == nil {
					b.Errorf("counting the room's connections: %v", err)
				}
				return
			}
			most = max(most, n)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return func() int {
		cancel()
		<-done
		conn.Close(context.Background())
		return most
	}
}

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

// TestRoomBenchAttendees is BenchmarkRoom's attendees, run in a process of
// their own: it connects them, says READY, waits for GO on standard input,
// lets them step, and prints the RESULT as JSON.
func TestRoomBenchAttendees(t *testing.T) {
	addr := os.Getenv(envChildAddr)
	if addr == "" {
		t.Skip("runs only as BenchmarkRoom's attendees")
	}
	n, dur, every := benchSettings(t)
	var mu sync.Mutex
	res := benchResult{DoneBy: map[string][]float64{}, Kinds: map[string]int{}}
	fail := func(format string, args ...any) {
		mu.Lock()
		res.Errors = append(res.Errors, fmt.Sprintf(format, args...))
		res.Kinds[errSession]++
		mu.Unlock()
	}

	// Connect, a few at a time, as a room fills.
	bots := make([]*bot, n)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range bots {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			bt, err := dialBot(t, addr, fmt.Sprintf("bot%03d", i))
			if err != nil {
				fail("bot%03d: %v", i, err)
				return
			}
			bots[i] = bt
		})
	}
	wg.Wait()
	bots = slices.DeleteFunc(bots, func(bt *bot) bool { return bt == nil })
	res.Connected = len(bots)
	fmt.Printf("READY %d of %d\n", len(bots), n)
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatalf("no GO: %v", err)
	}

	deadline := time.Now().Add(dur)
	for _, bt := range bots {
		wg.Go(func() {
			first, done, doneBy, presses, errs := bt.step(deadline, every)
			mu.Lock()
			for k, v := range bt.kinds {
				res.Kinds[k] += v
			}
			res.Slow += bt.slow
			res.RoomWaits += bt.roomWaits
			res.First = append(res.First, first...)
			res.Done = append(res.Done, done...)
			for k, v := range doneBy {
				res.DoneBy[k] = append(res.DoneBy[k], v...)
			}
			res.Presses += presses
			res.Errors = append(res.Errors, errs...)
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, bt := range bots {
		_ = bt.c.Close()
	}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("RESULT %s\n", out)
}

// bot is one benchmark attendee.
type bot struct {
	name string
	c    *sshtest.Client
	out  chan struct{} // a signal per chunk of output

	// onScreen is the error the screen shows now, counted once while it
	// stays; waiting is set while the screen says the room has not taken
	// the reports yet.
	onScreen string
	waiting  bool
	// kinds counts the bot's errors by kind; slow its slow keys; roomWaits
	// the times its screen said the room was behind.
	kinds           map[string]int
	slow, roomWaits int

	mu      sync.Mutex
	pressed time.Time
	first   time.Time // first output after pressed
	last    time.Time // latest output
}

func dialBot(t *testing.T, addr, name string) (*bot, error) {
	bt := &bot{name: name, out: make(chan struct{}, 1), kinds: map[string]int{}}
	c, err := sshtest.Dial(t, addr, sshtest.Options{User: name, Width: 120, Height: 40, NoLog: true, OnOutput: bt.heard})
	if err != nil {
		return nil, err
	}
	bt.c = c
	// Every bot joins at once, each making its run in PostgreSQL: three
	// times the usual wait.
	if _, err := c.Await(3*pgtest.WaitTimeout(), "renewal-race", event(0)); err != nil {
		return nil, err
	}
	return bt, nil
}

func (bt *bot) heard(at time.Time) {
	bt.mu.Lock()
	if !bt.pressed.IsZero() && bt.first.IsZero() && !at.Before(bt.pressed) {
		bt.first = at
	}
	bt.last = at
	bt.mu.Unlock()
	select {
	case bt.out <- struct{}{}:
	default:
	}
}

// A round through renewal-race: a key and what the screen shows once it
// took effect. The two questions are answered with their first choice.
var round = []struct{ key, shows, what string }{
	{"l", "event 1/6", "step"}, {"l", "event 2/6", "step"}, {"l", "event 3/6", "step"}, {"l", "event 4/6", "step"},
	{"l", "esc skips the question", "question"}, {"1", "event 5/6", "answer"},
	{"l", "esc skips the question", "question"}, {"1", "event 6/6", "answer"},
	{"g", "event 0/6", "start"},
}

// roomFailedText marks an error where the screen said the room did not take
// a report.
const roomFailedText = "the screen said the room did not take a report"

// screenErrors are what a screen says when something failed, as the TUI
// words them (tui/screen's status line and tui's room notices).
var screenErrors = []string{
	"The last step failed", "PostgreSQL went away", "The resource stopped answering",
	"leaserace hit a bug", "did not take the last report",
}

// roomWaitText is what a screen says while the room has not taken its
// reports for a while: still retrying, nothing lost. Slowness, not failure.
const roomWaitText = "has not taken your reports"

// slowKey is how long a key may take to show its effect before it counts
// as slow.
const slowKey = 5 * time.Second

// keyBound is how long a key may take to show its effect before it counts
// as failed: three times the tests' wait bound (pgtest.WaitTimeout, which
// CI scales for a loaded machine). An overloaded room is slow; a key that
// shows nothing for this long is broken.
func keyBound() time.Duration { return 3 * pgtest.WaitTimeout() }

// checkScreen counts what the screen says: an error once while it stays
// on screen, and each time the room falls behind.
func (bt *bot) checkScreen() (errs []string) {
	scr := bt.c.Screen()
	flat := sshtest.Flat(scr)
	shown := ""
	for _, e := range screenErrors {
		if strings.Contains(flat, e) {
			shown = e
			break
		}
	}
	if shown != "" && shown != bt.onScreen {
		what := "the screen showed an error"
		if shown == "did not take the last report" {
			what = roomFailedText
		}
		bt.kinds[errScreen]++
		errs = append(errs, fmt.Sprintf("%s: %s (%q); screen:\n%s", bt.name, what, shown, scr))
	}
	bt.onScreen = shown
	waiting := strings.Contains(flat, roomWaitText)
	if waiting && !bt.waiting {
		bt.roomWaits++
	}
	bt.waiting = waiting
	return errs
}

// step presses a key every `every` (or as soon as the last one showed its
// effect, if later) until deadline.
func (bt *bot) step(deadline time.Time, every time.Duration) (first, done []float64, doneBy map[string][]float64, presses int, errs []string) {
	doneBy = map[string][]float64{}
	next := time.Now().Add(rand.N(every)) // spread the attendees' beats
	i := 0
	for {
		time.Sleep(time.Until(next))
		if time.Now().After(deadline) {
			return
		}
		next = next.Add(every)
		k := round[i%len(round)]
		select {
		case <-bt.out:
		default:
		}
		at := time.Now()
		bt.mu.Lock()
		bt.pressed, bt.first = at, time.Time{}
		bt.mu.Unlock()
		presses++
		if err := bt.c.Send(k.key); err != nil {
			bt.kinds[errSession]++
			errs = append(errs, fmt.Sprintf("%s: %v", bt.name, err))
			return
		}
		f, d, ok, gone := bt.await(k.shows, at.Add(keyBound()))
		errs = append(errs, bt.checkScreen()...)
		if gone {
			bt.kinds[errSession]++
			errs = append(errs, fmt.Sprintf("%s: the session ended; screen:\n%s", bt.name, bt.c.Screen()))
			return
		}
		if !ok {
			bt.kinds[errKey]++
			errs = append(errs, fmt.Sprintf("%s: %q did not show %q within %s; screen:\n%s", bt.name, k.key, k.shows, keyBound(), bt.c.Screen()))
			bt.resync()
			i = 0
			next = time.Now().Add(every)
			continue
		}
		if d.Sub(at) > slowKey {
			bt.slow++
		}
		first = append(first, ms(f.Sub(at)))
		done = append(done, ms(d.Sub(at)))
		doneBy[k.what] = append(doneBy[k.what], ms(d.Sub(at)))
		i++
		if time.Now().After(next) {
			next = time.Now()
		}
	}
}

// await waits until the screen shows want; it returns when the first
// output after the key press came and when the output that showed want did,
// or gone when the session ended first.
func (bt *bot) await(want string, until time.Time) (first, done time.Time, ok, gone bool) {
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	for {
		select {
		case <-bt.out:
		case <-bt.c.Ended():
			return first, done, false, true
		case <-t.C:
			return first, done, false, false
		}
		bt.mu.Lock()
		first, done = bt.first, bt.last
		bt.mu.Unlock()
		if !first.IsZero() && strings.Contains(sshtest.Flat(bt.c.Screen()), want) {
			return first, done, true, false
		}
	}
}

// resync brings a bot that lost its place back to the start: esc skips a
// question if one waits, g goes to the start.
func (bt *bot) resync() {
	_ = bt.c.Send("\x1b")
	time.Sleep(time.Second)
	_ = bt.c.Send("g")
	_, _ = bt.c.Await(keyBound(), event(0))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// startAttendees starts the attendees' process (this test binary, running
// TestRoomBenchAttendees) against addr. next reads its standard output up
// to the line that starts with prefix and returns the rest of that line;
// the caller kills and reaps child.
func startAttendees(b *testing.B, addr string, n int, dur, every time.Duration) (child *exec.Cmd, stdin io.WriteCloser, next func(prefix string) string) {
	b.Helper()
	child = exec.Command(os.Args[0], "-test.run=^TestRoomBenchAttendees$", "-test.count=1", "-test.timeout=0")
	child.Env = append(os.Environ(), envChildAddr+"="+addr,
		envAttendees+"="+strconv.Itoa(n), envDuration+"="+dur.String(), envEvery+"="+every.String())
	child.Stderr = os.Stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 64<<20)
	next = func(prefix string) string {
		for lines.Scan() {
			if rest, ok := strings.CutPrefix(lines.Text(), prefix); ok {
				return rest
			}
		}
		b.Fatalf("the attendees' process ended before saying %q: %v", prefix, lines.Err())
		return ""
	}
	return child, stdin, next
}
