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
//	Preparing|Running|Preempted --canceled, an instance live--> Preempted (Canceling) --its exits--> Canceled
//	Preparing|Running|Preempted --node lost--> Queued (NodeLost; no retry counted)
//	Preparing|Running --outcome Stopped (its agent went down)--> Preempted (Requeued; no retry counted) --its exits--> Queued
//	Preparing --outcome ImagePullFailed--> Queued, or Preempted while other ranks run (ImagePullFailed; no retry counted; back-off)
//	Running --resized (elastic)--> Preparing: the old attempt's ranks stop, then the new attempt's start (resize.go)
//
// The functions below are pure: they take the job as it is and now, and
// return the new version (never modifying the old) or nil when the fact
// changes nothing.

// Event types and outcomes an agent reports.
const (
	EventStarted = "started"
	EventExited  = "exited"
	// EventPulling: the agent pulls the instance's image, so far
	// (Event.Pulled of Event.PullTotal bytes); it changes no state, only
	// what 'job show' says of a Preparing job.
	EventPulling = "pulling"

	OutcomeExited   = "Exited"
	OutcomeStopped  = "Stopped"
	OutcomeTimedOut = "TimedOut"
	OutcomeNodeLost = "NodeLost"
	// OutcomeImagePullFailed: the instance's image could not be pulled
	// (imagePullFailed); Event.Message says why, in the registry's words.
	OutcomeImagePullFailed = "ImagePullFailed"
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
	// Message is the agent's account of the exit (why the command could
	// not start, the signal that ended it); it replaces the exit code in
	// the job's detail when set.
	Message string
	// Pulled and PullTotal are an EventPulling's bytes fetched and the
	// image's size (0: unknown).
	Pulled, PullTotal int64
}

// bindAgentJob is bindJob in agent mode: the job waits in Preparing until
// every instance has started.
func bindAgentJob(old *model.Job, b sched.Bind, now time.Time) *model.Job {
	j := bindJob(old, b, now)
	j.Status.State = model.StatePreparing
	j.Status.Attempts[len(j.Status.Attempts)-1].Started = time.Time{} // billed once it runs
	j.Status.Instances = make([]model.Instance, len(j.Status.Allocations))
	return j
}

// preemptJob releases a victim's capacity. In agent mode a victim with a
// live instance becomes Preempted until the agents report its exits
// (within grace, the stop order's), billed until then; one without goes
// back to Queued at once.
func preemptJob(old *model.Job, p sched.Preemption, now time.Time, agents bool, grace time.Duration) *model.Job {
	old = foldResize(old)
	detail := fmt.Sprintf("preempted for %s (%s) at %s, %.0f GPU-seconds lost: %s", p.For, p.Reason, now.UTC().Format(time.RFC3339),
		p.LostGPUSeconds, p.Detail)
	j := requeue(old, p.Reason.String(), detail, now, "Preempted")
	j.Status.Preemptions++
	if agents && anyLive(old.Status.Instances) {
		j.Status.State = model.StatePreempted
		j.Status.Instances = append([]model.Instance(nil), old.Status.Instances...)
		// The eviction notice: its processes are told to stop now and
		// killed at the deadline (the agents enforce it; stopOverdue
		// requeues the job if they do not report).
		stopAttempt(j, now)
		j.Status.Detail += fmt.Sprintf("; eviction notice: stopping now, stopped by %s (grace %s)",
			now.Add(grace).UTC().Format(time.RFC3339), grace)
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

// Lost attempts. An attempt lost with its node does not count against
// max_retries (the job did not fail), but a job whose attempts keep being
// lost (a host that keeps dying, or a job that kills its own agent) must
// not loop forever: every lost attempt holds the job back for a back-off
// that doubles each time, and past the server's limit the job fails.
const (
	// DefaultMaxLost is how many attempts of a job may be lost before it
	// fails (Config.MaxLost).
	DefaultMaxLost = 5
	lostBackoff    = 10 * time.Second // after the first lost attempt
	maxLostBackoff = 10 * time.Minute
	// fenceMargin is added to the grace of an attempt whose node stopped
	// answering, for the agent's self-fencing to have taken effect.
	fenceMargin = 5 * time.Second
)

// lostBackoffAfter is the hold after the k-th lost attempt: 10 s, 20 s,
// 40 s, … at most 10 minutes.
func lostBackoffAfter(k int) time.Duration {
	d := lostBackoff
	for i := 1; i < k && d < maxLostBackoff; i++ {
		d *= 2
	}
	return min(d, maxLostBackoff)
}

// nodeLost requeues a job whose attempt was lost with node: the whole gang
// goes back to Queued and resumes from its last checkpoint; the attempt is
// recorded as NodeLost and counts against maxLost, not max_retries.
//
// Fencing: when the node stopped answering (unconfirmed), its processes
// may still run until its agent notices and stops them, which it does
// within the node timeout (already passed: that is how the node was found
// lost) plus the job's grace. The job is held back that long, plus
// fenceMargin, so that no new attempt runs beside the old one. An agent
// that reports the loss itself (it restarted and killed what a previous
// run left) has confirmed the stop; the other ranks of a gang still get
// their grace.
func nodeLost(old *model.Job, node, why string, now time.Time, confirmed bool, maxLost int) *model.Job {
	old = foldResize(old)
	j := requeue(old, "NodeLost", fmt.Sprintf("%s at %s; requeued from the last checkpoint", why, now.UTC().Format(time.RFC3339)),
		now, "NodeLost")
	j.Status.Lost++
	n := len(old.Status.Attempts)
	if n > 0 {
		j.Status.Attempts[n-1].FailedNode = node
	}
	if j.Status.Lost > maxLost {
		return endJob(j, model.StateFailed, "LostTooOften", fmt.Sprintf("attempt %d was lost (%s); %d attempts lost, the limit is %d",
			n, why, j.Status.Lost, maxLost), -1, now)
	}
	backoff := lostBackoffAfter(j.Status.Lost)
	hold := now.Add(backoff)
	fenced := ""
	if live := otherLive(old, node); !confirmed || live {
		if t := now.Add(old.Spec.Checkpoint.GraceOrDefault() + fenceMargin); t.After(hold) {
			hold = t
			fenced = "; its old processes get their grace to stop first"
		}
	}
	j.Status.NotBefore = hold
	j.Status.Reason = "BackingOff"
	j.Status.Detail = fmt.Sprintf("attempt %d was lost (%s); %d of at most %d attempts lost; held until %s (back-off %s%s)",
		n, why, j.Status.Lost, maxLost, hold.UTC().Format(time.RFC3339), backoff, fenced)
	return j
}

// otherLive reports whether an instance of j's current attempt on another
// node than node may still run.
func otherLive(j *model.Job, node string) bool {
	n := len(j.Status.Attempts)
	if n == 0 {
		return false
	}
	nodes := j.Status.Attempts[n-1].Nodes
	for r, in := range j.Status.Instances {
		if in.Live() && r < len(nodes) && nodes[r] != node {
			return true
		}
	}
	return false
}

// Failed attempts. A job whose attempt failed goes back to the queue while
// it has retries left, but not at once: a program that crashes on start
// (a missing file, a service not up yet, a bad host) would otherwise burn
// every retry within a second. As Kubernetes holds a failed Job's pods
// back, each retry waits a back-off that doubles from the server's
// --retry-backoff (default 10 s) up to maxRetryBackoff.
const (
	// DefaultRetryBackoff is the hold before a failed job's first retry
	// (Config.RetryBackoff).
	DefaultRetryBackoff = 10 * time.Second
	maxRetryBackoff     = 5 * time.Minute
)

// retryBackoffAfter is the hold before the k-th retry (k ≥ 1): first,
// 2×first, 4×first, … at most maxRetryBackoff, or first when that is
// longer; none when first is not positive.
func retryBackoffAfter(k int, first time.Duration) time.Duration {
	if first <= 0 {
		return 0
	}
	d := first
	for i := 1; i < k && d < maxRetryBackoff; i++ {
		d *= 2
	}
	return min(d, max(maxRetryBackoff, first))
}

// limits are the server's bounds on a job's attempts that applyEvent
// needs.
type limits struct {
	maxLost      int           // attempts that may be lost with their node
	retryBackoff time.Duration // before the first retry of a failed attempt; ≤ 0: none
	maxGrace     time.Duration // the longest grace a stop gives; 0: the job's own
}

// applyEvent applies an agent's report about instance e.Rank of attempt n
// of old. It returns the new job and a line for the log, nil when the
// event changes nothing, or a refusal when the attempt is not the job's
// current one or the rank is out of range.
func applyEvent(old *model.Job, n int, e Event, now time.Time, lim limits) (*model.Job, string, error) {
	st := old.Status
	if n == len(st.Attempts)-1 && resizing(old) {
		return resizedRankEvent(old, n, e, now)
	}
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
	case EventPulling:
		// News of a pull: only while the attempt prepares and the
		// instance has not started (a late report changes nothing).
		if in.Started || in.Exited || j.Status.State != model.StatePreparing ||
			(in.Pulling && in.PulledBytes == e.Pulled && in.PullBytes == e.PullTotal) {
			return nil, "", nil
		}
		in.Pulling, in.PulledBytes, in.PullBytes = true, e.Pulled, e.PullTotal
		return j, "", nil
	case EventStarted:
		if in.Started || in.Exited {
			return nil, "", nil
		}
		in.Started = true
		in.Pulling, in.PulledBytes, in.PullBytes = false, 0, 0
		if j.Status.State == model.StatePreparing && allStarted(j.Status.Instances) {
			j.Status.State = model.StateRunning
			j.Status.StartedAt = now
			j.Status.Attempts[n-1].Started = now // billed from now
			return j, "job running: every instance started", nil
		}
		return j, "", nil
	case EventExited:
	default:
		return nil, "", refuse(CodeInvalidSpec, "type", "unknown event type %q (want started, pulling or exited)", e.Type)
	}
	if in.Exited {
		return nil, "", nil
	}
	in.Started, in.Exited, in.ExitCode, in.Outcome = true, true, e.ExitCode, e.Outcome
	in.Pulling, in.PulledBytes, in.PullBytes = false, 0, 0
	if in.Outcome == "" {
		in.Outcome = OutcomeExited
	}
	if j.Status.State == model.StatePreempted {
		if anyLive(j.Status.Instances) {
			return j, "", nil
		}
		j, msg := stopped(j, now)
		return j, msg, nil
	}
	where := fmt.Sprintf("attempt %d, rank %d on %s", n, e.Rank, e.Node)
	switch {
	case in.Outcome == OutcomeNodeLost:
		j := nodeLost(old, e.Node, fmt.Sprintf("the agent of node %s restarted and no longer runs rank %d", e.Node, e.Rank), now, true, lim.maxLost)
		if j.Status.State == model.StateFailed {
			return j, "job failed: too many attempts lost", nil
		}
		return j, "job requeued: its agent lost the attempt", nil
	case in.Outcome == OutcomeImagePullFailed:
		return imagePullFailed(j, where, e.Message, now, lim.retryBackoff), "job requeued: its image could not be pulled", nil
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
	if in.Outcome == OutcomeStopped {
		// The server asks only Preempted jobs to stop: an instance of a
		// running job stopped by its agent was stopped as the agent went
		// down on purpose ('allot agent --on-exit stop', 'allot up'). No
		// fault of the job's: it is requeued from its checkpoint, no retry
		// counted, and its other ranks are stopped with their grace.
		grace := old.Spec.Checkpoint.GraceOrDefault()
		if lim.maxGrace > 0 {
			grace = min(grace, lim.maxGrace)
		}
		who := fmt.Sprintf("the agent of node %s, which stopped rank %d as it went down,", e.Node, e.Rank)
		return requeueJob(j, who, now, true, grace), "job requeued: its agent went down", nil
	}
	how := fmt.Sprintf("exited with code %d", e.ExitCode)
	if e.Message != "" {
		how = e.Message
	}
	if e.Killed {
		how += " (killed after the grace)"
	}
	limit := old.Spec.Retry.MaxRetries
	if j.Status.Retries < limit {
		j.Status.Retries++
		detail := fmt.Sprintf("%s %s; retry %d of %d", where, how, j.Status.Retries, limit)
		q := requeue(j, "Retrying", detail, now, "Failed")
		last := &q.Status.Attempts[len(q.Status.Attempts)-1]
		last.ExitCode, last.FailedNode = e.ExitCode, e.Node
		if b := retryBackoffAfter(j.Status.Retries, lim.retryBackoff); b > 0 {
			q.Status.NotBefore = now.Add(b)
			q.Status.Detail = fmt.Sprintf("%s, held until %s (back-off %s)", detail, q.Status.NotBefore.UTC().Format(time.RFC3339), b)
		}
		return q, "job failed; retrying", nil
	}
	f := endJob(j, model.StateFailed, "Failed", fmt.Sprintf("%s %s; no retries left (max_retries %d)", where, how, limit),
		e.ExitCode, now)
	f.Status.Attempts[len(f.Status.Attempts)-1].FailedNode = e.Node
	return f, "job failed", nil
}

// Image pulls. An instance whose image could not be pulled (no such
// image, a bad reference, a private one without credentials) ends its
// attempt without counting a retry: the program never ran. The job goes
// back to the queue with reason ImagePullFailed and the agent's message
// (the registry's words) as its detail, held for a back-off that doubles
// with each pull of the job that failed in a row, as kubelet's
// ImagePullBackOff: a person fixes the image or its credentials, or
// cancels the job. The first hold is the server's --retry-backoff (10 s by
// default; 1 s when that is none).
const maxPullBackoff = 5 * time.Minute

// ReasonImagePullFailed is the reason of a job whose last attempt could
// not pull its image.
const ReasonImagePullFailed = "ImagePullFailed"

// pullFailures counts the attempts of j before its current one, last
// first, that ended as their image could not be pulled.
func pullFailures(j *model.Job) int {
	n := 0
	for i := len(j.Status.Attempts) - 2; i >= 0 && j.Status.Attempts[i].Reason == ReasonImagePullFailed; i-- {
		n++
	}
	return n
}

// imagePullFailed requeues j, whose instance (where) could not pull its
// image (why), after the back-off of its failed pulls in a row; the other
// ranks of a gang that still run are stopped first (Preempted).
func imagePullFailed(j *model.Job, where, why string, now time.Time, first time.Duration) *model.Job {
	k := pullFailures(j) + 1
	backoff := first
	if backoff <= 0 {
		backoff = time.Second
	}
	for i := 1; i < k && backoff < maxPullBackoff; i++ {
		backoff *= 2
	}
	backoff = min(backoff, maxPullBackoff)
	if why == "" {
		why = "its image could not be pulled"
	}
	hold := now.Add(backoff)
	detail := fmt.Sprintf("%s: %s; %d failed pull(s) in a row, retried after %s (back-off %s)", where, why, k,
		hold.UTC().Format(time.RFC3339), backoff)
	q := requeue(j, ReasonImagePullFailed, detail, now, ReasonImagePullFailed)
	q.Status.NotBefore = hold
	if anyLive(j.Status.Instances) {
		q.Status.State = model.StatePreempted
		q.Status.Instances = append([]model.Instance(nil), j.Status.Instances...)
		stopAttempt(q, now)
	}
	return q
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
func checkpointJob(old *model.Job, path, node string, now time.Time) *model.Job {
	j := cloneJob(old)
	j.Status.SetCheckpoint(path, node, now)
	return j
}
