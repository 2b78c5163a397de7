package launch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec is one attempt as the agent hands it over.
type Spec struct {
	JobID   string
	Attempt int
	Command []string
	Env     map[string]string
	// GPUs are the device IDs (indices or UUIDs) for CUDA_VISIBLE_DEVICES.
	GPUs []string
	// GPUMilli is the fraction of each GPU, 1000 for whole GPUs.
	GPUMilli      int64
	CheckpointDir string // stable across attempts of the job
	ResumeFrom    string // the last checkpoint reported, if any
	Rank          int
	WorldSize     int
	MasterAddr    string
	MasterPort    int
	LogPath       string
	Timeout       time.Duration // zero: none
	Grace         time.Duration // SIGTERM to SIGKILL when timing out
}

// Environ is the environment of the attempt: the agent's own, the job's,
// then allot's variables, which win.
func Environ(s Spec, base []string) []string {
	env := map[string]string{}
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for k, v := range s.Env {
		env[k] = v
	}
	env["CUDA_VISIBLE_DEVICES"] = strings.Join(s.GPUs, ",")
	env["ALLOT_JOB_ID"] = s.JobID
	env["ALLOT_ATTEMPT"] = strconv.Itoa(s.Attempt)
	env["ALLOT_CHECKPOINT_DIR"] = s.CheckpointDir
	if s.ResumeFrom != "" {
		env["ALLOT_RESUME_FROM"] = s.ResumeFrom
	} else {
		delete(env, "ALLOT_RESUME_FROM")
	}
	if s.WorldSize > 1 {
		env["ALLOT_RANK"] = strconv.Itoa(s.Rank)
		env["ALLOT_WORLD_SIZE"] = strconv.Itoa(s.WorldSize)
		env["ALLOT_MASTER_ADDR"] = s.MasterAddr
		env["ALLOT_MASTER_PORT"] = strconv.Itoa(s.MasterPort)
	}
	if s.GPUMilli > 0 && s.GPUMilli < 1000 {
		env["ALLOT_GPU_MILLI"] = strconv.FormatInt(s.GPUMilli, 10)
		// MPS caps the share of SMs a client may use, in percent.
		env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = strconv.FormatInt(max(1, s.GPUMilli/10), 10)
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Outcome is how an attempt ended.
type Outcome string

const (
	Exited   Outcome = "Exited"   // the process ended by itself (ExitCode says how)
	Stopped  Outcome = "Stopped"  // Stop ended it (preemption, cancel)
	TimedOut Outcome = "TimedOut" // it outlived Spec.Timeout
)

// Exit is the end of an attempt.
type Exit struct {
	Outcome  Outcome
	ExitCode int    // -1 when a signal ended it
	Signal   string // the signal that ended it, if any
	Killed   bool   // SIGKILL was needed after the grace
}

// Process is a running attempt.
type Process struct {
	cmd     *exec.Cmd
	log     *os.File
	done    chan struct{}
	mu      sync.Mutex // guards outcome, killed and exit
	outcome Outcome
	killed  bool
	exit    Exit
}

// Start launches the attempt in a process group of its own.
func Start(s Spec) (*Process, error) {
	if len(s.Command) == 0 {
		return nil, errors.New("launch: empty command")
	}
	if err := os.MkdirAll(filepath.Dir(s.LogPath), 0o755); err != nil {
		return nil, fmt.Errorf("launch: log dir: %w", err)
	}
	if s.CheckpointDir != "" {
		if err := os.MkdirAll(s.CheckpointDir, 0o755); err != nil {
			return nil, fmt.Errorf("launch: checkpoint dir: %w", err)
		}
	}
	log, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("launch: log: %w", err)
	}
	cmd := exec.Command(s.Command[0], s.Command[1:]...)
	cmd.Env = Environ(s, os.Environ())
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = s.CheckpointDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("launch %s: %w", s.Command[0], err)
	}
	p := &Process{cmd: cmd, log: log, done: make(chan struct{}), outcome: Exited}
	go p.wait()
	if s.Timeout > 0 {
		go func() {
			select {
			case <-time.After(s.Timeout):
				p.stop(TimedOut, s.Grace)
			case <-p.done:
			}
		}()
	}
	return p, nil
}

func (p *Process) wait() {
	err := p.cmd.Wait()
	p.log.Close()
	e := Exit{ExitCode: p.cmd.ProcessState.ExitCode()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal().String()
		}
	}
	// Kill what the leader left behind in its group.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	p.mu.Lock()
	e.Outcome, e.Killed = p.outcome, p.killed
	p.exit = e
	p.mu.Unlock()
	close(p.done)
}

// Stop asks the attempt to end: SIGTERM to its process group, then SIGKILL
// after grace. It returns at once; Done closes when the attempt has ended.
func (p *Process) Stop(grace time.Duration) { p.stop(Stopped, grace) }

func (p *Process) stop(why Outcome, grace time.Duration) {
	p.mu.Lock()
	if p.outcome != Exited {
		p.mu.Unlock()
		return // already stopping
	}
	p.outcome = why
	p.mu.Unlock()
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	go func() {
		select {
		case <-p.done:
		case <-time.After(grace):
			p.mu.Lock()
			p.killed = true
			p.mu.Unlock()
			_ = syscall.Kill(pgid, syscall.SIGKILL)
		}
	}()
}

// Done is closed when the attempt has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit is how the attempt ended; valid once Done is closed.
func (p *Process) Exit() Exit {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

// Pid is the process group leader's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }
