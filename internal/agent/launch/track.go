package launch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Tracker holds on to every process of one attempt, whatever it forks:
// the agent signals and kills through it, never through a PID a job could
// have chosen or outlived.
type Tracker interface {
	// Start starts cmd so that it and everything it forks are tracked.
	Start(cmd *exec.Cmd) error
	// Signal sends sig to every tracked process.
	Signal(sig syscall.Signal)
	// Kill SIGKILLs every tracked process and returns once none is left;
	// an error says some may be.
	Kill() error
	// Release frees what tracking holds, once Kill has returned.
	Release() error
}

// killWait bounds how long Kill waits for the kernel to empty what it
// tracks.
const killWait = 5 * time.Second

// ProcessGroup tracks an attempt as the process group its leader starts:
// what calls setsid or setpgid escapes it. It is the fallback where there
// is no writable cgroup v2; the agent then also kills by the job's dynamic
// uid (KillUID).
type ProcessGroup struct {
	pgid int
}

// Start implements Tracker.
func (g *ProcessGroup) Start(cmd *exec.Cmd) error {
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return err
	}
	g.pgid = cmd.Process.Pid
	return nil
}

// Signal implements Tracker.
func (g *ProcessGroup) Signal(sig syscall.Signal) {
	if g.pgid > 1 {
		_ = syscall.Kill(-g.pgid, sig)
	}
}

// Kill implements Tracker. Members the kernel keeps as zombies until
// their parent reaps them count as gone.
func (g *ProcessGroup) Kill() error {
	if g.pgid <= 1 {
		return nil
	}
	_ = syscall.Kill(-g.pgid, syscall.SIGKILL)
	return nil
}

// Release implements Tracker.
func (g *ProcessGroup) Release() error { return nil }

// Cgroup tracks an attempt as a cgroup v2 directory the process starts in
// (CLONE_INTO_CGROUP), so nothing it forks, at any time, is outside it; only
// a privileged process can move out. Path is created by Start and removed
// by Release.
type Cgroup struct {
	Path string
	// PidsMax, when above 0, is written to the cgroup's pids.max before
	// the process starts in it: a fork past it fails. The parent must
	// have the pids controller on for its children.
	PidsMax int64
}

// Start implements Tracker.
func (c *Cgroup) Start(cmd *exec.Cmd) error {
	if err := c.make(); err != nil {
		return err
	}
	fd, err := syscall.Open(c.Path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	defer syscall.Close(fd)
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	// A group of its own too, so a terminal's or a shell's job control
	// does not reach it.
	cmd.SysProcAttr.Setpgid = true
	return cmd.Start()
}

// make creates the cgroup and sets its limits.
func (c *Cgroup) make() error {
	if err := os.MkdirAll(c.Path, 0o755); err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	if c.PidsMax > 0 {
		if err := os.WriteFile(filepath.Join(c.Path, "pids.max"), []byte(strconv.FormatInt(c.PidsMax, 10)), 0o644); err != nil {
			return fmt.Errorf("cgroup: pids.max: %w", err)
		}
	}
	return nil
}

// Signal implements Tracker.
func (c *Cgroup) Signal(sig syscall.Signal) {
	for _, pid := range CgroupProcs(c.Path) {
		_ = syscall.Kill(pid, sig)
	}
}

// Kill implements Tracker: cgroup.kill where the kernel has it (5.14 on),
// else SIGKILL to each member until none is left.
func (c *Cgroup) Kill() error { return KillCgroup(c.Path) }

// Release implements Tracker: it removes the cgroup.
func (c *Cgroup) Release() error {
	var err error
	for i := 0; i < 50; i++ {
		if err = syscall.Rmdir(c.Path); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", c.Path, err)
}

// KillCgroup kills every process in the cgroup at path and returns once it
// is empty. A path that does not exist is empty.
func KillCgroup(path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	useKill := os.WriteFile(filepath.Join(path, "cgroup.kill"), []byte("1"), 0) == nil
	deadline := time.Now().Add(killWait)
	for {
		if !cgroupPopulated(path) {
			return nil
		}
		if !useKill {
			for _, pid := range CgroupProcs(path) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: processes left after %s", path, killWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// CgroupProcs lists the processes in the cgroup at path (not in its
// children); none when it cannot be read.
func CgroupProcs(path string) []int {
	b, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// cgroupPopulated reports whether a live process is in the cgroup (or a
// child of it). A cgroup that cannot be read counts as empty.
func cgroupPopulated(path string) bool {
	b, err := os.ReadFile(filepath.Join(path, "cgroup.events"))
	if err != nil {
		return len(CgroupProcs(path)) > 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return strings.TrimSpace(v) == "1"
		}
	}
	return false
}

// CgroupMount returns where the cgroup v2 hierarchy is mounted (the
// unified mount of a hybrid host, else the usual /sys/fs/cgroup), or ""
// when there is none.
func CgroupMount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	return parseCgroup2Mount(f)
}

// parseCgroup2Mount reads mountinfo lines ("ID PARENT MAJ:MIN ROOT MOUNT
// OPTIONS [TAGS...] - FSTYPE SOURCE SUPER") and returns the first cgroup2
// mount point.
func parseCgroup2Mount(r io.Reader) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, fs := strings.Fields(pre), strings.Fields(post)
		if len(fields) >= 5 && len(fs) >= 1 && fs[0] == "cgroup2" {
			return unescapeMount(fields[4])
		}
	}
	return ""
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// KillUID SIGKILLs every process whose real, effective or saved uid is
// uid, over and over until a scan of /proc finds none (a process may fork
// while it is scanned), and returns how many it signalled. It refuses root
// and the agent's own uid: only a uid allot gave a job alone may be swept.
func KillUID(uid uint32) (int, error) {
	if uid == 0 || uid == uint32(os.Getuid()) || uid == uint32(os.Geteuid()) {
		return 0, fmt.Errorf("launch: refusing to kill every process of uid %d", uid)
	}
	killed := 0
	deadline := time.Now().Add(killWait)
	for {
		pids := uidProcs(uid)
		if len(pids) == 0 {
			return killed, nil
		}
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("launch: processes of uid %d left after %s", uid, killWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// uidProcs lists the live (not zombie) processes of uid.
func uidProcs(uid uint32) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := strconv.FormatUint(uint64(uid), 10)
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		mine, zombie := false, false
		for _, line := range bytes.Split(b, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("State:")); ok {
				zombie = bytes.Contains(v, []byte("Z")) || bytes.Contains(v, []byte("X"))
			}
			if v, ok := bytes.CutPrefix(line, []byte("Uid:")); ok {
				f := strings.Fields(string(v))
				for i := 0; i < len(f) && i < 3; i++ {
					if f[i] == want {
						mine = true
					}
				}
			}
		}
		if mine && !zombie {
			pids = append(pids, pid)
		}
	}
	return pids
}

// StartTime is the start time of process pid in clock ticks since boot
// (field 22 of /proc/PID/stat): a PID and its start time name one process
// for good, where a PID alone may be reused.
func StartTime(pid int) (uint64, error) {
	f, err := stat(pid)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// Alive reports whether the process that started at start (StartTime) as
// pid still runs: a zombie, which has ended and waits for its parent to
// reap it, does not.
func Alive(pid int, start uint64) bool {
	f, err := stat(pid)
	if err != nil || f[0] == "Z" || f[0] == "X" {
		return false
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	return err == nil && st == start
}

// stat returns the fields of /proc/PID/stat from the third (the state)
// on: f[0] is field 3, f[19] field 22.
func stat(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	// comm may hold spaces and parentheses: the fields start after the
	// last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("launch: /proc/%d/stat: no comm", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return nil, fmt.Errorf("launch: /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	return f, nil
}
