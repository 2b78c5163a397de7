package shim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/allot-dev/allot/internal/agent/launch"
)

// startWait bounds how long Start waits for a shim's answer.
const startWait = 30 * time.Second

// pollEvery is how often a Handle from Attach looks whether its shim still
// runs: it is not this process's child, so no wait tells.
const pollEvery = 100 * time.Millisecond

// Handle is the agent's hold on one shim: one it started (Start) or one a
// previous run of the agent left (Attach).
type Handle struct {
	pid      int
	start    uint64 // launch.StartTime of pid
	job      int    // the job's leader, 0 when unknown
	jobStart uint64
	exit     string
	order    string
	child    *os.Process    // set when this process started the shim
	inside   chan os.Signal // set for a supervisor in this process (Supervise)
	done     chan struct{}
	closing  chan struct{}
	once     sync.Once // closes closing
}

// Start starts a shim for s, in the cgroup v2 directory cgroup ("" leaves
// it in the caller's, and so does a kernel that refuses it), and returns
// once the shim has started the job, or why it could not. It calls record
// with the shim's PID and start time before the shim gets its spec, so that
// the caller records them first: a caller that dies before that leaves a
// shim that ends at once (its standard input closes), one that dies after
// leaves a shim its next run can find. When the job could not start, the
// shim has written its Exit (exit code 127).
func Start(s Spec, cgroup string, record func(pid int, start uint64) error) (*Handle, error) {
	spec, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("shim: spec: %w", err)
	}
	cmd, in, answer, err := spawn(cgroup)
	if err != nil && cgroup != "" {
		cmd, in, answer, err = spawn("")
	}
	if err != nil {
		return nil, fmt.Errorf("start shim: %w", err)
	}
	defer in.Close()
	defer answer.Close()
	h := &Handle{pid: cmd.Process.Pid, exit: s.Exit, order: s.Order, child: cmd.Process,
		done: make(chan struct{}), closing: make(chan struct{})}
	// The agent reaps its own shims, and learns nothing from it: its next
	// run could not.
	go func() {
		_ = cmd.Wait()
		close(h.done)
	}()
	h.start, _ = launch.StartTime(h.pid)
	if err := record(h.pid, h.start); err != nil {
		_ = cmd.Process.Kill()
		return nil, err
	}
	deadline := time.Now().Add(startWait)
	_ = in.SetWriteDeadline(deadline)
	if _, err := in.Write(spec); err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("shim: hand over the spec: %w", err)
	}
	_ = in.Close()
	_ = answer.SetReadDeadline(deadline)
	b, err := io.ReadAll(io.LimitReader(answer, 64<<10))
	var st status
	if jerr := json.Unmarshal(b, &st); jerr != nil || (st.PID == 0 && st.Error == "") {
		_ = cmd.Process.Kill()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("shim: no answer within %s", startWait)
		}
		return nil, errors.New("shim: ended before it started the job")
	}
	if st.Error != "" {
		return nil, errors.New(st.Error)
	}
	h.job, h.jobStart = st.PID, st.Start
	return h, nil
}

// spawn starts the executable of this process as a shim, in cgroup when
// not "", and returns it with the write end of its standard input and the
// read end of its answer.
func spawn(cgroup string) (cmd *exec.Cmd, in, answer *os.File, err error) {
	inR, in, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	defer inR.Close()
	answer, answerW, err := os.Pipe()
	if err != nil {
		in.Close()
		return nil, nil, nil, err
	}
	defer answerW.Close()
	cmd = exec.Command("/proc/self/exe", "agent", "shim")
	if self, err := os.Executable(); err == nil {
		cmd.Args[0] = self // what ps shows
	}
	// The shim needs none of the agent's environment but PATH, where the
	// job's command is looked up as the agent would.
	cmd.Env = []string{EnvVar + "=1"}
	if path, ok := os.LookupEnv("PATH"); ok {
		cmd.Env = append(cmd.Env, "PATH="+path)
	}
	cmd.Dir = "/"
	cmd.Stdin = inR
	cmd.ExtraFiles = []*os.File{answerW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if cgroup != "" {
		fd, err := syscall.Open(cgroup, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			in.Close()
			answer.Close()
			return nil, nil, nil, fmt.Errorf("cgroup %s: %w", cgroup, err)
		}
		defer syscall.Close(fd)
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	}
	if err := cmd.Start(); err != nil {
		in.Close()
		answer.Close()
		return nil, nil, nil, err
	}
	return cmd, in, answer, nil
}

// Supervise starts s's job under a supervisor inside this process, a
// goroutine with a shim's loop, files and orders, instead of a shim
// process of its own: for an agent inside a program whose jobs end with
// it (allot up), where a shim's start, an exec of the whole program, would
// cost more than many jobs' own. Nothing of it outlives the process, so
// nothing of it can be adopted: a later run fences what a crash of the
// process left. Its Pid is this process's; Destroy does nothing.
func Supervise(s Spec) (*Handle, error) {
	s.NodeTimeout = 0 // the agent is this process: it fences its own jobs
	v, err := startJob(s)
	if err != nil {
		return nil, err
	}
	h := &Handle{pid: os.Getpid(), exit: s.Exit, order: s.Order, inside: make(chan os.Signal, 8),
		done: make(chan struct{}), closing: make(chan struct{})}
	h.start, _ = launch.StartTime(h.pid)
	h.job = v.p.Pid()
	h.jobStart, _ = launch.StartTime(h.job)
	go func() {
		_ = v.run(h.inside)
		close(h.done)
	}()
	return h, nil
}

// Attach holds on to the shim a previous run of the agent started, named
// by its PID and start time, with the paths of its Exit and Order. Done is
// closed at once when that process no longer runs (pid 0 included).
func Attach(pid int, start uint64, exit, order string) *Handle {
	h := &Handle{pid: pid, start: start, exit: exit, order: order, done: make(chan struct{}), closing: make(chan struct{})}
	if pid <= 0 || !launch.Alive(pid, start) {
		close(h.done)
		return h
	}
	go h.poll()
	return h
}

// poll closes done once the attached shim has ended, or returns on Close.
func (h *Handle) poll() {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-h.closing:
			return
		case <-t.C:
			if !launch.Alive(h.pid, h.start) {
				close(h.done)
				return
			}
		}
	}
}

// Pid is the shim's PID.
func (h *Handle) Pid() int { return h.pid }

// Start is the shim's start time (launch.StartTime).
func (h *Handle) Start() uint64 { return h.start }

// Job is the job's leader as the shim reported it at start: its PID and
// start time, zero for a Handle from Attach.
func (h *Handle) Job() (int, uint64) { return h.job, h.jobStart }

// Done is closed once the shim has ended.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Exit is how the job ended, as the shim wrote it; an error when it wrote
// nothing (it was killed, or the host went down).
func (h *Handle) Exit() (Exit, error) { return ReadExit(h.exit) }

// Stop orders the job stopped: SIGTERM now, SIGKILL of all its processes
// after grace, or at the deadline of an earlier order when that comes
// first. lost marks a stop of the agent's own (Order.Lost); an earlier
// order's mark stands.
func (h *Handle) Stop(grace time.Duration, lost bool) error {
	o := Order{Deadline: time.Now().Add(max(grace, 0)), Lost: lost}
	if old, err := readOrder(h.order); err == nil && !old.Deadline.IsZero() {
		o.Lost = old.Lost
		if old.Deadline.Before(o.Deadline) {
			o.Deadline = old.Deadline
		}
	}
	if err := writeJSON(h.order, o); err != nil {
		return fmt.Errorf("stop order: %w", err)
	}
	h.signal(syscall.SIGUSR1)
	return nil
}

// Kill orders every process of the job killed at once, as Stop with no
// grace.
func (h *Handle) Kill(lost bool) error { return h.Stop(0, lost) }

// Order is the stop order the job was given, by this run of the agent or
// an earlier one; zero when none was.
func (h *Handle) Order() Order {
	o, _ := readOrder(h.order)
	return o
}

// Destroy SIGKILLs the shim itself, for an agent that fences an instance
// whose shim has not obeyed; the job's processes are the caller's to kill.
// A supervisor in this process (Supervise) is left alone.
func (h *Handle) Destroy() { h.signal(syscall.SIGKILL) }

// Close stops watching the shim (Done then never closes for a Handle from
// Attach); the shim runs on.
func (h *Handle) Close() { h.once.Do(func() { close(h.closing) }) }

// signal sends sig to the shim, never to a process that took its PID
// since: through the process of a child (a pidfd), else a pidfd opened and
// checked against the start time.
func (h *Handle) signal(sig syscall.Signal) {
	if h.inside != nil {
		if sig != syscall.SIGKILL {
			select {
			case h.inside <- sig:
			default: // an order waits already; the file says it
			}
		}
		return
	}
	if h.child != nil {
		_ = h.child.Signal(sig)
		return
	}
	fd, err := unix.PidfdOpen(h.pid, 0)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) && launch.Alive(h.pid, h.start) {
			_ = syscall.Kill(h.pid, sig) // a kernel before 5.3
		}
		return
	}
	defer unix.Close(fd)
	if launch.Alive(h.pid, h.start) {
		_ = unix.PidfdSendSignal(fd, sig, nil, 0)
	}
}
