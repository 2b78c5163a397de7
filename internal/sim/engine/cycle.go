package engine

import (
	"fmt"
	"math"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// cycle runs the core until a round preempts nothing (steps 3 and 4 of the
// package documentation).
func (e *Engine) cycle() error {
	e.dirty = false
	now := e.now
	for round := 0; round < e.cfg.Rounds; round++ {
		var jobs []*model.Job
		if e.cfg.Select != nil {
			jobs = e.cfg.Select(now)
			if !anyQueued(jobs) {
				return nil
			}
		} else {
			jobs = e.snapshotJobs()
		}
		snap := &sched.Snapshot{Fleet: e.cfg.Fleet, Tenancy: e.cfg.Tenancy, Jobs: jobs}
		in := snap
		if e.cfg.Input != nil {
			in = e.cfg.Input(snap, now)
		}
		plan, err := e.schedule(in, now)
		if err != nil {
			return err
		}
		e.cycles++
		if len(plan.Binds) == 0 && len(plan.Preemptions) == 0 {
			e.idle++
		}
		if err := plan.Apply(jobs, now); err != nil {
			return fmt.Errorf("engine at %s: %w", now.Format(time.RFC3339), err)
		}
		for _, p := range plan.Preemptions {
			e.preempted(e.byID[p.Job], p)
		}
		for _, b := range plan.Binds {
			e.started(e.byID[b.Job])
		}
		for _, p := range plan.Pending {
			if p.Reason == sched.AwaitingPreemption {
				e.wakeForProtection()
				break
			}
		}
		if len(plan.Preemptions) == 0 {
			return nil
		}
	}
	return nil
}

// snapshotJobs is the live jobs the core may look at: holding ones with
// their last checkpoint, and queued ones not held back.
func (e *Engine) snapshotJobs() []*model.Job {
	jobs := make([]*model.Job, 0, len(e.live)-e.dead)
	for _, x := range e.live {
		if x == nil {
			continue
		}
		j := x.job
		switch {
		case j.Status.State.Holds():
			j.Status.LastCheckpoint = lastCheckpoint(j, e.now)
		case j.Status.State == model.StateQueued && e.now.Before(j.HeldUntil()):
			continue
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// lastCheckpoint is when running j last saved its state: every checkpoint
// interval from the start of its attempt; the start itself without one.
func lastCheckpoint(j *model.Job, now time.Time) time.Time {
	iv := j.Spec.Checkpoint.Interval
	if iv <= 0 {
		return j.Status.StartedAt
	}
	ran := now.Sub(j.Status.StartedAt)
	return j.Status.StartedAt.Add(ran / iv * iv)
}

func (e *Engine) started(x *entry) {
	x.gen++
	if e.local() && x.saved > 0 {
		// The attempt resumes from the job's checkpoint on its node, and
		// starts over anywhere else.
		home := x.job.Status.Allocations[0].Node == x.savedOn
		redone := 0.0
		if x.from = 0; home {
			x.from = x.saved
		} else {
			redone = x.saved.Seconds() * float64(x.job.Spec.Resources.TotalMilli()) / model.MilliPerGPU
		}
		if r, ok := e.cfg.Recorder.(RestartRecorder); ok {
			r.Restarted(x.job, home, redone, e.now)
		}
		x.remaining = x.work - x.from
	}
	if e.cfg.Recorder != nil {
		e.cfg.Recorder.Started(x.job, e.now)
	}
	x.speed = 1
	if e.cfg.Speed != nil {
		if s := e.cfg.Speed(x.job); s > 0 {
			x.speed = s
		}
	}
	switch {
	case e.cfg.RunFor != nil:
		e.push(event{at: e.now.Add(max(e.cfg.RunFor(x.job, e.now), 0)), job: x, gen: x.gen})
	case x.remaining != Forever:
		wall := time.Duration(math.Ceil(float64(max(x.remaining, 0)) / x.speed))
		e.push(event{at: e.now.Add(wall), job: x, gen: x.gen})
	}
}

func anyQueued(jobs []*model.Job) bool {
	for _, j := range jobs {
		if j.Status.State == model.StateQueued {
			return true
		}
	}
	return false
}

// preempted keeps the work up to the victim's last checkpoint. Apply has
// queued it again; its StartedAt is still that of the attempt it lost.
func (e *Engine) preempted(x *entry, p sched.Preemption) {
	x.gen++
	if x.remaining != Forever && e.cfg.RunFor == nil {
		saved := time.Duration(float64(lastCheckpoint(x.job, e.now).Sub(x.job.Status.StartedAt)) * x.speed)
		x.remaining = max(x.remaining-saved, 0)
		if st := &x.job.Status; e.local() && saved > 0 {
			// The checkpoint lies on the lost attempt's first node.
			x.saved, x.savedOn = x.from+saved, st.Attempts[len(st.Attempts)-1].Nodes[0]
			if e.cfg.Checkpoints == CheckpointsLocal {
				st.CheckpointNode = x.savedOn
			}
		}
	}
	if e.cfg.Recorder != nil {
		e.cfg.Recorder.Preempted(x.job, p, e.now)
	}
}

// local reports whether checkpoints lie on one node's disk (Config.Checkpoints).
func (e *Engine) local() bool {
	return e.cfg.Checkpoints != CheckpointsShared && e.cfg.RunFor == nil
}

// wakeForProtection asks for a cycle when the first protected running job
// becomes preemptible.
func (e *Engine) wakeForProtection() {
	mrt := e.cfg.Core.MinRunTime
	if mrt <= 0 {
		return // nothing is protected; the core waits on nothing
	}
	for _, x := range e.live {
		if x == nil || x.job.Status.State != model.StateRunning {
			continue
		}
		if t := x.job.Status.StartedAt.Add(mrt); t.After(e.now) && (e.wake.IsZero() || t.Before(e.wake)) {
			e.wake = t
		}
	}
}
