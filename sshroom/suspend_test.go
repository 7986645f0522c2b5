package sshroom

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/leaserace/leaserace/internal/testwait"
	"github.com/leaserace/leaserace/sshroom/sshtest"
)

// TestSuspendKeyIsHarmless: a model that asks to suspend on Ctrl-Z would,
// in bubbletea v1, send SIGTSTP to the server's whole process group and
// freeze every session. The room serves from a child process in a process
// group of its own that counts SIGTSTP instead of stopping; after Ctrl-Z
// the session must still answer, and the child must have seen no signal.
// Ctrl-C ends that one session and nobody else's.
func TestSuspendKeyIsHarmless(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSuspendHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ROOM_SUSPEND_HELPER=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lines := bufio.NewScanner(stdout)
	var addr string
	for lines.Scan() {
		if a, ok := strings.CutPrefix(lines.Text(), "ADDR "); ok {
			addr = a
			break
		}
	}
	if addr == "" {
		t.Fatalf("the helper did not say where it listens")
	}

	alice := sshtest.MustDial(t, addr, sshtest.Options{User: "alice"})
	bob := sshtest.MustDial(t, addr, sshtest.Options{User: "bob"})
	alice.WaitScreen(testwait.Timeout(), "probe user=alice")
	bob.WaitScreen(testwait.Timeout(), "probe user=bob")
	// The probe answers Ctrl-Z and z with tea.Suspend, then counts on
	// screen once the program has handled it: no pause needed.
	alice.Press("\x1a")
	alice.WaitScreen(testwait.Timeout(), "suspends=1")
	alice.Press("z")
	alice.WaitScreen(testwait.Timeout(), "suspends=2")
	alice.Press("+")
	alice.WaitScreen(testwait.Timeout(), "count=1")

	alice.Press("\x03") // Ctrl-C: the probe quits
	if code := alice.WaitExit(testwait.Timeout()); code != 0 {
		t.Errorf("alice's exit status after Ctrl-C: %d, want 0", code)
	}
	bob.Press("+")
	bob.WaitScreen(testwait.Timeout(), "count=1")

	_ = stdin.Close()
	var report string
	for lines.Scan() {
		if r, ok := strings.CutPrefix(lines.Text(), "SIGNALS "); ok {
			report = r
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the helper: %v", err)
	}
	if report != "SIGTSTP=0" {
		t.Errorf("the serving process got %q, want SIGTSTP=0", report)
	}
}

// TestSuspendHelperProcess is the serving child of TestSuspendKeyIsHarmless.
func TestSuspendHelperProcess(t *testing.T) {
	if os.Getenv("ROOM_SUSPEND_HELPER") != "1" {
		t.Skip("runs only as TestSuspendKeyIsHarmless's child")
	}
	var tstp atomic.Int64
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTSTP)
	counted := make(chan struct{})
	go func() {
		defer close(counted)
		for range sig {
			tstp.Add(1)
		}
	}()
	rec := newRecorder()
	s, err := New(Config{Listen: "127.0.0.1:0", HostKeyDir: t.TempDir() + "/k"}, rec.app)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	fmt.Printf("ADDR %s\n", s.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	signal.Stop(sig)
	close(sig)
	<-counted
	fmt.Printf("SIGNALS SIGTSTP=%d\n", tstp.Load())
}
