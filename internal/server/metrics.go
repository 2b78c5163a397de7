package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/allot-dev/allot/internal/model"
)

// metrics are the server's Prometheus series.
type metrics struct {
	cycle     prometheus.Histogram
	jobs      *prometheus.GaugeVec
	binds     prometheus.Counter
	preempts  prometheus.Counter
	conflicts prometheus.Counter
	panics    prometheus.Counter
	submits   prometheus.Counter
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		cycle: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "allot_cycle_duration_seconds",
			Help:    "Time of one scheduling cycle: snapshot, plan and commit.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		jobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "allot_jobs",
			Help: "Jobs by state.",
		}, []string{"state"}),
		binds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "allot_binds_total",
			Help: "Jobs bound to GPUs by committed plans.",
		}),
		preempts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "allot_preemptions_total",
			Help: "Running jobs preempted by committed plans.",
		}),
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
	}
	reg.MustRegister(m.cycle, m.jobs, m.binds, m.preempts, m.conflicts, m.panics, m.submits,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, s := range []model.State{model.StateQueued, model.StatePreparing, model.StateRunning, model.StatePreempted,
		model.StateSucceeded, model.StateFailed, model.StateCanceled, model.StateTimedOut} {
		m.jobs.WithLabelValues(string(s)).Set(0)
	}
	return m
}
