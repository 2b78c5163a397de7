package server

import (
	"fmt"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Grace, the time between SIGTERM and SIGKILL that a job's processes get
// when told to stop, is bounded: a job that ignores SIGTERM holds its GPUs
// for its whole grace, while the work placed in its stead waits. So
//
//   - a job or instance may ask for at most Config.MaxGrace (--max-grace,
//     DefaultMaxGrace); more is refused at submit, naming the field;
//   - a stop order never gives more than MaxGrace, whatever a job stored
//     before the bound asks (stopGrace);
//   - a cancel of a job whose processes run tells them to stop with their
//     grace, and a second cancel, or one with force, kills them at once;
//   - the attempt stopped is billed until its processes are gone, and the
//     attempt placed in its stead from when it runs (model.Attempt).
const (
	// DefaultMaxGrace is Config.MaxGrace when unset: ten times
	// model.DefaultGrace, room to write a large checkpoint.
	DefaultMaxGrace = 5 * time.Minute
)

// checkGrace refuses a grace above the server's maximum, naming field.
func (s *Server) checkGrace(grace time.Duration, field string) error {
	if grace > s.cfg.MaxGrace {
		return refuse(CodeInvalidSpec, field, "%s is longer than the server allows (--max-grace %s): a job's processes keep their GPUs for the whole grace after being told to stop",
			grace, s.cfg.MaxGrace)
	}
	return nil
}

// stopGrace is the grace a stop order gives j's processes: none once a
// kill was asked (a second cancel, or cancel with force), else the job's
// grace bounded by the server's maximum.
func (s *Server) stopGrace(j *model.Job) time.Duration {
	if j.Status.Kill {
		return 0
	}
	return min(j.Spec.Checkpoint.GraceOrDefault(), s.cfg.MaxGrace)
}

// stopAttempt marks the current attempt of j, whose processes were told to
// stop at now, as still billed: its end is when they are gone
// (releaseAttempt), not when they were told.
func stopAttempt(j *model.Job, now time.Time) {
	if n := len(j.Status.Attempts); n > 0 {
		a := &j.Status.Attempts[n-1]
		a.StopOrdered = now
		if a.Started.IsZero() {
			return // it never ran: nothing to bill
		}
		a.Ended = time.Time{}
	}
}

// releaseAttempt ends the current attempt of j at now, when its processes
// are gone, keeping the reason the stop gave it.
func releaseAttempt(j *model.Job, now time.Time) {
	if n := len(j.Status.Attempts); n > 0 && j.Status.Attempts[n-1].Ended.IsZero() {
		j.Status.Attempts[n-1].Ended = now
	}
}

// stopOrderedAt is when j's processes were told to stop: its current
// attempt's StopOrdered, or for a record written before that was kept,
// its end.
func stopOrderedAt(j *model.Job) time.Time {
	n := len(j.Status.Attempts)
	if n == 0 {
		return time.Time{}
	}
	if a := j.Status.Attempts[n-1]; !a.StopOrdered.IsZero() {
		return a.StopOrdered
	}
	return j.Status.Attempts[n-1].Ended
}

// cancelJob is old canceled by who at now. In agent mode a job whose
// processes may still run is told to stop first: it stays Preempted with
// Canceling set until they are gone (then Canceled), billed meanwhile.
// A job already stopping so, or a cancel with force, gets its processes
// killed at once. Anything else is Canceled at once.
func cancelJob(old *model.Job, who string, force, agents bool, grace time.Duration, now time.Time) *model.Job {
	old = foldResize(old)
	stopping := old.Status.State == model.StatePreempted
	if !agents || !anyLive(old.Status.Instances) || (!stopping && !old.Status.State.Holds()) {
		return endJob(old, model.StateCanceled, "Canceled", "canceled by "+who, -1, now)
	}
	j := cloneJob(old)
	if stopping {
		if j.Status.Canceling || force {
			j.Status.Kill = true
			j.Status.Detail = fmt.Sprintf("canceled by %s; killing its processes now", who)
		} else {
			j.Status.Detail += fmt.Sprintf("; canceled by %s: cancel again, or with --force, to kill now", who)
		}
		j.Status.Canceling, j.Status.Reason = true, "Canceling"
		return j
	}
	closeAttempt(j, now, "Canceled", "canceled by "+who, -1)
	stopAttempt(j, now)
	j.Status.State = model.StatePreempted
	j.Status.Allocations = nil
	j.Status.Canceling, j.Status.Kill = true, force
	j.Status.Reason = "Canceling"
	if force {
		j.Status.Detail = fmt.Sprintf("canceled by %s at %s; killing its processes now", who, now.UTC().Format(time.RFC3339))
	} else {
		j.Status.Detail = fmt.Sprintf("canceled by %s at %s; stopping now, killed by %s (grace %s); cancel again, or with --force, to kill now",
			who, now.UTC().Format(time.RFC3339), now.Add(grace).UTC().Format(time.RFC3339), grace)
	}
	return j
}

// stopped is j, Preempted, once its processes are gone at now: Canceled
// when a cancel stopped it, else Queued to resume.
func stopped(j *model.Job, now time.Time) (*model.Job, string) {
	releaseAttempt(j, now)
	j.Status.Instances = nil
	j.Status.Kill = false
	if j.Status.Canceling {
		j.Status.Canceling = false
		c := endJob(j, model.StateCanceled, "Canceled", j.Status.Detail, -1, now)
		return c, "canceled job stopped"
	}
	j.Status.State = model.StateQueued
	return j, "preempted job stopped; queued to resume"
}
