package launch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	// ArrayIndex is the job's index in its job array, nil when it is in
	// none; the process sees it as ALLOT_ARRAY_INDEX.
	ArrayIndex *int
	// GPUs are the device IDs (indices or UUIDs) for CUDA_VISIBLE_DEVICES.
	GPUs []string
	// GPUMilli is the fraction of each GPU, 1000 for whole GPUs.
	GPUMilli int64
	// GPUMemoryMiB is the memory of the (smallest of the) GPUs, 0 when
	// unknown: a fraction's share of it is its memory budget.
	GPUMemoryMiB  int64
	CheckpointDir string // stable across attempts of the job: the instance's own (a gang's rank's)
	// JobCheckpointDir is the job's checkpoint directory, which holds
	// CheckpointDir in a gang (ALLOT_JOB_CHECKPOINT_DIR); empty means
	// CheckpointDir.
	JobCheckpointDir string
	ResumeFrom       string // the last checkpoint reported, if any
	Rank             int
	WorldSize        int
	MasterAddr       string
	MasterPort       int
	// Dir is the attempt's working directory and HOME; it must exist.
	Dir string
	// LogPath is the attempt's log: Start opens it (0600, in a directory
	// only the agent may enter) and copies into it what the process
	// writes to its stdout and stderr, a pipe (logcap.go).
	LogPath string
	// LogLimit is how many bytes the attempt may add to its log; past it
	// the log says so and the rest of the output is dropped (the process
	// runs on). 0: no limit; negative: none of the output is kept.
	LogLimit int64
	Timeout  time.Duration // zero: none
	Grace    time.Duration // SIGTERM to SIGKILL when timing out
	// Credential is the user the process runs as; nil runs it as the
	// agent's own user.
	Credential *syscall.Credential
	// Tracker holds on to the attempt's processes; nil means a
	// ProcessGroup. It does not travel as JSON (the agent hands a
	// shim its spec so): the shim builds it from what it is told.
	Tracker Tracker `json:"-"`
	// Allot is the executable a command named allot runs (see Program);
	// empty means the agent's own.
	Allot string
	// ExactEnv, when not nil, is the process's whole environment in place
	// of what Environ builds from the spec: the process of a container
	// runtime (package runtime), whose job gets its own environment
	// through the runtime, built by the agent with Environ.
	ExactEnv []string `json:",omitempty"`
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
	Outcome  Outcome `json:"outcome"`
	ExitCode int     `json:"exit_code"`        // -1 when a signal ended it
	Signal   string  `json:"signal,omitempty"` // the signal that ended it, if any
	Killed   bool    `json:"killed,omitempty"` // SIGKILL was needed after the grace
}

// Process is a running attempt.
type Process struct {
	cmd     *exec.Cmd
	log     *logCopy
	track   Tracker
	done    chan struct{}
	mu      sync.Mutex // guards outcome, killed and exit
	outcome Outcome
	killed  bool
	exit    Exit
}

// Start launches the attempt under its tracker, as its user, with the
// environment Environ builds and nothing of the agent's.
func Start(s Spec) (*Process, error) {
	if len(s.Command) == 0 {
		return nil, errors.New("launch: empty command")
	}
	if s.Dir == "" {
		return nil, errors.New("launch: no working directory")
	}
	if err := os.MkdirAll(filepath.Dir(s.LogPath), 0o700); err != nil {
		return nil, fmt.Errorf("launch: log dir: %w", err)
	}
	log, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("launch: log: %w", err)
	}
	prog, err := Program(s.Command[0], s.Allot)
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("launch %s: %w", s.Command[0], err)
	}
	out, copier, err := startLogCopy(log, s.LogLimit)
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("launch: log pipe: %w", err)
	}
	defer out.Close() // the process holds its own copy
	cmd := exec.Command(prog, s.Command[1:]...)
	cmd.Args[0] = s.Command[0] // the job sees the name it gave
	cmd.Env = Environ(s)
	if s.ExactEnv != nil {
		cmd.Env = s.ExactEnv
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = s.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.Credential}
	track := s.Tracker
	if track == nil {
		track = &ProcessGroup{}
	}
	if err := track.Start(cmd); err != nil {
		out.Close()
		copier.finish()
		_ = track.Release()
		return nil, fmt.Errorf("launch %s: %w", s.Command[0], err)
	}
	p := &Process{cmd: cmd, log: copier, track: track, done: make(chan struct{}), outcome: Exited}
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

// Program is the program Start runs for a command's first word: the word
// "allot" is the agent's own executable, so that a job file can run
// allot's demo programs (allot demo serve, allot demo train) on any host,
// with the agent's version, whether or not allot is on the system PATH that
// jobs get; any other name, including a path to some allot, is returned
// as is, for exec to look up. The job's user must be able to execute the
// agent's binary.
func Program(name, allot string) (string, error) {
	if name != "allot" {
		return name, nil
	}
	if allot != "" {
		return allot, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the agent's own executable for allot: %w", err)
	}
	return self, nil
}

func (p *Process) wait() {
	err := p.cmd.Wait()
	e := Exit{ExitCode: p.cmd.ProcessState.ExitCode()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal().String()
		}
	}
	// Kill what the leader left behind.
	_ = p.track.Kill()
	_ = p.track.Release()
	p.log.finish()
	p.mu.Lock()
	e.Outcome, e.Killed = p.outcome, p.killed
	p.exit = e
	p.mu.Unlock()
	close(p.done)
}

// Stop asks the attempt to end: SIGTERM to every process it tracks, then
// SIGKILL after grace. It returns at once; Done closes when the attempt has ended.
func (p *Process) Stop(grace time.Duration) { p.stop(Stopped, grace) }

func (p *Process) stop(why Outcome, grace time.Duration) {
	p.mu.Lock()
	if p.outcome != Exited {
		p.mu.Unlock()
		return // already stopping
	}
	p.outcome = why
	p.mu.Unlock()
	p.track.Signal(syscall.SIGTERM)
	go func() {
		select {
		case <-p.done:
		case <-time.After(grace):
			p.mu.Lock()
			p.killed = true
			p.mu.Unlock()
			_ = p.track.Kill()
		}
	}()
}

// Kill ends the attempt at once, whatever grace a Stop gave it: SIGKILL
// to every process it tracks. Done closes once it has ended.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.mu.Lock()
	if p.outcome == Exited {
		p.outcome = Stopped
	}
	p.killed = true
	p.mu.Unlock()
	_ = p.track.Kill()
}

// Done is closed when the attempt has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit is how the attempt ended; valid once Done is closed.
func (p *Process) Exit() Exit {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

// Pid is the ID of the process the attempt started as.
func (p *Process) Pid() int { return p.cmd.Process.Pid }
