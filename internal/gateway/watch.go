package gateway

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
)

// probeEvery is how often replicas not ready are checked.
const probeEvery = 100 * time.Millisecond

// Run watches the routes, checks the readiness of new replicas and reports
// the measurements until ctx ends.
func (g *Gateway) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); g.probeLoop(ctx) }()
	go func() { defer wg.Done(); g.reportLoop(ctx) }()
	g.watch(ctx)
	wg.Wait()
	return nil
}

// watch long-polls the route table and applies each new version.
func (g *Gateway) watch(ctx context.Context) {
	version := ""
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		t, err := g.cfg.Source.Routes(ctx, version, g.cfg.Wait)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			g.log.Warn("gateway: watch routes", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if t.Version != version || g.table.Load() == nil {
			g.Apply(t)
			version = t.Version
		}
	}
}

// Apply makes t the gateway's routes. A replica whose job and address
// stay keeps its state (ready, in flight); a new one waits for its
// readiness check; one no longer listed gets no new request and is
// reported until its last request in flight ends.
func (g *Gateway) Apply(t wire.RouteTable) {
	next := &table{version: t.Version, endpoints: make(map[string]*endpoint, len(t.Routes))}
	g.mu.Lock()
	listed := map[string]bool{}
	for _, rt := range t.Routes {
		ep := &endpoint{name: rt.Endpoint, public: rt.Access == "public", readiness: rt.Readiness,
			callers: make(map[string]bool, len(rt.Callers))}
		for _, c := range rt.Callers {
			ep.callers[strings.ToLower(c)] = true
		}
		for _, rr := range rt.Replicas {
			r := g.all[rr.Job]
			if r == nil || r.addr != rr.Address || r.endpoint != rt.Endpoint {
				r = &replica{endpoint: rt.Endpoint, job: rr.Job, addr: rr.Address, m: g.metrics.replica(rt.Endpoint, rr.Job)}
				g.all[rr.Job] = r
			}
			r.routed.Store(true)
			listed[rr.Job] = true
			ep.replicas = append(ep.replicas, r)
		}
		next.endpoints[rt.Endpoint] = ep
	}
	for job, r := range g.all {
		if !listed[job] {
			r.routed.Store(false)
		}
	}
	g.table.Store(next)
	g.mu.Unlock()
	g.log.Info("gateway: routes", "version", t.Version, "endpoints", len(t.Routes))
}

// probeLoop checks the readiness of every listed replica that is not
// ready, each in its own goroutine, one check per replica at a time.
func (g *Gateway) probeLoop(ctx context.Context) {
	client := &http.Client{Transport: g.base, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t := g.table.Load()
		if t == nil {
			continue
		}
		now := time.Now().UnixNano()
		for _, ep := range t.endpoints {
			for _, r := range ep.replicas {
				if r.ready.Load() || r.downTill.Load() >= now || !r.probing.CompareAndSwap(false, true) {
					continue
				}
				go func() {
					defer r.probing.Store(false)
					if probe(ctx, client, r.addr, ep.readiness) {
						r.ready.Store(true)
						g.log.Info("gateway: replica ready", "endpoint", r.endpoint, "replica", r.job, "address", r.addr)
					}
				}()
			}
		}
	}
}

// probe reports whether the replica at addr passes the readiness check.
func probe(ctx context.Context, client *http.Client, addr string, rd wire.Readiness) bool {
	timeout := time.Duration(rd.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	path := rd.Path
	if path == "" {
		path = "/healthz"
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode/100 == 2
}

// reportLoop posts the measurements every ReportEvery.
func (g *Gateway) reportLoop(ctx context.Context) {
	tick := time.NewTicker(g.cfg.ReportEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rep, taken := g.report()
		rctx, cancel := context.WithTimeout(ctx, max(g.cfg.ReportEvery, 2*time.Second))
		if err := g.cfg.Source.ReportGateway(rctx, rep); err != nil && ctx.Err() == nil {
			g.log.Warn("gateway: report", "err", err)
			// The next report carries what this one lost: the server
			// counts a report over the time since the last it received.
			g.giveBack(taken)
		}
		cancel()
	}
}

// Report returns what the gateway measured since the last Report, for
// every replica it routes to or still has requests in flight on, and
// forgets the replicas it neither routes to nor waits for.
func (g *Gateway) Report() wire.GatewayReport {
	rep, _ := g.report()
	return rep
}

// report is Report with the counts it took from each replica, which
// giveBack returns when the report did not reach the server.
func (g *Gateway) report() (wire.GatewayReport, map[*replica]interval) {
	g.mu.Lock()
	byEndpoint := map[string][]wire.GatewayReplicaReport{}
	taken := make(map[*replica]interval, len(g.all))
	for job, r := range g.all {
		s := r.take()
		taken[r] = s
		routed, inFlight := r.routed.Load(), int(r.inFlight.Load())
		byEndpoint[r.endpoint] = append(byEndpoint[r.endpoint], wire.GatewayReplicaReport{Job: job, Requests: s.requests, Errors: s.errors,
			InFlight: inFlight, Routed: routed, Ready: r.ready.Load(), Latency: s.lat.Sparse(), FirstByte: s.ttfb.Sparse()})
		if !routed && inFlight == 0 {
			delete(g.all, job) // this report says it is drained
			g.metrics.forget(r.endpoint, job)
		}
	}
	g.mu.Unlock()
	out := wire.GatewayReport{Gateway: g.cfg.Name, Endpoints: make([]wire.GatewayEndpointReport, 0, len(byEndpoint))}
	for name, reps := range byEndpoint {
		slices.SortFunc(reps, func(a, b wire.GatewayReplicaReport) int { return strings.Compare(a.Job, b.Job) })
		out.Endpoints = append(out.Endpoints, wire.GatewayEndpointReport{Endpoint: name, Replicas: reps})
	}
	slices.SortFunc(out.Endpoints, func(a, b wire.GatewayEndpointReport) int { return strings.Compare(a.Endpoint, b.Endpoint) })
	return out, taken
}

// giveBack returns counts a report took to the replicas they came from,
// those the gateway still keeps, for the next report to carry.
func (g *Gateway) giveBack(taken map[*replica]interval) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for r, iv := range taken {
		if g.all[r.job] != r {
			continue
		}
		r.mu.Lock()
		r.stats.requests += iv.requests
		r.stats.errors += iv.errors
		r.stats.lat.Merge(&iv.lat)
		r.stats.ttfb.Merge(&iv.ttfb)
		r.mu.Unlock()
	}
}
