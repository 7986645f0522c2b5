package workshop_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leaserace/leaserace/sshroom/sshtest"
)

// BenchmarkRoomBehindHAProxy is BenchmarkRoom across machines' worth of
// processes: two `leaserace serve` processes (the real binary, built here)
// on one PostgreSQL, behind one HAProxy in TCP mode on loopback, and
// LEASERACE_BENCH_ATTENDEES attendees per serve process (default 100, so
// 2 × 100) connecting to HAProxy only, in a process of their own. It
// reports what BenchmarkRoom does (p50/p99, errors by kind, slowness
// apart) and each serve process's CPU per press, and checks the board
// counts every attendee once.
//
//	go test ./workshop -run '^$' -bench BenchmarkRoomBehindHAProxy -benchtime=1x
func BenchmarkRoomBehindHAProxy(b *testing.B) {
	sshtest.NeedHAProxy(b)
	perServe, dur, every := benchSettings(b)
	n := 2 * perServe
	d := scratch(b)
	bin := filepath.Join(b.TempDir(), "leaserace")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/leaserace/leaserace/cmd/leaserace").CombinedOutput(); err != nil {
		b.Fatalf("building leaserace: %v\n%s", err, out)
	}
	keyDir := filepath.Join(b.TempDir(), "hostkey")
	var serves []*exec.Cmd
	var backends []string
	for i := range 2 {
		cmd := exec.Command(bin, "serve", "--pg", "dsn", "--dsn", d.dsn, "--room", "lb", "--listen", "127.0.0.1:0",
			"--host-key-dir", keyDir, "--max-attendees", strconv.Itoa(n+10))
		cmd.Stderr = io.Discard
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		line, err := bufio.NewReader(out).ReadString('\n')
		if _, _, serr := net.SplitHostPort(strings.TrimSpace(line)); err != nil || serr != nil {
			b.Fatalf("serve %d printed %q (%v), not its address", i, line, err)
		}
		go func() { _, _ = io.Copy(io.Discard, out) }()
		serves = append(serves, cmd)
		backends = append(backends, strings.TrimSpace(line))
	}
	front := sshtest.StartHAProxy(b, backends...).Addr

	child, stdin, next := startAttendees(b, front, n, dur, every)
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	b.Logf("%s connected through HAProxy", next("READY "))
	seats, servers := d.seatsByServer(b)
	b.Logf("the board: %d seats, by serve process %v", seats, servers)
	cpu0 := []time.Duration{procCPU(serves[0].Process.Pid), procCPU(serves[1].Process.Pid)}
	pg0, pgErr := clusterCPU(b, d)
	if _, err := io.WriteString(stdin, "GO\n"); err != nil {
		b.Fatal(err)
	}
	var res benchResult
	if err := json.Unmarshal([]byte(next("RESULT ")), &res); err != nil {
		b.Fatalf("the attendees' result: %v", err)
	}
	cpu1 := []time.Duration{procCPU(serves[0].Process.Pid), procCPU(serves[1].Process.Pid)}
	pg1, _ := clusterCPU(b, d)
	_ = stdin.Close()
	if err := child.Wait(); err != nil {
		b.Errorf("the attendees' process: %v", err)
	}
	res.logErrors("BenchmarkRoomBehindHAProxy")
	if seats != res.Connected {
		b.Errorf("the board counted %d seats for %d attendees connected", seats, res.Connected)
	}
	b.ReportMetric(float64(res.Connected), "attendees")
	b.ReportMetric(float64(seats), "seats")
	b.ReportMetric(percentile(res.First, 50), "p50-ms")
	b.ReportMetric(percentile(res.First, 99), "p99-ms")
	b.ReportMetric(percentile(res.Done, 99), "step-p99-ms")
	// Real failures only, as BenchmarkRoom counts them; slowness apart.
	b.ReportMetric(float64(len(res.Errors)), "errors")
	res.reportKinds(b)
	b.ReportMetric(float64(res.Presses), "presses")
	if res.Presses > 0 {
		for i := range serves {
			b.ReportMetric(float64((cpu1[i]-cpu0[i]).Microseconds())/1000/float64(res.Presses), fmt.Sprintf("serve%d-cpu-ms/press", i+1))
		}
		if pgErr == nil {
			b.ReportMetric(float64((pg1-pg0).Microseconds())/1000/float64(res.Presses), "pg-cpu-ms/press")
		}
	}
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		l1, _ := strconv.ParseFloat(strings.Fields(string(load))[0], 64)
		b.ReportMetric(l1, "loadavg-1m")
	}
}

// seatsByServer reads the room's seats with SQL: how many, and how many on
// each serve process.
func (d db) seatsByServer(b *testing.B) (int, map[string]int) {
	rows, err := d.admin.Query(testCtx(b), `SELECT sv.name, count(*) FROM lr_room_lb.seats s JOIN lr_room_lb.servers sv ON sv.id = s.server_id GROUP BY 1`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	total, by := 0, map[string]int{}
	for rows.Next() {
		var name string
		var k int
		if err := rows.Scan(&name, &k); err != nil {
			b.Fatal(err)
		}
		by[name], total = k, total+k
	}
	return total, by
}

// procCPU is the CPU time process pid used so far, from /proc.
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data)[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
