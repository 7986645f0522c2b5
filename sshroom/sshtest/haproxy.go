package sshtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaserace/leaserace/internal/testwait"
)

// HAProxy is a real HAProxy in front of room servers, in TCP mode on
// loopback, as a course runs several serve processes behind one address.
type HAProxy struct {
	// Addr is the frontend's address: attendees connect here.
	Addr string
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	log  bytes.Buffer
}

func (h *HAProxy) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.log.Write(p)
}

// StartHAProxy starts HAProxy balancing round robin over backends
// (host:port each), and stops it when the test ends. A test without the
// haproxy binary is skipped, saying how to get it.
func StartHAProxy(tb testing.TB, backends ...string) *HAProxy {
	tb.Helper()
	path := NeedHAProxy(tb)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	front := l.Addr().String()
	l.Close()
	var servers strings.Builder
	for i, b := range backends {
		// Checked twice a second: a killed server is out of the rotation
		// within about a second.
		fmt.Fprintf(&servers, "    server serve%d %s check inter 500 fall 2 rise 2\n", i+1, b)
	}
	// SSH sessions sit quiet for minutes: long client and server timeouts,
	// or HAProxy cuts quiet attendees. A refused connection is tried
	// again, on another server.
	cfg := fmt.Sprintf(`global
    maxconn 4000
defaults
    mode tcp
    timeout connect 2s
    timeout client 1h
    timeout server 1h
    retries 3
    option redispatch
frontend room
    bind %s
    default_backend serves
backend serves
    balance roundrobin
%s`, front, servers.String())
	cfgPath := filepath.Join(tb.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		tb.Fatal(err)
	}
	h := &HAProxy{Addr: front, done: make(chan struct{})}
	h.cmd = exec.Command(path, "-f", cfgPath, "-db")
	h.cmd.Stdout, h.cmd.Stderr = h, h
	if err := h.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { _ = h.cmd.Wait(); close(h.done) }()
	tb.Cleanup(func() {
		_ = h.cmd.Process.Kill()
		<-h.done
	})
	// Starting haproxy, a process of its own that reads its config
	// before it binds, is slow on a loaded machine: three times the
	// usual wait.
	limit := 3 * testwait.Timeout()
	for end := time.Now().Add(limit); ; time.Sleep(50 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", front, time.Second)
		if err == nil {
			c.Close()
			return h
		}
		select {
		case <-h.done:
			tb.Fatalf("haproxy exited: %s", h.Log())
		default:
		}
		if time.Now().After(end) {
			tb.Fatalf("haproxy did not listen on %s within %s: %v\n%s", front, limit, err, h.Log())
		}
	}
}

// NeedHAProxy is the haproxy binary's path; a test without it is skipped,
// saying how to get it.
func NeedHAProxy(tb testing.TB) string {
	tb.Helper()
	path, err := exec.LookPath("haproxy")
	if err != nil {
		tb.Skipf("haproxy is not installed (%v): on Debian, apt-get install -y haproxy; .ci/run installs it", err)
	}
	return path
}

// Log is what HAProxy wrote.
func (h *HAProxy) Log() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.log.String()
}
