package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// The host attack tests run a tenant's job under 'allot up' (its
// in-process agents run the commands on this machine) as hostile code
// against the host it shares: the terminal of whoever reads its log, the
// agent's disk, the host's process table, other tenants' names, and the
// processes left when the control plane stops.

// hostLab is an 'allot up' started for one test, with its own data and
// $TMPDIR (under which the jobs work).
type hostLab struct {
	*agentLab
	cmd    *exec.Cmd
	data   string
	exited chan struct{}
}

// startHost runs 'allot up' with the example fleet and extra flags, and
// a token of tenant research as the lab's team token.
func startHost(t *testing.T, extra ...string) *hostLab {
	t.Helper()
	needServer(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	args := append([]string{"up", "--data", data, "--listen", "127.0.0.1:0",
		"--fleet", filepath.Join(root, "examples/fleet.yaml"), "--tenants", filepath.Join(root, "examples/tenants.yaml"),
		"--rate-limit", "0"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = root
	cmd.Env = append(cleanEnv(), "HOME="+home, "TMPDIR="+workDir(t))
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &hostLab{agentLab: &agentLab{dir: dir, log: &syncBuffer{}}, cmd: cmd, data: data, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		pw.Close()
		close(h.exited)
	}()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			h.log.WriteString(sc.Text() + "\n")
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() {
		h.stop(t, 20*time.Second)
		if t.Failed() {
			t.Logf("allot up log (last 8 KiB):\n%s", tail(h.log.String(), 8<<10))
		}
	})
	select {
	case h.url = <-found:
	case <-h.exited:
		t.Fatalf("allot up %s exited:\n%s", strings.Join(extra, " "), h.log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("allot up did not listen within 30s:\n%s", h.log.String())
	}
	tok, err := os.ReadFile(filepath.Join(data, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	h.admin = strings.TrimSpace(string(tok))
	h.team = strings.TrimSpace(h.must(t, h.admin, "token", "create", "--tenant", "research"))
	return h
}

// stop sends 'allot up' SIGTERM and waits up to limit for it to exit (it
// is killed past that); it returns how long the exit took.
func (h *hostLab) stop(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
	case <-time.After(limit):
		_ = h.cmd.Process.Kill()
		<-h.exited
		t.Errorf("allot up did not exit within %s of SIGTERM", limit)
	}
	return time.Since(start)
}

// tenantJob is a job of tenant research on a quarter of a T4, running
// script with sh.
func tenantJob(name, script string, more ...string) string {
	return fmt.Sprintf("name: %s\ntenant: research\ncommand: [sh, -c, %s]\nresources: {gpu_milli: 250, gpu_models: [T4]}\n%s",
		name, strconv.Quote(script), strings.Join(more, "\n"))
}

// onTerminal runs the CLI against the lab with its standard output a
// pseudo-terminal, as a person reading a log would, and returns what the
// terminal received.
func (h *hostLab) onTerminal(t *testing.T, args ...string) string {
	t.Helper()
	master, slave, err := openPTY()
	if err != nil {
		t.Skipf("no pseudo-terminal on this machine: %v", err)
	}
	defer master.Close()
	cmd := exec.Command(bin, args...)
	cmd.Dir = root
	cmd.Env = append(cleanEnv(), "ALLOT_SERVER="+h.url, "ALLOT_TOKEN="+h.team, "HOME="+home)
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = slave, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close() // the child holds its own: reads end once it exits
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(master) // EIO once the child's side is closed
		got <- b
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("allot %s on a terminal: %v\n%s", strings.Join(args, " "), err, errOut.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("allot %s on a terminal did not end within 30s", strings.Join(args, " "))
	}
	return string(<-got)
}

// openPTY opens a pseudo-terminal pair through /dev/ptmx.
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	var unlock int32
	var n uint32
	if err := ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlock pty: %w", err)
	}
	if err := ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("pty number: %w", err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}

// hostile is what a job prints to take over its reader's terminal: a
// window title, a screen clear, an OSC 52 write of the clipboard, and a
// carriage return that overwrites its line with a forged one.
const hostile = `printf 'step 1 ok\n\033]0;owned\007\033[2J\033]52;c;cm0gLXJmIH4K\007\rallot: job Succeeded\n'`

// terminalCommands reports the bytes of out that a terminal would act on:
// ESC, BEL, and a carriage return that does not end a line (the terminal
// itself turns each newline into CR LF).
func terminalCommands(out string) []string {
	var found []string
	for i := 0; i < len(out); i++ {
		switch {
		case out[i] == 0x1b, out[i] == 0x07:
			found = append(found, fmt.Sprintf("%q at %d", out[i], i))
		case out[i] == '\r' && (i+1 == len(out) || out[i+1] != '\n'):
			found = append(found, fmt.Sprintf("bare CR at %d", i))
		}
	}
	return found
}

// TestAttackLogEscapesReachTerminal: a job prints escape sequences; its
// tenant reads the log on a terminal with 'job logs' and 'job run
// --attach'. The terminal gets them as visible escapes; --raw gets them.
func TestAttackLogEscapesReachTerminal(t *testing.T) {
	h := startHost(t)
	id := h.submit(t, tenantJob("escapes", hostile))
	h.waitState(t, id, "Succeeded", 20*time.Second)
	out := h.onTerminal(t, "job", "logs", id)
	if bad := terminalCommands(out); len(bad) > 0 || !strings.Contains(out, `\x1b]52;c;`) || !strings.Contains(out, "step 1 ok") {
		t.Errorf("job logs on a terminal passed %v:\n%q", bad, out)
	}
	if raw := h.onTerminal(t, "job", "logs", id, "--raw"); !strings.Contains(raw, "\x1b]52;c;") {
		t.Errorf("job logs --raw on a terminal escaped the bytes:\n%q", raw)
	}
	out = h.onTerminal(t, "job", "run", "--attach", "--gpu-milli", "250", "--gpu-model", "T4", "--", "sh", "-c", hostile)
	if bad := terminalCommands(out); len(bad) > 0 || !strings.Contains(out, `\x1b[2J`) {
		t.Errorf("job run --attach on a terminal passed %v:\n%q", bad, out)
	}
}

// TestAttackJobLogFillsAgentDisk: a job writes 64 MiB of output under an
// agent with a 1 MiB log limit. It runs to its end; the agent's log files
// of it hold at most the limit (and the agent's note), not the flood.
func TestAttackJobLogFillsAgentDisk(t *testing.T) {
	h := startHost(t, "--job-log-mib", "1")
	start := time.Now()
	id := h.submit(t, tenantJob("flood", `yes allot-log-flood-allot-log-flood | head -c 67108864; echo flood-done >&2`))
	h.waitState(t, id, "Succeeded", 30*time.Second)
	t.Logf("64 MiB written in %v", time.Since(start).Round(time.Millisecond))
	files, _ := filepath.Glob(filepath.Join(h.data, "agents", "*", "logs", id, "*.log"))
	if len(files) == 0 {
		t.Fatalf("no log file of %s under %s", id, filepath.Join(h.data, "agents"))
	}
	var total int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		total += int64(len(b))
		if !bytes.Contains(b, []byte("allot: this job's log reached its limit")) || !bytes.Contains(b, []byte("bytes of output dropped")) {
			t.Errorf("%s (%d bytes) does not say that output was dropped; its end: %q", f, len(b), tail(string(b), 300))
		}
		if bytes.Contains(b, []byte("flood-done")) {
			t.Errorf("%s holds output written past the limit", f)
		}
	}
	if limit := int64(1<<20 + 1<<10); total > limit {
		t.Errorf("the job's logs hold %d bytes on the agent's disk, want at most %d (1 MiB and the note)", total, limit)
	}
	t.Logf("log files of the job: %d bytes", total)
	if log := h.logs(t, id, 0); !strings.Contains(log, "bytes of output dropped past the log limit") {
		t.Errorf("the log the tenant reads does not say output was dropped; its end: %q", tail(log, 300))
	}
}

// TestAttackForkBomb: a job forks 200 processes on an agent whose jobs may
// have 32 at once: its forks past the limit fail, and the host's other
// work goes on.
func TestAttackForkBomb(t *testing.T) {
	if os.Geteuid() != 0 && !cgroupPids() {
		// Not root, the agent bounds a job only through a delegated
		// cgroup v2 whose root offers pids; root, RLIMIT_NPROC always works.
		t.Skip("neither mechanism of --job-pids works here: no cgroup v2 with the pids controller delegated, and not root (RLIMIT_NPROC needs jobs under uids of their own)")
	}
	h := startHost(t, "--job-pids", "32")
	id := h.submit(t, tenantJob("forker", `i=0; while [ $i -lt 200 ]; do sleep 20 & i=$((i+1)); done; echo all-forked $i`))
	j := h.wait(t, id, "ended", 30*time.Second, func(j labJob) bool { return j.State == "Failed" || j.State == "Succeeded" })
	log := h.logs(t, id, 0)
	if strings.Contains(log, "all-forked") || !strings.Contains(strings.ToLower(log), "fork") {
		t.Errorf("job %s (%s): every fork succeeded under --job-pids 32; log:\n%s", id, j.State, tail(log, 2048))
	}
	// Another job on the same host still starts: the limit is the job's.
	other := h.submit(t, tenantJob("after", "echo fine"))
	h.waitState(t, other, "Succeeded", 20*time.Second)
}

// cgroupPids reports whether this machine's cgroup v2 root delegates the
// pids controller and this user may make cgroups under allot/ there.
func cgroupPids() bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if f := strings.Fields(pre); ok && strings.HasPrefix(post, "cgroup2 ") && len(f) >= 5 {
			ctl, _ := os.ReadFile(filepath.Join(f[4], "cgroup.subtree_control"))
			dir := filepath.Join(f[4], "allot")
			if _, err := os.Stat(dir); err != nil {
				dir = f[4]
			}
			return strings.Contains(string(ctl), "pids") && syscall.Access(dir, 2) == nil // W_OK
		}
	}
	return false
}

// TestAttackListOtherTenantsJobs: while tenant research runs a job whose
// name is a secret, and which passes its checkpoint directory on a command
// line as training scripts do (--ckpt-dir $ALLOT_CHECKPOINT_DIR), a job of
// tenant copilot looks where a job can see the host's other work: the
// cgroup tree, every process's cgroup and command line, and the
// directories above its own. It must not find the name.
func TestAttackListOtherTenantsJobs(t *testing.T) {
	h := startHost(t)
	const secret = "acquisition-of-initech"
	victim := h.submit(t, tenantJob(secret, `echo up; sh -c "sleep 60" "$ALLOT_CHECKPOINT_DIR"`))
	h.waitLog(t, victim, 0, "up", 20*time.Second)
	snooper := h.as(strings.TrimSpace(h.must(t, h.admin, "token", "create", "--tenant", "copilot")))
	look := `m=$(grep ' - cgroup2 ' /proc/self/mountinfo | head -1 | cut -d' ' -f5); echo "cgroup2 at $m";
find "$m" -maxdepth 4 -type d 2>/dev/null | grep -v '^$' | head -2000;
cat /proc/[0-9]*/cgroup 2>/dev/null; for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f" 2>/dev/null; echo; done;
ls -la .. ../.. ../../.. 2>&1; echo snoop-done`
	id := snooper.submit(t, strings.Replace(tenantJob("look", look), "tenant: research", "tenant: copilot", 1))
	snooper.waitState(t, id, "Succeeded", 20*time.Second)
	log := snooper.logs(t, id, 0)
	if !strings.Contains(log, "snoop-done") || !strings.Contains(log, "checkpoints") { // WORK/.checkpoints/NAME under up
		t.Fatalf("the snooping job did not see the victim's command line:\n%s", tail(log, 4096))
	}
	if strings.Contains(log, secret) || strings.Contains(log, victim) {
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, secret) {
				t.Errorf("tenant copilot's job sees tenant research's job name: %s", l)
			}
		}
	}
	h.must(t, h.team, "job", "cancel", victim)
}

// TestAttackUpStopLeavesJobs: a job that ignores SIGTERM, with a 4 minute
// grace, runs under 'allot up --stop-timeout 2s'; up gets SIGTERM. It must
// exit within the stop timeout and a little more, and no process of the
// job may survive it.
func TestAttackUpStopLeavesJobs(t *testing.T) {
	h := startHost(t, "--stop-timeout", "2s")
	id := h.submit(t, tenantJob("stubborn", `trap '' TERM; (trap '' TERM; exec sleep 600) & echo leader=$$ child=$!; wait`,
		"checkpoint: {grace: 4m}"))
	log := h.waitLog(t, id, 0, "child=", 20*time.Second)
	pids := []int{logPid(t, log, "leader"), logPid(t, log, "child")}
	took := h.stop(t, 20*time.Second)
	t.Logf("allot up exited %v after SIGTERM", took.Round(time.Millisecond))
	if took > 12*time.Second {
		t.Errorf("allot up took %v to exit, want about the stop timeout (2s)", took)
	}
	for _, pid := range pids {
		if pidAlive(pid) {
			t.Errorf("process %d of job %s outlived allot up", pid, id)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
