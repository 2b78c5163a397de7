package server

import (
	"fmt"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// The lifecycle of a job in agent mode, driven by reported facts (agents'
// started and exited events) and by committed plans:
//
//	Queued --bind--> Preparing --every instance started--> Running
//	Running --every instance exited 0--> Succeeded
//	Preparing|Running --an instance exited non-zero--> Queued (retries left) | Failed
//	Preparing|Running --outcome TimedOut--> TimedOut
//	Preparing|Running --preempted, an instance live--> Preempted --its exits--> Queued
//	Preparing|Running --preempted, none live--> Queued
//	Preparing|Running|Preempted --node lost--> Queued (NodeLost; no retry counted)
//
// The functions below are pure: they take the job as it is and now, and
// return the new version (never modifying the old) or nil when the fact
// changes nothing.

// Event types and outcomes an agent reports.
const (
	EventStarted = "started"
	EventExited  = "exited"

	OutcomeExited   = "Exited"
	OutcomeStopped  = "Stopped"
	OutcomeTimedOut = "TimedOut"
	OutcomeNodeLost = "NodeLost"
)

// Event is a fact an agent reports about one instance (by rank) of an
// attempt.
type Event struct {
	Type     string
	Rank     int
	Node     string
	ExitCode int
	Outcome  string
	Killed   bool
}

// bindAgentJob is bindJob in agent mode: the job waits in Preparing until
// every instance has started.
func bindAgentJob(old *model.Job, b sched.Bind, now time.Time) *model.Job {
	j := bindJob(old, b, now)
	j.Status.State = model.StatePreparing
	j.Status.Instances = make([]model.Instance, len(j.Status.Allocations))
	return j
}

// preemptJob releases a victim's capacity. In agent mode a victim with a
// live instance becomes Preempted until the agents report its exits; one
// without goes back to Queued at once.
func preemptJob(old *model.Job, p sched.Preemption, now time.Time, agents bool) *model.Job {
	detail := fmt.Sprintf("preempted for %s at %s, %.0f GPU-seconds lost: %s", p.For, now.UTC().Format(time.RFC3339),
		p.LostGPUSeconds, p.Detail)
	j := requeue(old, p.Reason.String(), detail, now, "Preempted")
	j.Status.Preemptions++
	if agents && anyLive(old.Status.Instances) {
		j.Status.State = model.StatePreempted
		j.Status.Instances = append([]model.Instance(nil), old.Status.Instances...)
	}
	return j
}

func anyLive(in []model.Instance) bool {
	for _, i := range in {
		if i.Live() {
			return true
		}
	}
	return false
}

// nodeLost requeues a job whose node stopped answering: the whole gang
// goes back to Queued and resumes from its last checkpoint; the attempt is
// recorded as NodeLost and does not count against max_retries.
func nodeLost(old *model.Job, node string, now time.Time) *model.Job {
	return requeue(old, "NodeLost", fmt.Sprintf("node %s stopped answering at %s; requeued from the last checkpoint",
		node, now.UTC().Format(time.RFC3339)), now, "NodeLost")
}

// applyEvent applies an agent's report about instance e.Rank of attempt n
// of old. It returns the new job and a line for the log, nil when the
// event changes nothing, or a refusal when the attempt is not the job's
// current one or the rank is out of range.
func applyEvent(old *model.Job, n int, e Event, now time.Time) (*model.Job, string, error) {
	st := old.Status
	if n != len(st.Attempts) || n == 0 {
		return nil, "", refuse(CodeConflict, "", "attempt %d of job %s is not its current attempt (%d)", n, old.ID, len(st.Attempts))
	}
	if old.Status.State.Terminal() || old.Status.State == model.StateQueued {
		return nil, "", nil // canceled, ended or requeued meanwhile: the agent's late news
	}
	if e.Rank < 0 || e.Rank >= len(st.Instances) {
		return nil, "", refuse(CodeInvalidSpec, "rank", "rank %d is out of range: attempt %d has %d instances", e.Rank, n, len(st.Instances))
	}
	j := cloneJob(old)
	in := &j.Status.Instances[e.Rank]
	switch e.Type {
	case EventStarted:
		if in.Started || in.Exited {
			return nil, "", nil
		}
		in.Started = true
		if j.Status.State == model.StatePreparing && allStarted(j.Status.Instances) {
			j.Status.State = model.StateRunning
			j.Status.StartedAt = now
			return j, "job running: every instance started", nil
		}
		return j, "", nil
	case EventExited:
	default:
		return nil, "", refuse(CodeInvalidSpec, "type", "unknown event type %q (want started or exited)", e.Type)
	}
	if in.Exited {
		return nil, "", nil
	}
	in.Started, in.Exited, in.ExitCode, in.Outcome = true, true, e.ExitCode, e.Outcome
	if in.Outcome == "" {
		in.Outcome = OutcomeExited
	}
	if j.Status.State == model.StatePreempted {
		if anyLive(j.Status.Instances) {
			return j, "", nil
		}
		j.Status.State = model.StateQueued
		j.Status.Instances = nil
		return j, "preempted job stopped; queued to resume", nil
	}
	where := fmt.Sprintf("attempt %d, rank %d on %s", n, e.Rank, e.Node)
	switch {
	case in.Outcome == OutcomeNodeLost:
		return nodeLost(old, e.Node, now), "job requeued: its agent lost the attempt", nil
	case in.Outcome == OutcomeTimedOut:
		detail := fmt.Sprintf("%s ran past retry.timeout %s", where, old.Spec.Retry.Timeout)
		if e.Killed {
			detail += "; killed after the grace"
		}
		return endJob(j, model.StateTimedOut, "TimedOut", detail, e.ExitCode, now), "job timed out", nil
	case in.Outcome == OutcomeExited && e.ExitCode == 0 && !e.Killed:
		for _, x := range j.Status.Instances {
			if !x.Exited || x.ExitCode != 0 || x.Outcome != OutcomeExited {
				return j, "", nil // others still run
			}
		}
		return endJob(j, model.StateSucceeded, "Completed", fmt.Sprintf("every instance of attempt %d exited 0", n), 0, now),
			"job succeeded", nil
	}
	how := fmt.Sprintf("exited with code %d", e.ExitCode)
	if in.Outcome == OutcomeStopped {
		how = "was stopped"
	}
	if e.Killed {
		how += " (killed after the grace)"
	}
	limit := old.Spec.Retry.MaxRetries
	if j.Status.Retries < limit {
		j.Status.Retries++
		q := requeue(j, "Retrying", fmt.Sprintf("%s %s; retry %d of %d", where, how, j.Status.Retries, limit), now, "Failed")
		q.Status.Attempts[len(q.Status.Attempts)-1].ExitCode = e.ExitCode
		return q, "job failed; retrying", nil
	}
	return endJob(j, model.StateFailed, "Failed", fmt.Sprintf("%s %s; no retries left (max_retries %d)", where, how, limit),
		e.ExitCode, now), "job failed", nil
}

func allStarted(in []model.Instance) bool {
	for _, i := range in {
		if !i.Started {
			return false
		}
	}
	return true
}

// checkpointJob records a checkpoint the job reported.
func checkpointJob(old *model.Job, path string, now time.Time) *model.Job {
	j := cloneJob(old)
	j.Status.CheckpointPath = path
	j.Status.LastCheckpoint = now
	return j
}
