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
	// mark is LEASERACE_RUN_MARK as this process found it, or "". It plays
	// no part in telling whether the owner is gone: it lets a CI run count
	// only the clusters and containers its own tests made.
	mark string
}

// EnvRunMark names the variable whose value is recorded as the mark of
// every cluster and container this process makes (the owner file's "mark"
// line, the label org.leaserace.owner.mark); a local server also inherits
// it in its environment. CI sets it so that its leftover checks count
// only its own run's, not those of a leaserace someone runs beside it.
const EnvRunMark = "LEASERACE_RUN_MARK"

// runMark reads the mark. Only letters, digits, '.', '_' and '-', up to 64,
// are recorded: the value goes into a line of a file and a label, and a
// newline would forge another line. Anything else marks nothing.
func runMark() string {
	v := os.Getenv(EnvRunMark)
	if len(v) > 64 {
		return ""
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return ""
		}
	}
	return v
}

// currentOwner is this process as an owner.
func currentOwner() (owner, error) {
	me := owner{pid: os.Getpid(), uid: os.Geteuid(), mark: runMark()}
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
	f, err := procStat(pid)
	if err != nil {
		return "", false, err
	}
	if len(f) < 20 {
		return "", false, fmt.Errorf("/proc/%d/stat: %w", pid, errStatForm)
	}
	return f[19], f[0] == "Z", nil
}

// errStatForm is a /proc/PID/stat this package cannot read the fields of.
var errStatForm = errors.New("unexpected form")

// procStat reads the fields of /proc/PID/stat after the command name,
// from the state (f[0]) and the parent's pid (f[1]) on.
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	// The command name, in parentheses, may hold spaces: count fields after it.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 2 {
		return nil, fmt.Errorf("/proc/%d/stat: %w", pid, errStatForm)
	}
	return f, nil
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
	ownerMark  = "mark" // only when set
)

func (o owner) fields() [][2]string {
	f := [][2]string{
		{ownerPID, strconv.Itoa(o.pid)},
		{ownerStart, o.start},
		{ownerBoot, o.boot},
		{ownerPIDNS, o.pidNS},
		{ownerHost, o.host},
		{ownerUID, strconv.Itoa(o.uid)},
	}
	if o.mark != "" {
		f = append(f, [2]string{ownerMark, o.mark})
	}
	return f
}

// ownerFromFields is the inverse of fields; ok is false unless every field
// (but the mark) is there and the numbers are numbers.
func ownerFromFields(get func(string) string) (o owner, ok bool) {
	var errPID, errUID error
	o.pid, errPID = strconv.Atoi(get(ownerPID))
	o.uid, errUID = strconv.Atoi(get(ownerUID))
	o.start, o.boot, o.pidNS, o.host = get(ownerStart), get(ownerBoot), get(ownerPIDNS), get(ownerHost)
	o.mark = get(ownerMark)
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

// Owner is this process as the owner of what it makes outside this
// package (pgcontainer's containers): read once, then asked for its labels
// and about other owners' labels.
type Owner struct{ me owner }

// CurrentOwner is this process as an owner. An error means this machine
// cannot name its processes (no /proc): what it makes gets no owner, and
// nothing is judged abandoned.
func CurrentOwner() (Owner, error) {
	me, err := currentOwner()
	return Owner{me}, err
}

// Labels name this process as the owner of a container, so that a later
// start can tell when it is gone (Gone).
func (o Owner) Labels() map[string]string { return o.me.labels() }

// OwnerPIDLabel is one label every set of owner labels has: the one to list
// containers by.
const OwnerPIDLabel = ownerLabelPrefix + ownerPID

// Gone tells whether labels name an owner that is a process of ours (this
// host, this user) and has certainly ended, and who it was. Labels that
// name no owner, or one o cannot judge, are not gone.
func (o Owner) Gone(labels map[string]string) (who string, gone bool) {
	other, ok := ownerFromLabels(labels)
	if !ok {
		return "", false
	}
	return other.String(), o.me.gone(other)
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
