package agent

import (
	"time"

	"github.com/allot-dev/allot/internal/client"
)

// fenceWait bounds how long fencing waits for a shim to kill its job on
// order before the agent kills the job's processes and the shim itself.
const fenceWait = 5 * time.Second

// settleLeftovers decides, on the first assignments after the agent
// registered, what becomes of each instance a previous run left (survey):
// one the server still has here, to run or to stop, is adopted; any other
// (the server requeued it after its node timeout, or the job ended) is
// fenced. Both become procs at once, so that a new instance waits for the
// GPUs of a fenced one. Called with a.mu held.
func (a *Agent) settleLeftovers(want map[key]client.Assignment, orders map[key]client.StopOrder) {
	for k, lo := range a.left {
		x, run := want[k]
		if o, stop := orders[k]; stop && !run {
			// Its stop order's grace applies: reconcile stops it next.
			x, run = client.Assignment{Job: k.job, Attempt: k.attempt, Rank: k.rank, GPUs: assigned(lo.rec.GPUs), Grace: o.Grace, Started: true}, true
		}
		if run {
			a.adopt(k, x, lo)
		} else {
			a.fenceLeftover(k, lo)
		}
	}
	a.left = nil
}

// adopt takes over an instance a previous run left: it tracks its shim,
// ships its log from where the server has it, watches its checkpoints, and
// reports its end, as for an instance it started. Called with a.mu held.
func (a *Agent) adopt(k key, x client.Assignment, lo *leftover) {
	grace, _ := time.ParseDuration(x.Grace)
	p := &proc{a: x, grace: grace, h: lo.h, sb: lo.sandbox(), rec: lo.rec, markers: lo.rec.markers(),
		adopted: true, stopping: !lo.h.Order().Deadline.IsZero(), cancel: func() {}, done: make(chan struct{})}
	a.procs[k] = p
	running := !ended(lo.h)
	a.log.Info("adopted an instance a previous run left", "job", k.job, "attempt", k.attempt, "rank", k.rank,
		"shim", lo.rec.Shim, "pid", lo.rec.PID, "running", running, "stopping", p.stopping)
	a.instances.Add(1)
	go func() {
		defer a.instances.Done()
		if running && !x.Started {
			// The previous run started it and never said so.
			a.report(a.reports, k, client.AttemptEvent{Type: "started"})
		}
		a.watch(k, p)
	}()
}

// fenceLeftover kills an instance a previous run left that the server no
// longer has here: its shim kills the job on order, or, past fenceWait,
// the agent kills the job's processes and the shim. Nothing is reported:
// the server has given the instance up already. Called with a.mu held.
func (a *Agent) fenceLeftover(k key, lo *leftover) {
	p := &proc{a: client.Assignment{Job: k.job, Attempt: k.attempt, Rank: k.rank, GPUs: assigned(lo.rec.GPUs)},
		h: lo.h, sb: lo.sandbox(), stopping: true, killed: true, cancel: func() {}, done: make(chan struct{})}
	a.procs[k] = p
	a.log.Warn("fencing an instance a previous run left: the server no longer runs it here", "job", k.job,
		"attempt", k.attempt, "rank", k.rank, "shim", lo.rec.Shim, "pid", lo.rec.PID)
	a.instances.Add(1)
	go func() {
		defer a.instances.Done()
		if err := lo.h.Kill(true); err != nil {
			a.log.Warn("fence: kill order not written", "job", k.job, "err", err)
		}
		select {
		case <-lo.h.Done():
		case <-time.After(fenceWait):
		}
		a.killRecord(lo.rec, false)
		lo.h.Close()
		a.forget(lo.name)
		a.release(p.sb)
		a.mu.Lock()
		delete(a.procs, k)
		close(p.done)
		a.mu.Unlock()
	}()
}

// sandbox is as much of the instance's sandbox as its end needs.
func (lo *leftover) sandbox() sandbox {
	r := lo.rec
	return sandbox{job: r.Job, uid: r.UID, dynamic: r.Dynamic, cgroup: r.Cgroup, logPath: r.Log, ckptDir: r.Checkpoints, recordKey: lo.name}
}

// assigned are GPUs of these indices, as an assignment names them.
func assigned(indices []int) []client.AssignedGPU {
	out := make([]client.AssignedGPU, len(indices))
	for i, g := range indices {
		out[i] = client.AssignedGPU{Index: g}
	}
	return out
}

// leave lets an instance run on as the agent exits (OnExitLeave): its
// files stay for the next run to adopt it, and the agent's hold on its uid
// goes without killing anything.
func (a *Agent) leave(k key, p *proc) {
	p.h.Close()
	if p.sb.dynamic {
		releaseUID(p.sb.job)
	}
	a.mu.Lock()
	delete(a.procs, k)
	close(p.done)
	a.mu.Unlock()
}
