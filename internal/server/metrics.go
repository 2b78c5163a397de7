package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// metrics are the server's Prometheus series; docs/metrics.md lists every
// one with its labels. Counters and histograms are updated where the event
// happens (a cycle's publish step, a heartbeat, a reconcile); the gauges of
// GPUs, queues and nodes are computed from the cache at scrape time by
// fleetCollector (metrics_fleet.go), so the cycle does no work for them.
//
// Labels are bounded by configuration, never by traffic: regions, clusters,
// GPU models, partitions, tenants and nodes come from the fleet and tenants
// files, endpoints from the stored endpoints, reasons and classes from
// fixed sets. No job ID is a label here; package endpoint labels what the
// gateways measured by live replica (its metrics.go).
type metrics struct {
	cycle      prometheus.Histogram
	phases     *prometheus.HistogramVec // by phase (cycle_phases.go)
	jobs       *prometheus.GaugeVec
	binds      *prometheus.CounterVec // by class
	preempts   *prometheus.CounterVec // by reason
	resizes    *prometheus.CounterVec // by direction: grow, shrink
	conflicts  prometheus.Counter
	panics     prometheus.Counter
	submits    prometheus.Counter
	wait       *prometheus.HistogramVec // by tenant and class
	heartbeats prometheus.Counter
	leader     prometheus.Gauge
	nodeFailed *prometheus.CounterVec // by node: attempts a failing instance there ended

	logBytes    prometheus.Gauge   // job logs kept in memory
	logsDropped prometheus.Counter // logs dropped to stay within Config.LogMemory
	jobsPurged  prometheus.Counter // ended jobs deleted past Config.JobRetention

}

// preemptReasons are the reasons the core preempts for; each has a series
// from the start so that rate() over it works before the first preemption.
var preemptReasons = []sched.Reason{sched.HigherClass, sched.ReclaimGuarantee, sched.ReservationOwner, sched.BetterPriority, sched.HeldNodes, sched.GPUWorkFirst}

// classes are the priority classes, in order.
var classes = []model.Class{model.ClassSpot, model.ClassStandard, model.ClassReserved}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		cycle: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "allot_cycle_duration_seconds",
			Help:    "Time of one scheduling cycle: snapshot, plan and commit.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		phases: newCyclePhases(),
		jobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "allot_jobs",
			Help: "Jobs by state.",
		}, []string{"state"}),
		binds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "allot_binds_total",
			Help: "Jobs bound to GPUs by committed plans, by priority class.",
		}, []string{"class"}),
		preempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "allot_preemptions_total",
			Help: "Running jobs preempted by committed plans, by reason.",
		}, []string{"reason"}),
		resizes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "allot_resizes_total",
			Help: "Elastic jobs resized by committed plans, by direction: grow (into idle capacity) or shrink (to make room).",
		}, []string{"direction"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "allot_plan_conflicts_total",
			Help: "Plans rejected as stale at commit and recomputed.",
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "allot_cycle_panics_total",
			Help: "Scheduling cycles that panicked; each wrote nothing and the next cycle ran as usual.",
		}),
		submits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "allot_submits_total",
			Help: "Jobs accepted and durably stored.",
		}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "allot_queue_wait_seconds",
			Help:    "Time a job waited queued before a committed plan bound it (since submit, or since its previous attempt ended), by tenant and class.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10), // 1 s to about 3 days
		}, []string{"tenant", "class"}),
		heartbeats: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "allot_agent_heartbeats_total",
			Help: "Heartbeats accepted from node agents.",
		}),
		nodeFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "allot_node_failed_attempts_total",
			Help: "Attempts that ended Failed because an instance on this node exited non-zero or was killed (not lost nodes, not time limits); a retry goes elsewhere when it can.",
		}, []string{"node"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "allot_server_leader",
			Help: "1 while this server leads (schedules and commits plans), 0 while another does; always 1 without leader election.",
		}),
		logBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "allot_log_bytes",
			Help: "Bytes of job logs the server keeps in memory (the last MiB of each attempt, up to --log-memory-mib in all).",
		}),
		logsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "allot_logs_dropped_total",
			Help: "Attempts' logs dropped from memory to stay within --log-memory-mib, the tenant holding the most first (the nodes keep the files).",
		}),
		jobsPurged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "allot_jobs_purged_total",
			Help: "Ended jobs deleted from the store past --job-retention.",
		}),
	}
	reg.MustRegister(m.cycle, m.phases, m.jobs, m.binds, m.preempts, m.resizes, m.conflicts, m.panics, m.submits, m.wait, m.heartbeats, m.leader, m.nodeFailed,
		m.logBytes, m.logsDropped, m.jobsPurged,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, s := range model.States {
		m.jobs.WithLabelValues(string(s)).Set(0)
	}
	for _, c := range classes {
		m.binds.WithLabelValues(c.String())
	}
	for _, r := range preemptReasons {
		m.preempts.WithLabelValues(r.String())
	}
	for _, d := range []string{"grow", "shrink"} {
		m.resizes.WithLabelValues(d)
	}
	return m
}

// published records what one committed plan did: its binds (with each
// job's wait), preemptions and resizes. byID holds the jobs as the plan saw them.
// It is O(binds + preemptions).
func (m *metrics) published(plan *sched.Plan, byID map[string]*model.Job, now time.Time) {
	for _, b := range plan.Binds {
		j := byID[b.Job]
		if j == nil {
			continue
		}
		class := j.Spec.Priority.Class.String()
		m.binds.WithLabelValues(class).Inc()
		m.wait.WithLabelValues(j.Spec.Tenant, class).Observe(queuedFor(j, now).Seconds())
	}
	for _, p := range plan.Preemptions {
		m.preempts.WithLabelValues(p.Reason.String()).Inc()
	}
	for _, r := range plan.Resizes {
		direction := "shrink"
		if r.Grows() {
			direction = "grow"
		}
		m.resizes.WithLabelValues(direction).Inc()
	}
}

// queuedFor is how long j has been queued at now: since its last attempt
// ended, or since it was submitted.
func queuedFor(j *model.Job, now time.Time) time.Duration {
	since := j.Status.SubmittedAt
	if n := len(j.Status.Attempts); n > 0 && j.Status.Attempts[n-1].Ended.After(since) {
		since = j.Status.Attempts[n-1].Ended
	}
	return max(0, now.Sub(since))
}
