package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaserace/leaserace/engine/pgtest"
	"github.com/leaserace/leaserace/engine/room"
	"github.com/leaserace/leaserace/scenario"
	"github.com/leaserace/leaserace/sshroom/sshtest"
)

// behindBalancer is a room served by n `leaserace serve` processes on one
// PostgreSQL database of the test's own, behind one HAProxy frontend in TCP
// mode, all on loopback.
type behindBalancer struct {
	dsn, front string
	serves     []*started
	// ports are the serve processes' SSH ports, in the order of serves.
	ports []string
}

// startBehindBalancer starts n serve processes for room and HAProxy in
// front of them; all are stopped when the test ends.
func startBehindBalancer(t *testing.T, n int, roomName string, extra ...string) *behindBalancer {
	t.Helper()
	sshtest.NeedHAProxy(t)
	base := pgtest.DSN(t)
	b := &behindBalancer{dsn: pgtest.ScratchDSN(t, base, "lr_lb_")}
	// One host key for every process: a client that meets a second key on
	// reconnect refuses the server.
	keyDir := filepath.Join(t.TempDir(), "hostkey")
	for i := range n {
		args := append([]string{"serve", "--pg", "dsn", "--dsn", b.dsn, "--room", roomName,
			"--listen", "127.0.0.1:0", "--host-key-dir", keyDir}, extra...)
		s := startLeaserace(t, nil, args...)
		// serve starts as a process of its own and opens the room in
		// PostgreSQL before it prints its address: twelve times the usual
		// wait.
		if limit := 12 * pgtest.WaitTimeout(); !s.stdout.waitFor("\n", limit) {
			t.Fatalf("serve %d printed no address within %s; stderr:\n%s", i, limit, s.stderr.String())
		}
		addr := strings.TrimSpace(strings.SplitN(s.stdout.String(), "\n", 2)[0])
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("serve %d's first line is %q, want its address", i, addr)
		}
		b.serves, b.ports = append(b.serves, s), append(b.ports, port)
	}

	backends := make([]string, len(b.ports))
	for i, p := range b.ports {
		backends[i] = "127.0.0.1:" + p
	}
	b.front = sshtest.StartHAProxy(t, backends...).Addr
	return b
}

// serveOf is the index of the serve process a seat is on.
func (b *behindBalancer) serveOf(seat room.Seat) int {
	for i, p := range b.ports {
		if strings.HasSuffix(seat.Server, ":"+p) {
			return i
		}
	}
	return -1
}

// TestServeBehindHAProxy: two serve processes behind HAProxy, one room,
// one PostgreSQL. Attendees, real SSH clients connecting to the balancer
// only, land on both processes, follow one presenter's lead, answer one
// question, and the board counts each of them once. Killing one serve
// (SIGKILL) ends its attendees' sessions; they reconnect through the
// balancer, land on the other process, and the board drops the dead
// process's seats within the room's idle bound.
func TestServeBehindHAProxy(t *testing.T) {
	t.Parallel() // a scratch database, ports and a room of its own
	const n = 4
	b := startBehindBalancer(t, 2, "lb", "--room-idle", "3s")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The presenter's handle on the room, as `leaserace present` has it.
	pres, err := room.Open(ctx, b.dsn, "lb", "presenter", room.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = pres.Drop(context.Background())
		_ = pres.Close(context.Background())
	}()
	board := func() room.Board {
		t.Helper()
		bd, err := pres.Board(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return bd
	}
	waitBoard := func(what string, ok func(room.Board) bool) room.Board {
		t.Helper()
		// The board follows sessions on two processes, and the dead
		// process's seats only go after the room's idle bound: three times
		// the usual wait.
		for end := time.Now().Add(3 * pgtest.WaitTimeout()); ; time.Sleep(100 * time.Millisecond) {
			bd := board()
			if ok(bd) {
				return bd
			}
			if time.Now().After(end) {
				t.Fatalf("the board never showed %s; it has %+v", what, bd)
			}
		}
	}
	dial := func(name string) *sshtest.Client {
		c := sshtest.MustDial(t, b.front, sshtest.Options{User: name, Width: 120, Height: 40})
		// The first screen waits on SSH through HAProxy and the attendee's
		// run being made in PostgreSQL, several attendees at once (a
		// reconnect also waits for HAProxy to take the dead process out):
		// six times the usual wait.
		c.WaitScreen(6*pgtest.WaitTimeout(), "renewal-race", "following the presenter")
		return c
	}
	clients := map[string]*sshtest.Client{}
	for i := range n {
		name := fmt.Sprintf("ada%d", i)
		clients[name] = dial(name)
	}
	bd := waitBoard(fmt.Sprintf("%d seats", n), func(bd room.Board) bool { return len(bd.Seats) == n })
	on := map[int][]string{}
	for _, s := range bd.Seats {
		on[b.serveOf(s)] = append(on[b.serveOf(s)], s.Name)
	}
	if len(on[0]) == 0 || len(on[1]) == 0 || len(on[-1]) != 0 {
		t.Fatalf("through the balancer, attendees landed %v (by serve process), want some on each", on)
	}

	// One presenter leads everyone, whichever process serves them.
	sc, err := scenario.Builtin("renewal-race")
	if err != nil {
		t.Fatal(err)
	}
	lg := sc.Log()
	if _, err := pres.SetLead(ctx, room.Lead{Scenario: sc.Name, Knobs: scenario.Knobs{Renewal: scenario.RenewalBlind, Fencing: scenario.FencingOff}, Pos: 3, T: lg[2].T}); err != nil {
		t.Fatal(err)
	}
	for name, c := range clients {
		// The lead reaches each serve process through PostgreSQL, and
		// each attendee's run moves to event 3: three times the usual wait.
		if _, err := c.Await(3*pgtest.WaitTimeout(), "event 3/6"); err != nil {
			t.Fatalf("%s did not follow the lead: %v", name, err)
		}
	}
	// Each answers the question before A's heartbeat arrives.
	for _, c := range clients {
		// A step runs in PostgreSQL, shared by two serve processes:
		// twice the usual wait.
		c.Press("l")
		c.WaitScreen(2*pgtest.WaitTimeout(), "event 4/6")
		c.Press("l")
		c.WaitScreen(2*pgtest.WaitTimeout(), "esc skips the question")
		c.Press("1")
		c.WaitScreen(2*pgtest.WaitTimeout(), "event 5/6")
	}
	bd = waitBoard(fmt.Sprintf("%d votes", n), func(bd room.Board) bool {
		total := 0
		for _, q := range bd.Votes {
			for _, v := range q {
				total += v
			}
		}
		return total == n && len(bd.Seats) == n
	})
	if len(bd.Votes) != 1 {
		t.Errorf("the board has votes on %d questions, want one: %+v", len(bd.Votes), bd.Votes)
	}

	// Kill the first serve process outright.
	killed := b.serves[0]
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-killed.done
	for _, name := range on[0] {
		// The session ends once the client sees the connection HAProxy
		// held go: three times the usual wait.
		clients[name].WaitGone(3 * pgtest.WaitTimeout())
		_ = clients[name].Close()
		// Reconnecting through the balancer lands on the live process.
		clients[name] = dial(name)
	}
	bd = waitBoard("the dead process's seats gone and everyone on the live one", func(bd room.Board) bool {
		if len(bd.Seats) != n {
			return false
		}
		for _, s := range bd.Seats {
			if b.serveOf(s) != 1 {
				return false
			}
		}
		return true
	})
	names := map[string]bool{}
	for _, s := range bd.Seats {
		names[s.Name] = true
	}
	if len(names) != n {
		t.Errorf("the board counts %d attendees by name after the reconnects, want %d: %+v", len(names), n, bd.Seats)
	}
	for _, c := range clients {
		_ = c.Close()
	}
	if err := b.serves[1].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// serve ends its sessions and closes the room on SIGTERM: three times
	// the usual wait.
	b.serves[1].wait(t, 3*pgtest.WaitTimeout())
}
