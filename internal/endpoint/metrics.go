package endpoint

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the endpoints' series on the server's /metrics
// (docs/metrics.md lists each). Their endpoint label is bounded by the
// endpoints created: the series of an endpoint that is deleted go at the
// next reconcile. What the gateways measured is exported when Prometheus
// scrapes (gatewayCollector).
type metrics struct {
	p95      *prometheus.GaugeVec // by endpoint
	slo      *prometheus.GaugeVec
	replicas *prometheus.GaugeVec // by endpoint and kind (desired, live, ready)

	mu    sync.Mutex      // guards names
	names map[string]bool // endpoints with series, so that deleted ones lose theirs
}

func newMetrics(reg prometheus.Registerer, b *Book) *metrics {
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
	reg.MustRegister(m.p95, m.slo, m.replicas, gatewayCollector{b})
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

// Series of what the gateways measured over the last minute, per endpoint
// and per replica (job ID), and per gateway where each gateway has its own
// word (in flight, routed, ready).
var (
	gwRate = prometheus.NewDesc("allot_endpoint_gateway_requests_per_second",
		"Requests the gateways completed to the endpoint's replicas, per second over the last minute.", []string{"endpoint"}, nil)
	gwErrors = prometheus.NewDesc("allot_endpoint_gateway_errors_per_second",
		"Requests that failed at the gateways (no connection, a 5xx, an answer that was not HTTP), per second over the last minute.", []string{"endpoint"}, nil)
	gwInFlight = prometheus.NewDesc("allot_endpoint_gateway_in_flight",
		"Requests in flight to the endpoint's replicas, as the gateways last reported them.", []string{"endpoint"}, nil)
	gwLatency = prometheus.NewDesc("allot_endpoint_gateway_latency_seconds",
		"Latency of whole requests through the gateways over the last minute: p50, p95 and p99.", []string{"endpoint", "quantile"}, nil)
	gwFirstByte = prometheus.NewDesc("allot_endpoint_gateway_first_byte_seconds",
		"Latency to the answer's headers through the gateways over the last minute: p50, p95 and p99.", []string{"endpoint", "quantile"}, nil)
	repRate = prometheus.NewDesc("allot_endpoint_replica_gateway_requests_per_second",
		"Requests the gateways completed to the replica, per second over the last minute.", []string{"endpoint", "replica"}, nil)
	repErrors = prometheus.NewDesc("allot_endpoint_replica_gateway_errors_per_second",
		"Requests to the replica that failed at the gateways, per second over the last minute.", []string{"endpoint", "replica"}, nil)
	repLatency = prometheus.NewDesc("allot_endpoint_replica_gateway_latency_seconds",
		"Latency of whole requests to the replica through the gateways over the last minute: p50, p95 and p99.", []string{"endpoint", "replica", "quantile"}, nil)
	repFirstByte = prometheus.NewDesc("allot_endpoint_replica_gateway_first_byte_seconds",
		"Latency to the replica's answer's headers through the gateways over the last minute: p50, p95 and p99.", []string{"endpoint", "replica", "quantile"}, nil)
	repInFlight = prometheus.NewDesc("allot_endpoint_replica_gateway_in_flight",
		"Requests in flight to the replica at one gateway, as it last reported.", []string{"endpoint", "replica", "gateway"}, nil)
	repRouted = prometheus.NewDesc("allot_endpoint_replica_gateway_routed",
		"1 while the gateway sends the replica new requests, 0 once it took it out (a drain).", []string{"endpoint", "replica", "gateway"}, nil)
	repReady = prometheus.NewDesc("allot_endpoint_replica_gateway_ready",
		"1 while the replica passes the gateway's readiness check, else 0.", []string{"endpoint", "replica", "gateway"}, nil)
)

// gatewayCollector exports what the gateways measured (gatewayMetrics) at
// each scrape. Its labels stay bounded: endpoints that exist (the Book
// forgets the others), replicas that have not ended (Jobs.Job says so at
// the scrape, so an ended replica's series go at once), gateways heard
// from in the last gatewaySeen. A latency is exported only when one was
// measured in the minute.
type gatewayCollector struct{ b *Book }

func (gatewayCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{gwRate, gwErrors, gwInFlight, gwLatency, gwFirstByte,
		repRate, repErrors, repLatency, repFirstByte, repInFlight, repRouted, repReady} {
		ch <- d
	}
}

func (c gatewayCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.b
	now := b.host.Now()
	b.metricsMu.Lock()
	names := slices.Sorted(maps.Keys(b.gateways))
	b.metricsMu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	quantiles := func(d *prometheus.Desc, q Quantiles, labels ...string) {
		if q.P50 == 0 {
			return // no latency measured
		}
		for _, x := range []struct {
			name string
			v    time.Duration
		}{{"0.5", q.P50}, {"0.95", q.P95}, {"0.99", q.P99}} {
			gauge(d, x.v.Seconds(), append(labels, x.name)...)
		}
	}
	for _, name := range names {
		g := b.gatewayMetrics(name, now)
		if g == nil {
			continue
		}
		gauge(gwRate, g.RequestsPerSec, name)
		gauge(gwErrors, g.ErrorsPerSec, name)
		gauge(gwInFlight, float64(g.InFlight), name)
		quantiles(gwLatency, g.Latency, name)
		quantiles(gwFirstByte, g.FirstByte, name)
		for _, r := range g.Replicas {
			if j, ok := b.host.Job(r.Job); !ok || j.Status.State.Terminal() {
				continue
			}
			gauge(repRate, r.RequestsPerSec, name, r.Job)
			gauge(repErrors, r.ErrorsPerSec, name, r.Job)
			quantiles(repLatency, r.Latency, name, r.Job)
			quantiles(repFirstByte, r.FirstByte, name, r.Job)
			for _, w := range r.Gateways {
				gauge(repInFlight, float64(w.InFlight), name, r.Job, w.Gateway)
				gauge(repRouted, bit(w.Routed), name, r.Job, w.Gateway)
				gauge(repReady, bit(w.Ready), name, r.Job, w.Gateway)
			}
		}
	}
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
