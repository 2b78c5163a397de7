package endpoint

import (
	"fmt"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Crash-loop back-off of an endpoint's replicas, as Kubernetes'
// CrashLoopBackOff: a replica that fails (its program exits non-zero or is
// killed) is replaced only after a wait, 10 s after the first failure,
// doubling with each failure after that to at most 5 minutes. Replicas that
// fail during one wait (they were started together) count as one failure.
// The count starts again once a replica started after the last failure has
// run for crashLoopReset (10 minutes, Kubernetes' figure). The back-off is
// per endpoint and stored in its record, so a restart or a failover keeps
// it; while it lasts, neither a replacement nor a scale-out or rollout
// replica is submitted, and 'allot endpoint show' says until when.
const (
	crashLoopFirst = 10 * time.Second
	crashLoopMax   = 5 * time.Minute
	crashLoopReset = 10 * time.Minute
)

// EventBackOff is the event of a replica's failure that starts or extends
// the back-off.
const EventBackOff = "BackOff"

// CrashLoop is an endpoint's back-off: how many failures in a row it
// counts, when the latest counted replica failed, and until when no
// replica is submitted (zero: none).
type CrashLoop struct {
	Failures int
	Last     time.Time
	Until    time.Time
}

// crashLoopDelay is the wait after the nth failure in a row (n ≥ 1).
func crashLoopDelay(n int) time.Duration {
	d := crashLoopFirst
	for i := 1; i < n && d < crashLoopMax; i++ {
		d *= 2
	}
	return min(d, crashLoopMax)
}

// backingOff reports whether e waits at now before submitting replicas.
func (e *Endpoint) backingOff(now time.Time) bool {
	return now.Before(e.CrashLoop.Until)
}

// noteCrashes updates e's back-off at now from its replicas: those that
// ended Failed within crashLoopReset and after the latest one counted, and
// those live; it reports whether the back-off changed, adding an event
// when it grew.
func (e *Endpoint) noteCrashes(live, ended []*model.Job, now time.Time) bool {
	cl := e.CrashLoop
	var failed []*model.Job
	for _, j := range ended {
		if at := j.Status.EndedAt; j.Status.State == model.StateFailed && at.After(cl.Last) && now.Sub(at) <= crashLoopReset {
			failed = append(failed, j)
		}
	}
	slices.SortFunc(failed, func(a, b *model.Job) int { return a.Status.EndedAt.Compare(b.Status.EndedAt) })
	var round *model.Job // the failure that began the latest round
	for _, j := range failed {
		if at := j.Status.EndedAt; !at.Before(cl.Until) { // after the wait: a new round
			cl.Failures++
			cl.Until, round = at.Add(crashLoopDelay(cl.Failures)), j
		}
		cl.Last = j.Status.EndedAt
	}
	switch {
	case round != nil:
		e.addEvent(now, EventBackOff, e.Desired, e.Desired, fmt.Sprintf(
			"replica %s failed (%s): failure %d in a row, no replica is submitted before %s (back-off %s, doubling to at most %s)",
			round.ID, round.Status.Detail, cl.Failures, cl.Until.UTC().Format(time.RFC3339), crashLoopDelay(cl.Failures), crashLoopMax))
	case cl.Failures > 0 && !now.Before(cl.Until) && steady(live, cl.Last, now):
		cl = CrashLoop{}
	}
	if cl == e.CrashLoop {
		return false
	}
	e.CrashLoop = cl
	return true
}

// steady reports whether a replica of live started after since and has
// run for crashLoopReset at now.
func steady(live []*model.Job, since, now time.Time) bool {
	for _, j := range live {
		st := j.Status.StartedAt
		if j.Status.State == model.StateRunning && st.After(since) && now.Sub(st) >= crashLoopReset {
			return true
		}
	}
	return false
}
