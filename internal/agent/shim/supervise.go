package shim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/allot-dev/allot/internal/agent/launch"
)

// EnvVar is set in the environment of every shim the agent starts. A test
// binary, which is the agent's executable in its package's tests, looks
// for it first (TakeOver).
const EnvVar = "ALLOT_AGENT_SHIM"

// maxSpec bounds what a shim reads of its spec: a job's env is bounded by
// the server's limits on a job file, far below it.
const maxSpec = 16 << 20

// status is a shim's answer on file descriptor 3 once it has started the
// job, or failed to.
type status struct {
	PID   int    `json:"pid,omitempty"`
	Start uint64 `json:"start,omitempty"` // launch.StartTime of PID
	Error string `json:"error,omitempty"`
}

// TakeOver runs this process as a shim and exits when it was started as
// one (EnvVar set); otherwise it returns at once. A test binary of a
// package that runs agents calls it first in its TestMain.
func TakeOver() {
	if os.Getenv(EnvVar) == "" {
		return
	}
	if err := Main(); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// Main is a shim's life ('allot agent shim'): it reads its Spec from
// standard input, starts the job, answers on file descriptor 3, and
// supervises the job until it has written how it ended. It returns an
// error when it could not read its spec, start the job or write its end.
func Main() error {
	// Signals are caught, never ignored: an ignored signal stays ignored
	// in the job across exec.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGHUP, syscall.SIGINT)
	// The answer's descriptor came without close-on-exec, and so may
	// others the agent inherited from whoever started it: the job gets
	// none of them (and the agent reads the answer's end only once the
	// shim has closed it).
	closeOnExec()
	answer := os.NewFile(3, "status")
	defer answer.Close()
	var s Spec
	if err := json.NewDecoder(io.LimitReader(os.Stdin, maxSpec)).Decode(&s); err != nil {
		err = fmt.Errorf("shim: read spec: %w", err)
		tell(answer, status{Error: err.Error()})
		return err
	}
	_ = os.Stdin.Close()
	v, err := startJob(s)
	if err != nil {
		tell(answer, status{Error: err.Error()})
		return err
	}
	start, _ := launch.StartTime(v.p.Pid())
	tell(answer, status{PID: v.p.Pid(), Start: start})
	_ = answer.Close()
	return v.run(sigs)
}

// startJob starts s's job and returns its supervisor; a job that could not
// start has its Exit written (code 127, and why).
func startJob(s Spec) (*supervisor, error) {
	spec := s.Launch
	spec.Tracker = s.tracker()
	p, err := launch.Start(spec)
	if err != nil {
		werr := writeJSON(s.Exit, Exit{Exit: launch.Exit{Outcome: launch.Exited, ExitCode: 127}, StartError: err.Error()})
		return nil, errors.Join(err, werr)
	}
	v := &supervisor{s: s, p: p, leaseSeen: time.Now()}
	v.leaseMod = v.leaseTime()
	return v, nil
}

// closeOnExec marks every descriptor from 3 on close-on-exec.
func closeOnExec() {
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= 3 {
			syscall.CloseOnExec(fd)
		}
	}
}

// tell writes st on the answer descriptor; an agent that has gone reads
// nothing, and the shim carries on.
func tell(answer *os.File, st status) {
	b, _ := json.Marshal(st)
	_, _ = answer.Write(b)
}

// supervisor is a shim with its job started.
type supervisor struct {
	s        Spec
	p        *launch.Process
	deadline time.Time // when the job is killed, once an order or a fence stopped it
	fenced   bool
	// leaseMod is the lease's modification time as last read, leaseSeen
	// when the shim saw it change (on the monotonic clock).
	leaseMod  time.Time
	leaseSeen time.Time
}

// tick is how often a shim reads its order and its lease: a quarter of the
// node timeout, at most a second.
func (v *supervisor) tick() time.Duration {
	d := time.Second
	if v.s.NodeTimeout > 0 {
		d = min(d, max(v.s.NodeTimeout/4, 10*time.Millisecond))
	}
	return d
}

// run supervises the job until it ends, then writes its Exit.
func (v *supervisor) run(sigs <-chan os.Signal) error {
	t := time.NewTicker(v.tick())
	defer t.Stop()
	kill := time.NewTimer(time.Hour)
	kill.Stop()
	for {
		select {
		case <-v.p.Done():
			return writeJSON(v.s.Exit, Exit{Exit: v.p.Exit(), Fenced: v.fenced})
		case sig := <-sigs:
			switch sig {
			case syscall.SIGUSR1:
				v.obey(kill)
			case syscall.SIGTERM:
				// Not the agent's way (it orders): the host shuts
				// down, or a person stops the shim.
				v.fence(kill)
			}
			// SIGHUP and SIGINT are the terminal's, which a shim in a
			// session of its own has none of: ignored.
		case <-t.C:
			v.obey(kill)
			v.checkLease(kill)
		case <-kill.C:
			v.p.Kill()
		}
	}
}

// obey carries out the agent's order, if it gave one.
func (v *supervisor) obey(kill *time.Timer) {
	if o, err := readOrder(v.s.Order); err == nil && !o.Deadline.IsZero() {
		v.stop(o.Deadline, kill)
	}
}

// stop stops the job (SIGTERM) and kills it at deadline, or at the
// deadline of an earlier stop if that comes first.
func (v *supervisor) stop(deadline time.Time, kill *time.Timer) {
	if !v.deadline.IsZero() && !deadline.Before(v.deadline) {
		return
	}
	first := v.deadline.IsZero()
	v.deadline = deadline
	grace := time.Until(deadline)
	if first {
		v.p.Stop(max(grace, 0))
	}
	if grace <= 0 {
		v.p.Kill()
		return
	}
	kill.Reset(grace)
}

// checkLease fences the job when the agent has not renewed the lease for
// the node timeout. A job already stopping on an order is not fenced: its
// agent or the server asked for its end.
func (v *supervisor) checkLease(kill *time.Timer) {
	if v.s.NodeTimeout <= 0 || !v.deadline.IsZero() {
		return
	}
	if mod := v.leaseTime(); !mod.Equal(v.leaseMod) {
		v.leaseMod, v.leaseSeen = mod, time.Now()
		return
	}
	if time.Since(v.leaseSeen) > v.s.NodeTimeout {
		v.fence(kill)
	}
}

// fence stops the job of the shim's own accord, with its grace; a job
// already stopping on an order keeps that order's deadline and outcome.
func (v *supervisor) fence(kill *time.Timer) {
	if v.deadline.IsZero() {
		v.fenced = true
	}
	v.stop(time.Now().Add(v.s.Launch.Grace), kill)
}

// leaseTime is the lease's modification time, zero when it cannot be read.
func (v *supervisor) leaseTime() time.Time {
	st, err := os.Stat(v.s.Lease)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}
