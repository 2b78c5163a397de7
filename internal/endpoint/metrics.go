package endpoint

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the endpoints' series on the server's /metrics
// (docs/metrics.md lists each). Their endpoint label is bounded by the
// endpoints created: the series of an endpoint that is deleted go at the
// next reconcile.
type metrics struct {
	p95      *prometheus.GaugeVec // by endpoint
	slo      *prometheus.GaugeVec
	replicas *prometheus.GaugeVec // by endpoint and kind (desired, live, ready)

	mu    sync.Mutex      // guards names
	names map[string]bool // endpoints with series, so that deleted ones lose theirs
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		p95: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "allot_endpoint_p95_latency_seconds",
			Help: "p95 request latency of the autoscaler's last sample: the gateways' over the last 10 s, else the worst the replicas reported in the last minute.",
		}, []string{"endpoint"}),
		slo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "allot_endpoint_slo_p95_seconds",
			Help: "The endpoint's p95 latency objective.",
		}, []string{"endpoint"}),
		replicas: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "allot_endpoint_replicas",
			Help: "The endpoint's replicas: desired by the autoscaler, live (not ended) and ready (running).",
		}, []string{"endpoint", "kind"}),
		names: map[string]bool{},
	}
	reg.MustRegister(m.p95, m.slo, m.replicas)
	return m
}

// view is what one reconcile measured of an endpoint.
type view struct {
	p95                  time.Duration // 0: no fresh report
	slo                  time.Duration
	desired, live, ready int
}

// endpoint sets the series of endpoint name.
func (m *metrics) endpoint(name string, v view) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.names[name] = true
	if v.p95 > 0 {
		m.p95.WithLabelValues(name).Set(v.p95.Seconds())
	} else {
		m.p95.DeleteLabelValues(name)
	}
	m.slo.WithLabelValues(name).Set(v.slo.Seconds())
	m.replicas.WithLabelValues(name, "desired").Set(float64(v.desired))
	m.replicas.WithLabelValues(name, "live").Set(float64(v.live))
	m.replicas.WithLabelValues(name, "ready").Set(float64(v.ready))
}

// keep drops the series of endpoints not in names.
func (m *metrics) keep(names map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for n := range m.names {
		if !names[n] {
			m.p95.DeleteLabelValues(n)
			m.slo.DeleteLabelValues(n)
			m.replicas.DeletePartialMatch(prometheus.Labels{"endpoint": n})
			delete(m.names, n)
		}
	}
}
