package gateway

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the gateway's Prometheus series, served at /-/metrics: per
// endpoint and replica the requests, errors and requests in flight; per
// endpoint the latency of whole requests and to the first byte, and the
// requests refused before any replica was asked (by status).
type metrics struct {
	reg                *prometheus.Registry
	requests, errors   *prometheus.CounterVec
	inFlight           *prometheus.GaugeVec
	latency, firstByte *prometheus.HistogramVec
	refusedVec         *prometheus.CounterVec
}

// replicaMetrics are one replica's series, looked up once, when the
// replica is first routed, so that a request costs no label lookup.
type replicaMetrics struct {
	requests, errors   prometheus.Counter
	inFlight           prometheus.Gauge
	latency, firstByte prometheus.Observer
}

// latencyBuckets span a fraction of a millisecond to a minute.
var latencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 18)

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "allot_gateway_requests_total",
			Help: "Requests the gateway completed to a replica (answered or failed)."}, []string{"endpoint", "replica"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "allot_gateway_errors_total",
			Help: "Requests to a replica that failed: no connection, a 5xx, an answer that was not HTTP, a body cut short."}, []string{"endpoint", "replica"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "allot_gateway_in_flight",
			Help: "Requests in flight on a replica."}, []string{"endpoint", "replica"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "allot_gateway_request_duration_seconds",
			Help: "Latency of whole requests through the gateway, to the last byte of the answer.", Buckets: latencyBuckets}, []string{"endpoint"}),
		firstByte: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "allot_gateway_first_byte_seconds",
			Help: "Latency of requests through the gateway to the answer's headers.", Buckets: latencyBuckets}, []string{"endpoint"}),
		refusedVec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "allot_gateway_refused_total",
			Help: "Requests the gateway answered itself: unknown endpoint (404), no token (401), body too large (413), no ready replica (503), a replica's failure (502)."},
			[]string{"endpoint", "code"}),
	}
	m.reg.MustRegister(m.requests, m.errors, m.inFlight, m.latency, m.firstByte, m.refusedVec)
	return m
}

func (m *metrics) replica(endpoint, job string) replicaMetrics {
	return replicaMetrics{requests: m.requests.WithLabelValues(endpoint, job), errors: m.errors.WithLabelValues(endpoint, job),
		inFlight: m.inFlight.WithLabelValues(endpoint, job), latency: m.latency.WithLabelValues(endpoint),
		firstByte: m.firstByte.WithLabelValues(endpoint)}
}

// forget drops the series of a replica the gateway no longer knows.
func (m *metrics) forget(endpoint, job string) {
	m.requests.DeleteLabelValues(endpoint, job)
	m.errors.DeleteLabelValues(endpoint, job)
	m.inFlight.DeleteLabelValues(endpoint, job)
}

func (m *metrics) refused(endpoint string, status int) {
	m.refusedVec.WithLabelValues(endpoint, strconv.Itoa(status)).Inc()
}

func (m *metrics) serve(w http.ResponseWriter, r *http.Request) {
	promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}
