package agent

import "time"

// This file is what becomes of the instances as the agent exits
// (Config.OnExit), and the stop-everything path the heartbeats share.

// leaveAll leaves every instance running as the agent exits (OnExitLeave):
// one line each, then the watchers return without reporting, their files
// kept for the next run to adopt.
func (a *Agent) leaveAll() {
	a.mu.Lock()
	for k, p := range a.procs {
		if p.h != nil && !ended(p.h) {
			pid, _ := p.h.Job()
			a.log.Info("leaving instance running for the agent's next run to adopt", "job", k.job, "attempt", k.attempt,
				"rank", k.rank, "pid", pid, "shim", p.h.Pid())
		}
	}
	a.mu.Unlock()
	close(a.leaving)
	a.endReports()
	a.waitInstances(fenceWait + 10*time.Second)
}

// shutdown stops every instance as the agent exits (OnExitStop), so that
// no process of a job outlives it: SIGTERM, then SIGKILL of all the
// instance's processes after its grace or StopTimeout, whichever is
// shorter (an instance already stopping with a longer grace, as a
// preemption gave it, is cut short too). It returns once each one's end
// has been reported, its last log and the checkpoint it saved on SIGTERM
// included: the reports outlive Run's ctx, reportSlack past the stop
// timeout at most.
func (a *Agent) shutdown() {
	cut := time.AfterFunc(a.cfg.StopTimeout+reportSlack, a.endReports)
	defer cut.Stop()
	dones := a.stopEvery()
	timeout := time.NewTimer(a.cfg.StopTimeout)
	defer timeout.Stop()
	for _, d := range dones {
		select {
		case <-d:
			continue
		case <-timeout.C:
		}
		n := a.killEvery()
		a.log.Warn("instances outlived the stop timeout: killed", "instances", n, "stop_timeout", a.cfg.StopTimeout)
		break
	}
	a.waitAll(dones)
	a.waitInstances(time.Minute)
}

// killEvery kills every instance that has started and not ended, at once,
// and returns how many.
func (a *Agent) killEvery() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for k, p := range a.procs {
		if p.h != nil && !ended(p.h) {
			a.order(k, p.h.Kill(true))
			n++
		}
	}
	return n
}

// stopEvery stops every instance (SIGTERM, SIGKILL after its grace), for
// the agent's own reasons (it exits, or lost the server): each is reported
// lost with the node unless it ended by itself first. It returns what
// closes when each has ended.
func (a *Agent) stopEvery() []chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	var dones []chan struct{}
	for k, p := range a.procs {
		if !p.stopping {
			p.stopping = true
			if p.h == nil {
				p.cancel()
			} else {
				a.order(k, p.h.Stop(p.grace, true))
			}
		}
		dones = append(dones, p.done)
	}
	return dones
}

func (a *Agent) waitAll(dones []chan struct{}) {
	for _, d := range dones {
		select {
		case <-d:
		case <-time.After(time.Minute):
		}
	}
}

// waitInstances waits, up to limit, for the goroutines that start, watch,
// fence or report instances to return.
func (a *Agent) waitInstances(limit time.Duration) {
	done := make(chan struct{})
	go func() {
		a.instances.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		a.log.Warn("instances' goroutines still running as the agent exits", "waited", limit)
	}
}
