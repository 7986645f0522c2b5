package pgserver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustCurrentOwner(t *testing.T) owner {
	t.Helper()
	me, err := currentOwner()
	if err != nil {
		t.Skipf("this system cannot name a process (no /proc?): %v", err)
	}
	return me
}

// killedOwner runs a real process, notes it as an owner, and kills it.
func killedOwner(t *testing.T) owner {
	t.Helper()
	me := mustCurrentOwner(t)
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := me
	o.pid = cmd.Process.Pid
	start, _, err := procStart(o.pid)
	if err != nil {
		t.Fatal(err)
	}
	o.start = start
	if me.gone(o) {
		t.Fatal("a running process counts as gone")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return o
}

func TestOwnerGone(t *testing.T) {
	me := mustCurrentOwner(t)
	dead := killedOwner(t)
	with := func(o owner, edit func(*owner)) owner { edit(&o); return o }
	for _, c := range []struct {
		name string
		o    owner
		gone bool
	}{
		{"this process", me, false},
		{"a killed process", dead, true},
		// Its pid now belongs to a process started at another time.
		{"a reused pid", with(me, func(o *owner) { o.start = "1" }), true},
		{"a killed process before a reboot", with(dead, func(o *owner) { o.boot = "another-boot" }), true},
		{"a live pid before a reboot", with(me, func(o *owner) { o.boot = "another-boot" }), true},
		// What this process cannot see, it must not judge.
		{"another host", with(dead, func(o *owner) { o.host = "elsewhere" }), false},
		{"another user", with(dead, func(o *owner) { o.uid++ }), false},
		{"another pid namespace", with(dead, func(o *owner) { o.pidNS = "pid:[1]" }), false},
	} {
		if got := me.gone(c.o); got != c.gone {
			t.Errorf("%s: gone = %v, want %v", c.name, got, c.gone)
		}
	}
}

// A zombie holds nothing and may never be reaped (in a container without an
// init): its owner is gone.
func TestOwnerGoneZombie(t *testing.T) {
	me := mustCurrentOwner(t)
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	o := me
	o.pid = cmd.Process.Pid
	o.start, _, _ = procStart(o.pid)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, zombie, _ := procStart(o.pid); zombie {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the child never became a zombie")
		}
	}
	if !me.gone(o) {
		t.Error("a zombie owner counts as alive")
	}
}

func TestOwnerLabelsRoundTrip(t *testing.T) {
	me := mustCurrentOwner(t)
	back, ok := ownerFromLabels(me.labels())
	if !ok || back != me {
		t.Fatalf("labels %v read back as %+v, %v", me.labels(), back, ok)
	}
	for k := range me.labels() {
		if k == ownerLabelPrefix+ownerMark {
			continue // optional: see TestOwnerRunMark
		}
		l := me.labels()
		delete(l, k)
		if _, ok := ownerFromLabels(l); ok {
			t.Errorf("labels without %s were accepted", k)
		}
	}
}

// The face the container provider reads labels through: a process of ours
// that was killed is gone, this one and unreadable labels are not.
func TestGoneOwnerByLabels(t *testing.T) {
	t.Parallel()
	me, err := CurrentOwner()
	if err != nil {
		t.Skipf("this system cannot name a process (no /proc?): %v", err)
	}
	mine := me.Labels()
	if _, ok := mine[OwnerPIDLabel]; !ok {
		t.Fatalf("this process's labels %v lack %s, which lists are filtered by", mine, OwnerPIDLabel)
	}
	if who, gone := me.Gone(mine); gone {
		t.Errorf("this live process (%s) counts as gone", who)
	}
	dead := killedOwner(t)
	who, gone := me.Gone(dead.labels())
	if !gone || who != dead.String() {
		t.Errorf("a killed owner's labels gave %q, %v; want %q, true", who, gone, dead.String())
	}
	partial := dead.labels()
	delete(partial, ownerLabelPrefix+ownerBoot)
	if _, gone := me.Gone(partial); gone {
		t.Error("labels without the boot id were judged gone")
	}
	if _, gone := me.Gone(nil); gone {
		t.Error("no labels were judged gone")
	}
}

// progressLines collects progress from any goroutine.
type progressLines struct {
	mu    sync.Mutex
	lines []string
}

func (p *progressLines) add(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, s)
}

// value that could forge a line of the file marks nothing.
func TestOwnerRunMark(t *testing.T) {
	for _, c := range []struct{ env, want string }{
		{"", ""},
		{"ci-1733330000-4242", "ci-1733330000-4242"},
		{"a.b_C-9", "a.b_C-9"},
		{strings.Repeat("x", 64), strings.Repeat("x", 64)},
		{strings.Repeat("x", 65), ""},
		{"ci\nuid=0", ""},
		{"two words", ""},
		{"mark=x", ""},
	} {
		t.Setenv(EnvRunMark, c.env)
		me := mustCurrentOwner(t)
		if me.mark != c.want {
			t.Errorf("%s=%q: mark %q, want %q", EnvRunMark, c.env, me.mark, c.want)
			continue
		}
		back, ok := ownerFromLabels(me.labels())
		if !ok || back != me {
			t.Errorf("mark %q: labels %v read back as %+v, %v", c.want, me.labels(), back, ok)
		}
		_, hasLabel := me.labels()[ownerLabelPrefix+ownerMark]
		if hasLabel != (c.want != "") {
			t.Errorf("mark %q: a mark label is there: %v", c.want, hasLabel)
		}
		dir := t.TempDir()
		if err := writeOwnerFile(dir, me); err != nil {
			t.Fatal(err)
		}
		read, err := readOwnerFile(dir, me.uid)
		if err != nil || read != me {
			t.Errorf("mark %q: the owner file read back as %+v, %v", c.want, read, err)
		}
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			t.Fatal(err)
		}
		if hasLine := slices.Contains(strings.Split(string(b), "\n"), "mark="+c.want); hasLine != (c.want != "") {
			t.Errorf("mark %q: the owner file's mark line is there: %v\n%s", c.want, hasLine, b)
		}
	}
}

// A local cluster carries the mark in its owner file and its server's
// environment, which is where CI's leftover check looks.
func TestLocalClusterCarriesRunMark(t *testing.T) {
	mark := "test-" + strconv.Itoa(os.Getpid())
	t.Setenv(EnvRunMark, mark)
	srv, err := LocalProvider{}.Start(t.Context(), nil)
	if errors.Is(err, ErrNoServerBinaries) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	me := mustCurrentOwner(t)
	o, err := readOwnerFile(srv.ID, me.uid)
	if err != nil || o.mark != mark {
		t.Errorf("owner file: %+v, %v; want mark %q", o, err, mark)
	}
	pidLine, err := os.ReadFile(filepath.Join(srv.ID, "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _, _ := strings.Cut(string(pidLine), "\n")
	env, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(env), "\x00"), EnvRunMark+"="+mark) {
		t.Errorf("the server (pid %s) does not carry %s=%s in its environment", pid, EnvRunMark, mark)
	}
}
