package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/allot-dev/allot/internal/store"
)

// Where a scheduling cycle's time goes, as allot_cycle_phase_seconds shows
// it: one series per phase, each observed once per cycle attempt that
// reaches the phase (a cycle with nothing to write ends after plan; a
// re-plan after a conflict observes its phases again).
//
//   - snapshot: the cache's consistent copy of the live jobs and the
//     world (step 1 of Cycle);
//   - prepare: facts, pipelines, the sharing strategy and the operator's
//     policies (steps 2 and 3);
//   - plan: the core's decision on its Session (step 4);
//   - encode: the new job records and the transaction built from the Plan
//     (step 5 up to the store);
//   - commit: the store transaction, durable when it returns (step 5);
//   - publish: the written jobs into the cache, metrics and decision logs
//     (step 6);
//   - watch: the store's watch applying the cycle's committed revision to
//     the cache, from its first event to its last (what every follower's
//     cache does too; the leader's own cache already holds the jobs, so
//     it decodes nothing here).
const (
	phaseSnapshot = "snapshot"
	phasePrepare  = "prepare"
	phasePlan     = "plan"
	phaseEncode   = "encode"
	phaseCommit   = "commit"
	phasePublish  = "publish"
	phaseWatch    = "watch"
)

// CyclePhases are the phases of allot_cycle_phase_seconds, in cycle order.
var CyclePhases = []string{phaseSnapshot, phasePrepare, phasePlan, phaseEncode, phaseCommit, phasePublish, phaseWatch}

// CyclePhaseBuckets are the upper bounds of allot_cycle_phase_seconds'
// buckets: 0.1 ms up by half each, to about 5.7 s; fine enough that a
// quantile read from them is within a quarter of the true one.
var CyclePhaseBuckets = prometheus.ExponentialBuckets(0.0001, 1.5, 28)

func newCyclePhases() *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "allot_cycle_phase_seconds",
		Help:    "Time of one phase of a scheduling cycle: snapshot, prepare, plan, encode, commit, publish, and the watch applying the cycle's commit to the cache.",
		Buckets: CyclePhaseBuckets,
	}, []string{"phase"})
	for _, p := range CyclePhases {
		h.WithLabelValues(p)
	}
	return h
}

// phaseClock times the phases of one cycle attempt.
type phaseClock struct {
	h    *prometheus.HistogramVec
	last time.Time
}

func (m *metrics) phaseClock() phaseClock { return phaseClock{h: m.phases, last: time.Now()} }

// done observes the time since the previous phase ended (or the clock
// started) as phase's.
func (c *phaseClock) done(phase string) {
	now := time.Now()
	c.h.WithLabelValues(phase).Observe(now.Sub(c.last).Seconds())
	c.last = now
}

// watchSpan follows the store's watch revision by revision and observes
// the watch phase of every revision that holds the scheduling fence: a
// cycle's commit, which writes jobs and the fence. A revision's events come
// together; in key order (bolt) the fence is the last of them, so the span
// ends with it; in the order of the transaction's operations (etcd) it is
// the first, and the span ends when an event of a later revision arrives.
type watchSpan struct {
	h           prometheus.Observer
	rev         int64
	events      int
	first, last time.Time
	open        bool // the revision has not been observed yet
	cycle       bool // the revision began with the fence
}

// applied records that ev was applied to the cache between start and now.
func (w *watchSpan) applied(ev store.Event, start time.Time) {
	now := time.Now()
	if ev.Rev != w.rev {
		if w.open && w.cycle {
			w.h.Observe(w.last.Sub(w.first).Seconds())
		}
		w.rev, w.events, w.first, w.open, w.cycle = ev.Rev, 0, start, true, false
	}
	w.events++
	w.last = now
	if ev.KV.Key != keyFence || !w.open {
		return
	}
	if w.events == 1 {
		w.cycle = true
		return
	}
	w.h.Observe(now.Sub(w.first).Seconds())
	w.open = false
}
