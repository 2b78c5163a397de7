package endpoint

import (
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/allot-dev/allot/internal/autoscale"
)

// Book is the server's endpoints: the operations on them, their reconcile
// loop, and what is kept of them in memory (reports, samples, what
// gateways measured, drains). Its records live in the server's store,
// reached through Host.
type Book struct {
	host Host
	cfg  Config
	log  *slog.Logger
	m    *metrics

	// mu serialises every change of endpoints and their replicas: create,
	// scale, update, delete and a whole reconcile. It is held across their
	// store commits and submits, so that a reconcile never counts replicas
	// while another change adds or removes some.
	mu   sync.Mutex
	kick chan struct{} // asks for a reconcile soon; buffered 1

	metricsMu sync.Mutex                          // guards the fields below
	reports   map[string]map[string]replicaReport // endpoint -> reporter -> latest report
	windows   map[string][]autoscale.Sample       // endpoint -> samples, oldest first
	latest    map[string]string                   // endpoint -> reason of the latest decision
	gateways  map[string]*gatewayBook             // endpoint -> what gateways measured (gateway.go)
	// gatewaysSeen is when each gateway last reported, by its name.
	gatewaysSeen map[string]time.Time
	// draining is, per endpoint, the replicas taken out of the routes to
	// be stopped once drained, and since when (drain.go).
	draining map[string]map[string]time.Time
	// routesChanged is closed (and replaced) when something gateways route
	// by changed outside the jobs: a replica's address, a drain.
	routesChanged chan struct{}
}

// New returns the endpoints of host, run as cfg says. Its series are
// registered on cfg.Registry (a new registry when nil).
func New(host Host, cfg Config) *Book {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	b := &Book{host: host, cfg: cfg, log: cfg.Log, kick: make(chan struct{}, 1), reports: map[string]map[string]replicaReport{},
		windows: map[string][]autoscale.Sample{}, latest: map[string]string{}, gateways: map[string]*gatewayBook{},
		gatewaysSeen: map[string]time.Time{}, draining: map[string]map[string]time.Time{}, routesChanged: make(chan struct{})}
	b.m = newMetrics(cfg.Registry, b)
	return b
}

// Kick asks for a reconcile soon.
func (b *Book) Kick() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// changedRoutes wakes the gateways' watches; metricsMu is held.
func (b *Book) changedRoutes() {
	close(b.routesChanged)
	b.routesChanged = make(chan struct{})
}

// forget drops everything kept of endpoint name.
func (b *Book) forget(name string) {
	b.metricsMu.Lock()
	defer b.metricsMu.Unlock()
	delete(b.reports, name)
	delete(b.windows, name)
	delete(b.latest, name)
	delete(b.gateways, name)
	delete(b.draining, name)
}

// forgetAllBut drops what is kept of endpoints not in names.
func (b *Book) forgetAllBut(names map[string]bool) {
	b.metricsMu.Lock()
	defer b.metricsMu.Unlock()
	for _, m := range []map[string]bool{keys(b.reports), keys(b.windows), keys(b.latest), keys(b.gateways), keys(b.draining)} {
		for n := range m {
			if !names[n] {
				delete(b.reports, n)
				delete(b.windows, n)
				delete(b.latest, n)
				delete(b.gateways, n)
				delete(b.draining, n)
			}
		}
	}
}

func keys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}
