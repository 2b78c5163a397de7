package engine

import (
	"container/heap"
	"fmt"
	"math"
	"slices"
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
		if len(plan.Binds) == 0 && len(plan.Preemptions) == 0 && len(plan.Resizes) == 0 {
			e.idle++
		}
		if err := e.commit(plan, now); err != nil {
			return err
		}
		preempted := len(plan.Preemptions) > 0
		e.inc.Recycle(plan)
		if !preempted {
			return nil
		}
	}
	return nil
}

// commit applies plan to the engine's jobs at now, and accounts for what
// it started, resized and preempted.
func (e *Engine) commit(plan sched.Plan, now time.Time) error {
	// The jobs by the engine's index, not by walking the snapshot's: the
	// plan names jobs of the snapshot (those the core saw), which the
	// engine holds.
	find := func(id string) *model.Job {
		if x := e.byID[id]; x != nil {
			return x.job
		}
		return nil
	}
	if err := plan.ApplyTo(find, now); err != nil {
		return fmt.Errorf("engine at %s: %w", now.Format(time.RFC3339), err)
	}
	for _, p := range plan.Preemptions {
		e.preempted(e.byID[p.Job], p)
	}
	for _, r := range plan.Resizes {
		e.resized(e.byID[r.Job], r)
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
	e.wakeForGrowth()
	return nil
}

// snapshotJobs is the live jobs the core may look at: holding ones with
// their last checkpoint, and queued ones not held back. The list is the
// engine's, filled again by the next cycle: nothing reads a cycle's
// Snapshot after it.
func (e *Engine) snapshotJobs() []*model.Job {
	jobs := slices.Grow(e.snap[:0], len(e.live)-e.dead)
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
	e.snap = jobs
	return jobs
}

// lastCheckpoint is when running j last saved its state: every checkpoint
// interval from the start of its attempt; the start itself without one.
func lastCheckpoint(j *model.Job, now time.Time) time.Time {
	return checkpointAt(j.Status.StartedAt, j.Spec.Checkpoint.Interval, now)
}

// checkpointAt is the last checkpoint by now of an attempt started at
// started that saves every iv; the start itself when iv is 0.
func checkpointAt(started time.Time, iv time.Duration, now time.Time) time.Time {
	if iv <= 0 {
		return started
	}
	return started.Add(now.Sub(started) / iv * iv)
}

func (e *Engine) started(x *entry) {
	x.gen++
	e.resume(x, true)
	if e.cfg.Recorder != nil {
		e.cfg.Recorder.Started(x.job, e.now)
	}
	e.runAttempt(x)
}

// resume sets, with local checkpoints, the work x's new attempt resumes
// from: its checkpoint's when its first instance runs on the node of it,
// none elsewhere (told to a RestartRecorder when report is set).
func (e *Engine) resume(x *entry, report bool) {
	if !e.local() || x.saved <= 0 {
		return
	}
	home := x.job.Status.Allocations[0].Node == x.savedOn
	redone := 0.0
	if x.from = 0; home {
		x.from = x.saved
	} else {
		redone = x.saved.Seconds() * float64(x.job.Spec.Resources.TotalMilli()) / model.MilliPerGPU
	}
	if r, ok := e.cfg.Recorder.(RestartRecorder); ok && report {
		r.Restarted(x.job, home, redone, e.now)
	}
	x.remaining = x.work - x.from
}

// runAttempt sets the speed of x's attempt, which started now, and when
// it completes.
func (e *Engine) runAttempt(x *entry) {
	e.guard(x)
	x.speed = e.speed(x.job)
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
	e.keep(x, x.job.Status.StartedAt, firstNode(x.job, 1))
	if e.cfg.Recorder != nil {
		e.cfg.Recorder.Preempted(x.job, p, e.now)
	}
}

// keep ends x's attempt, started at started with its first instance on
// firstNode, at now: its work up to its last checkpoint is kept (at the
// attempt's speed), the rest lost; with local checkpoints the checkpoint
// lies on firstNode.
func (e *Engine) keep(x *entry, started time.Time, firstNode string) {
	if x.remaining == Forever || e.cfg.RunFor != nil {
		return
	}
	saved := time.Duration(float64(checkpointAt(started, x.job.Spec.Checkpoint.Interval, e.now).Sub(started)) * x.speed)
	x.remaining = max(x.remaining-saved, 0)
	if e.local() && saved > 0 {
		x.saved, x.savedOn = x.from+saved, firstNode
		if e.cfg.Checkpoints == CheckpointsLocal {
			x.job.Status.CheckpointNode = x.savedOn
		}
	}
}

// firstNode is the node of the first instance of j's attempt back from
// its last (1: the last); empty when there is none.
func firstNode(j *model.Job, back int) string {
	att := j.Status.Attempts
	if k := len(att) - back; k >= 0 && len(att[k].Nodes) > 0 {
		return att[k].Nodes[0]
	}
	return ""
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
	// The first protection to end after now among the running jobs:
	// those ended by now, or of attempts no longer running, leave the
	// heap for good.
	for len(e.guards) > 0 {
		g := e.guards[0]
		j := g.x.job
		if g.until.After(e.now) && e.byID[j.ID] == g.x && j.Status.State == model.StateRunning && j.Status.StartedAt.Add(mrt).Equal(g.until) {
			if e.wake.IsZero() || g.until.Before(e.wake) {
				e.wake = g.until
			}
			return
		}
		heap.Pop(&e.guards)
	}
}

// guard notes when the protection of x's attempt, started now, ends.
func (e *Engine) guard(x *entry) {
	if mrt := e.cfg.Core.MinRunTime; mrt > 0 {
		heap.Push(&e.guards, guard{until: x.job.Status.StartedAt.Add(mrt), x: x})
	}
}
