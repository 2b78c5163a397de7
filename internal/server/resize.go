package server

import (
	"fmt"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// Resizes of elastic jobs (model.Elastic, sched.Resize).
//
// A resize in a committed Plan ends the current attempt of a running
// elastic job (reason Resized) and starts the next with the Plan's
// instances, from the job's checkpoint. The job keeps its capacity
// throughout and never goes back to the queue:
//
//	Running --resize, simulated nodes--> Running: the next attempt runs at once
//	Running --resize, agents--> Preparing, Resizing: the old ranks are told to stop, with their grace
//	  --every old rank exited--> Preparing: the new ranks are handed out together
//	  --every new rank started--> Running
//
// The old attempt is billed until its processes are gone and the new one
// from when every rank started, as any stop and bind are (grace.go); an
// attempt's rates are per instance, so the bill follows the instances
// held. No new rank goes to an agent before every old rank exited
// (assignments): the ranks of the new world start together, and resume
// from what the old ones saved in their grace. The nodes a shrink gave up
// count as stopping for other gangs (stoppingNodes), as a preemption's do.
// Old ranks whose exit is not reported within their grace and the node
// timeout are taken as gone (resizeOverdue), as a preempted job's are
// (stopOverdue).
//
// Which checkpoint a resized attempt resumes from is model.JobStatus.
// ResumeOf's answer for the new world: one path that serves every rank (a
// job-level save in ALLOT_JOB_CHECKPOINT_DIR on a shared checkpoint root, or
// a URL) serves any world size; per-rank parts of another world size serve
// no one, and the new attempt starts from the beginning, its log saying
// why. A per-rank part reported while the old ranks stop is theirs and is
// not recorded (it could complete no save of the new world).
//
// A preemption, cancel, requeue or lost node that meets a job whose old
// ranks still stop first folds the resize back (foldResize): the new
// attempt, which never ran, is dropped, and the stopping ranks are the
// job's instances again, so the usual stop applies to them.

// ReasonResized ends an attempt that a resize replaced.
const ReasonResized = "Resized"

// resizeJob is old after resize r at now. With agents, old's live ranks
// are told to stop and the new attempt waits Preparing for them.
func resizeJob(old *model.Job, r sched.Resize, now time.Time, agents bool) *model.Job {
	j := cloneJob(old)
	detail := ResizeText(r)
	closeAttempt(j, now, ReasonResized, detail, -1)
	if agents && anyLive(old.Status.Instances) {
		stopAttempt(j, now) // billed until its ranks are gone
		j.Status.Resizing = slices.Clone(old.Status.Instances)
	}
	j.Status.Resizes++
	j.Status.StartedAt = now
	j.Status.Reason, j.Status.Detail = ReasonResized, fmt.Sprintf("resized at %s: %s", now.UTC().Format(time.RFC3339), detail)
	var nodes []string
	j.Status.Allocations, nodes = allocationsOf(r.Nodes)
	a := model.Attempt{Number: len(j.Status.Attempts) + 1, Nodes: nodes, Placed: now, Started: now}
	j.Status.Instances = nil
	if agents {
		j.Status.State = model.StatePreparing
		a.Started = time.Time{} // billed once every rank runs
		j.Status.Instances = make([]model.Instance, len(r.Nodes))
	}
	j.Status.Attempts = append(j.Status.Attempts, a)
	return j
}

// ResizeText says what a resize does, as the ended attempt's detail, the
// log and 'allot plan' say it: the core's detail ("grew 2→4: 16 idle H100
// in use-ib; 120 GPU-seconds since the last checkpoint are lost", "shrank
// 6→4 for J (reserved), which needs 16 GPUs; …"), or, when it gives none,
// the sizes, the job a shrink made room for and why, and the work lost.
func ResizeText(r sched.Resize) string {
	if r.Detail != "" {
		return r.Detail
	}
	s := fmt.Sprintf("shrank %d→%d", r.From, r.To)
	if r.Grows() {
		s = fmt.Sprintf("grew %d→%d", r.From, r.To)
	}
	if r.For != "" {
		s += fmt.Sprintf(" for %s", r.For)
	}
	if r.Reason != sched.IdleCapacity {
		s += fmt.Sprintf(" (%s)", r.Reason)
	}
	return s + fmt.Sprintf("; %.0f GPU-seconds since the last checkpoint are lost", r.LostGPUSeconds)
}

// allocationsOf is what a job placed on nodes holds, and the nodes of its
// attempt (instance i on nodes[i]).
func allocationsOf(placed []sched.Placement) ([]model.Allocation, []string) {
	allocs := make([]model.Allocation, len(placed))
	nodes := make([]string, len(placed))
	for i, n := range placed {
		allocs[i] = model.Allocation{Node: n.Node, GPUs: slices.Clone(n.GPUs), GPUMilli: n.GPUMilli}
		nodes[i] = n.Node
	}
	return allocs, nodes
}

// resizing reports whether j's previous attempt, ended by a resize, may
// still have ranks running.
func resizing(j *model.Job) bool {
	return len(j.Status.Resizing) > 0 && len(j.Status.Attempts) >= 2
}

// resizedRanksGone is j once the ranks of the attempt a resize ended are
// gone at now: that attempt is billed until now, and the new attempt's
// ranks may start.
func resizedRanksGone(j *model.Job, now time.Time) {
	n := len(j.Status.Attempts)
	if a := &j.Status.Attempts[n-2]; a.Ended.IsZero() {
		a.Ended = now
	}
	j.Status.Resizing = nil
}

// resizedRankEvent applies an agent's report about rank e.Rank of attempt
// n, the attempt a resize of old ended: its exit, once every old rank has
// exited, lets the new attempt's ranks start.
func resizedRankEvent(old *model.Job, n int, e Event, now time.Time) (*model.Job, string, error) {
	if e.Rank < 0 || e.Rank >= len(old.Status.Resizing) {
		return nil, "", refuse(CodeInvalidSpec, "rank", "rank %d is out of range: attempt %d had %d instances", e.Rank, n, len(old.Status.Resizing))
	}
	switch e.Type {
	case EventStarted:
		return nil, "", nil // it was running; told to stop
	case EventExited:
	default:
		return nil, "", refuse(CodeInvalidSpec, "type", "unknown event type %q (want started or exited)", e.Type)
	}
	if old.Status.Resizing[e.Rank].Exited {
		return nil, "", nil
	}
	j := cloneJob(old)
	in := &j.Status.Resizing[e.Rank]
	in.Started, in.Exited, in.ExitCode, in.Outcome = true, true, e.ExitCode, e.Outcome
	if anyLive(j.Status.Resizing) {
		return j, "", nil
	}
	resizedRanksGone(j, now)
	return j, "resized job: every rank of the old attempt stopped; the new ranks start", nil
}

// resizeOverdue returns j with the old ranks of its resize taken as gone
// when their exits were not reported within grace (their stop order's) and
// one node timeout, else nil; as stopOverdue does for a preempted job.
func resizeOverdue(j *model.Job, now time.Time, timeout, grace time.Duration) *model.Job {
	if !resizing(j) {
		return nil
	}
	at := j.Status.Attempts[len(j.Status.Attempts)-2].StopOrdered
	if at.IsZero() || now.Sub(at) <= grace+timeout {
		return nil
	}
	c := cloneJob(j)
	resizedRanksGone(c, now)
	return c
}

// foldResize returns old with a resize whose old ranks still stop undone,
// for a stop of the whole job (preemption, cancel, requeue, lost node) to
// apply to them: the new attempt, which never ran, is dropped, and the
// stopping ranks are the job's instances again. Any other job is returned
// as it is.
func foldResize(old *model.Job) *model.Job {
	if !resizing(old) {
		return old
	}
	j := cloneJob(old)
	st := &j.Status
	st.Attempts = st.Attempts[:len(st.Attempts)-1]
	st.Instances, st.Resizing = st.Resizing, nil
	st.Resizes-- // its attempt ends otherwise now
	if a := &st.Attempts[len(st.Attempts)-1]; a.Reason == ReasonResized {
		a.Reason, a.Detail = "", ""
	}
	return j
}

// resizeInterval is the least time between two resizes of a job, as the
// core applies it.
func (s *Server) resizeInterval() time.Duration {
	if d := s.cfg.Sched.ResizeInterval; d > 0 {
		return d
	}
	return model.DefaultResizeInterval
}

// explainElastic says, for 'job why', the size of elastic job j within
// its range and why it is not larger: at its maximum, a resize under way,
// too soon after the last (interval, from the start of its attempt), or
// no capacity that nothing else uses; and its last resize. "" for a job
// that is not elastic or holds no capacity.
func explainElastic(j *model.Job, now time.Time, interval time.Duration) string {
	e := j.Spec.Elastic
	if e == nil || !j.Status.State.Holds() {
		return ""
	}
	size := j.Size()
	s := fmt.Sprintf("%d of %s", size, e)
	next := j.Status.StartedAt.Add(interval)
	switch {
	case resizing(j):
		s += fmt.Sprintf("; resizing: the ranks of attempt %d stop, then the %d of attempt %d start together",
			len(j.Status.Attempts)-1, size, len(j.Status.Attempts))
	case j.Status.State != model.StateRunning:
		s += "; not resized before every rank started"
	case size >= e.MaxInstances:
		s += "; at its maximum"
	case now.Before(next):
		s += fmt.Sprintf("; no resize before %s (--resize-interval %s from the start of attempt %d)",
			next.UTC().Format(time.RFC3339), interval, len(j.Status.Attempts))
	default:
		step := e.StepOrOne()
		s += fmt.Sprintf("; not larger: it grows by %d instance(s) (%d GPUs) only into capacity that nothing queued needs, on the fabric it runs on, off nodes kept for a reservation ahead",
			step, step*j.Spec.Resources.GPUsPerInstance)
	}
	at := j.Status.Attempts
	for i := len(at) - 1; i >= 0; i-- {
		if at[i].Reason == ReasonResized {
			when := at[i].StopOrdered
			if when.IsZero() {
				when = at[i].Ended
			}
			s += fmt.Sprintf("; last resized at %s: %s", when.UTC().Format(time.RFC3339), at[i].Detail)
			break
		}
	}
	return s
}

// resizedRun is how long j's run went on before its current attempt
// through attempts a resize ended: the time limit (retry.timeout) and
// the simulated duration count the whole run, not one size of it.
func resizedRun(j *model.Job) time.Duration {
	var d time.Duration
	at := j.Status.Attempts
	for i := len(at) - 2; i >= 0 && at[i].Reason == ReasonResized; i-- {
		if !at[i].Started.IsZero() && at[i].Ended.After(at[i].Started) {
			d += at[i].Ended.Sub(at[i].Started)
		}
	}
	return d
}
