package pgserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A leaserace killed outright (SIGKILL) cannot remove what it was making: a
// cluster directory still in initdb, a container Docker is still starting.
// Each is marked with its owner, the process that made it, so that a later
// start can tell for sure that the owner is gone and remove it. A pid alone
// is not enough, as pids get reused: the owner is the pid together with the
// process's start time and the boot it ran in.

// owner names one process on one machine.
type owner struct {
	pid int
	// start is the process's start time in clock ticks after boot
	// (/proc/PID/stat field 22).
	start string
	// boot is the kernel's boot id: a restart ends every process.
	boot string
	// pidNS names the pid namespace the pid means something in.
	pidNS string
	host  string
	uid   int
}

// currentOwner is this process as an owner.
func currentOwner() (owner, error) {
	me := owner{pid: os.Getpid(), uid: os.Geteuid()}
	var err error
	if me.start, _, err = procStart(me.pid); err != nil {
		return owner{}, err
	}
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return owner{}, fmt.Errorf("reading the boot id: %w", err)
	}
	me.boot = strings.TrimSpace(string(b))
	if me.pidNS, err = os.Readlink("/proc/self/ns/pid"); err != nil {
		return owner{}, fmt.Errorf("reading the pid namespace: %w", err)
	}
	if me.host, err = os.Hostname(); err != nil {
		return owner{}, fmt.Errorf("reading the host name: %w", err)
	}
	return me, nil
}

// procStart reads a process's start time, and whether it is a zombie (gone
// for every purpose here: it holds no files, and nobody may ever reap it).
func procStart(pid int) (start string, zombie bool, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false, err
	}
	// The command name, in parentheses, may hold spaces: count fields after it.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", false, fmt.Errorf("/proc/%d/stat has an unexpected form", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", false, fmt.Errorf("/proc/%d/stat has an unexpected form", pid)
	}
	return f[19], f[0] == "Z", nil
}

// gone reports whether o is a process of ours (same host and user) that has
// certainly ended. Whatever me cannot judge, such as a pid in another pid
// namespace, counts as alive.
func (me owner) gone(o owner) bool {
	if o.host != me.host || o.uid != me.uid {
		return false
	}
	if o.boot != me.boot {
		return true // the machine has restarted since
	}
	if o.pidNS != me.pidNS {
		return false
	}
	start, zombie, err := procStart(o.pid)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	return zombie || start != o.start
}

func (o owner) String() string {
	return fmt.Sprintf("leaserace process %d", o.pid)
}

// The owner's fields, as lines of an owner file and as container labels.
const (
	ownerPID   = "pid"
	ownerStart = "start"
	ownerBoot  = "boot"
	ownerPIDNS = "pidns"
	ownerHost  = "host"
	ownerUID   = "uid"
)

func (o owner) fields() [][2]string {
	return [][2]string{
		{ownerPID, strconv.Itoa(o.pid)},
		{ownerStart, o.start},
		{ownerBoot, o.boot},
		{ownerPIDNS, o.pidNS},
		{ownerHost, o.host},
		{ownerUID, strconv.Itoa(o.uid)},
	}
}

// ownerFromFields is the inverse of fields; ok is false unless every field
// is there and the numbers are numbers.
func ownerFromFields(get func(string) string) (o owner, ok bool) {
	var errPID, errUID error
	o.pid, errPID = strconv.Atoi(get(ownerPID))
	o.uid, errUID = strconv.Atoi(get(ownerUID))
	o.start, o.boot, o.pidNS, o.host = get(ownerStart), get(ownerBoot), get(ownerPIDNS), get(ownerHost)
	ok = errPID == nil && errUID == nil && o.pid > 0 && o.start != "" && o.boot != "" && o.pidNS != "" && o.host != ""
	return o, ok
}

// ownerLabelPrefix starts the label of each owner field on a container.
const ownerLabelPrefix = "org.leaserace.owner."

func (o owner) labels() map[string]string {
	m := map[string]string{}
	for _, f := range o.fields() {
		m[ownerLabelPrefix+f[0]] = f[1]
	}
	return m
}

func ownerFromLabels(labels map[string]string) (owner, bool) {
	return ownerFromFields(func(k string) string { return labels[ownerLabelPrefix+k] })
}

// ownerFile is the owner's file in a local cluster's directory.
const ownerFile = "leaserace-owner"

// writeOwnerFile records o in dir. It is written whole under another name
// and then renamed, so a kill half-way leaves no file rather than a torn one.
func writeOwnerFile(dir string, o owner) error {
	var b strings.Builder
	for _, f := range o.fields() {
		fmt.Fprintf(&b, "%s=%s\n", f[0], f[1])
	}
	tmp := filepath.Join(dir, ownerFile+".new")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("recording who owns the local cluster: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, ownerFile)); err != nil {
		return fmt.Errorf("recording who owns the local cluster: %w", err)
	}
	return nil
}

// errNotOurOwnerFile means an owner file that uid did not write.
var errNotOurOwnerFile = errors.New("the owner file is not a regular file of ours")

// readOwnerFile reads dir's owner file, trusting it only if it is a regular
// file that uid owns: nobody else can make one, so a file planted by another
// user cannot get a directory removed.
func readOwnerFile(dir string, uid int) (owner, error) {
	path := filepath.Join(dir, ownerFile)
	fi, err := os.Lstat(path)
	if err != nil {
		return owner{}, err
	}
	fuid, ok := fileUID(fi)
	if !fi.Mode().IsRegular() || !ok || fuid != uid || fi.Size() > 4096 {
		return owner{}, errNotOurOwnerFile
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return owner{}, err
	}
	kv := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			kv[k] = v
		}
	}
	o, ok := ownerFromFields(func(k string) string { return kv[k] })
	if !ok || o.uid != uid {
		return owner{}, fmt.Errorf("%s: %w", path, errNotOurOwnerFile)
	}
	return o, nil
}
