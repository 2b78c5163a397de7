package endpoint

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/latency"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/refusal"
)

// What gateways measured (internal/gateway): every gateway posts, every
// report interval, per endpoint and replica the requests it completed, the
// errors among them, the requests in flight, whether it routes to the
// replica and whether the replica passed its readiness check, and two
// latency histograms (time to first byte, whole request). The server keeps
// them in memory (a restart forgets them; gateways report again within a
// second), merged across gateways into slots of time:
//
//   - per endpoint, slots of a second over the last minute: the requests/s
//     and the p50/p95/p99 that endpoint show prints and the autoscaler's
//     sample takes (the last gatewayWindow of them: the gateway's
//     measurement is the autoscaler's primary signal, the replicas' own
//     reports an extra one, report.go);
//   - per replica, slots of ten seconds over the last minute, and each
//     gateway's latest word on it (in flight, routed, ready), which the
//     drain of a replica waits for (drain.go).

// Bounds of gateway reports and of what is kept of them.
const (
	gatewayWindow      = 10 * time.Second // the autoscaler's sample spans this much of the gateways' measurement
	gatewayMinute      = time.Minute      // what endpoint show reports over
	gatewaySeen        = 10 * time.Second // a gateway silent longer than this is not waited for
	maxGatewayName     = 253
	maxGatewayReplicas = 4 * model.MaxReplicas // per endpoint in one report
	maxGatewayEntries  = 10_000                // endpoints in one report
	maxGatewayInFlight = 1 << 30
)

// GatewayReport is what one gateway measured over its last interval (the
// body of POST /v1/gateway/reports).
type GatewayReport struct {
	Gateway   string // the gateway's name: several gateways run at once
	Endpoints []GatewayEndpointReport
}

// GatewayEndpointReport is one endpoint in a GatewayReport.
type GatewayEndpointReport struct {
	Endpoint string
	Replicas []GatewayReplicaReport
}

// GatewayReplicaReport is one replica in a GatewayReport.
type GatewayReplicaReport struct {
	Job string
	// Requests completed in the interval and Errors among them (a failed
	// connection, a 5xx, an answer that was not HTTP).
	Requests, Errors uint64
	InFlight         int
	// Routed: the gateway sends the replica new requests; Ready: it passed
	// its readiness check.
	Routed, Ready bool
	// Latency of the whole request and FirstByte until the response's
	// headers; each holds Requests latencies at most.
	Latency, FirstByte latency.Histogram
}

// slot is what gateways measured in one span of time.
type slot struct {
	start            time.Time
	requests, errors uint64
	lat, ttfb        latency.Histogram
}

// ring is slots of width over the last gatewayMinute (and one more, so
// that the minute before the current slot is whole).
type ring struct {
	width time.Duration
	slots []slot
	upTo  time.Time // the end of the latest report's interval
	since time.Time // the start of the first report's (its arrival when it was a gateway's first)
}

func newRing(width time.Duration) *ring {
	return &ring{width: width, slots: make([]slot, int(gatewayMinute/width)+1)}
}

func (r *ring) slot(at time.Time) *slot {
	start := at.Truncate(r.width)
	s := &r.slots[int(start.UnixNano()/int64(r.width))%len(r.slots)]
	if !s.start.Equal(start) {
		*s = slot{start: start}
	}
	return s
}

// add counts rep, what a gateway measured from from until at: its
// requests and errors spread over the slots of that interval in
// proportion to each slot's share of it, its latencies in the interval's
// last slot. (A report counted whole at its arrival made a rate over the
// slots since a window's start count the interval before that start too:
// a gateway whose reports came 5 s apart read 150 req/s of 90.)
func (r *ring) add(from, at time.Time, rep *GatewayReplicaReport) {
	if at.After(r.upTo) {
		r.upTo = at
	}
	if r.since.IsZero() {
		r.since = from
	}
	last := r.slot(at.Add(-1)) // the slot the interval ends in
	last.lat.Merge(&rep.Latency)
	last.ttfb.Merge(&rep.FirstByte)
	span := at.Sub(from)
	if span <= 0 {
		last.requests += rep.Requests
		last.errors += rep.Errors
		return
	}
	// Slot by slot from the interval's start, each gets the rounded
	// cumulative share less what the slots before it got, so the slots
	// add up to the report exactly.
	var gotReq, gotErr uint64
	for start := from.Truncate(r.width); !start.After(at); start = start.Add(r.width) {
		end := start.Add(r.width)
		if end.After(at) {
			end = at
		}
		share := float64(end.Sub(from)) / float64(span)
		if !end.Before(at) {
			share = 1
		}
		req := uint64(math.Round(share * float64(rep.Requests)))
		errs := uint64(math.Round(share * float64(rep.Errors)))
		s := r.slot(start)
		s.requests += req - gotReq
		s.errors += errs - gotErr
		gotReq, gotErr = req, errs
		if share == 1 {
			break
		}
	}
}

// sum merges the slots of the span that ends where the latest report's
// interval ended (so a rate over them is not diluted by the seconds a
// report has yet to cover; at now once no report came for gatewaySeen)
// and returns them with the time they cover: from the first whole slot
// in the span, or from the first report when it came later (a rate over
// a minute is not diluted by the minute before the first gateway
// reported), and at least a slot.
func (r *ring) sum(now time.Time, span time.Duration) (slot, time.Duration) {
	var out slot
	end := now
	if r.upTo.Before(now) && now.Sub(r.upTo) <= gatewaySeen {
		end = r.upTo
	}
	from := end.Add(-span)
	first := end
	for i := range r.slots {
		s := &r.slots[i]
		if s.start.Before(from) || !s.start.Before(end) {
			continue
		}
		if s.start.Before(first) {
			first = s.start
		}
		out.requests += s.requests
		out.errors += s.errors
		out.lat.Merge(&s.lat)
		out.ttfb.Merge(&s.ttfb)
	}
	if first.Before(r.since) {
		first = r.since
	}
	return out, max(end.Sub(first), r.width)
}

// replicaWord is one gateway's latest word on one replica.
type replicaWord struct {
	at             time.Time
	inFlight       int
	routed, ready  bool
	requests, errs uint64
}

// gatewayBook is what gateways measured of one endpoint.
type gatewayBook struct {
	endpoint *ring                             // slots of a second
	replicas map[string]*ring                  // job -> slots of ten seconds
	words    map[string]map[string]replicaWord // job -> gateway -> latest word
	// reported is the rate the replicas' own reports added up to at each
	// sample over the last gatewayWindow, oldest first.
	reported []rateAt
}

type rateAt struct {
	at   time.Time
	rate float64
}

// replicaRate records that the replicas' own reports add up to rate at
// now and returns their mean over the last gatewayWindow: a rate to
// compare with the gateways' over the same window.
func (g *gatewayBook) replicaRate(now time.Time, rate float64) float64 {
	drop := 0
	for drop < len(g.reported) && now.Sub(g.reported[drop].at) >= gatewayWindow {
		drop++
	}
	g.reported = append(g.reported[drop:], rateAt{now, rate})
	sum := 0.0
	for _, r := range g.reported {
		sum += r.rate
	}
	return sum / float64(len(g.reported))
}

func newGatewayBook() *gatewayBook {
	return &gatewayBook{endpoint: newRing(time.Second), replicas: map[string]*ring{}, words: map[string]map[string]replicaWord{}}
}

// ReportGateway records what a gateway measured (the server lets only a
// gateway token or the administrator report). Reports of endpoints that
// do not exist and of jobs that are not their replicas are dropped, since
// a gateway's routes may be a moment older than the server's.
func (b *Book) ReportGateway(ctx context.Context, r GatewayReport) error {
	if err := r.validate(); err != nil {
		return err
	}
	now := b.host.Now()
	jobs := b.host.Replicas()
	known := b.known(ctx)
	b.metricsMu.Lock()
	defer b.metricsMu.Unlock()
	// The report holds what the gateway measured since its last one, or
	// since it started when this is its first (counted at now).
	from := now
	if prev, ok := b.gatewaysSeen[r.Gateway]; ok && prev.Before(now) {
		from = prev
		if cut := now.Add(-gatewaySeen); from.Before(cut) {
			from = cut
		}
	}
	b.gatewaysSeen[r.Gateway] = now
	for _, er := range r.Endpoints {
		e := known[er.Endpoint]
		if e == nil {
			continue
		}
		mine := map[string]bool{}
		for _, j := range jobs[er.Endpoint] {
			if isReplica(e, j) {
				mine[j.ID] = true
			}
		}
		g := b.gateways[er.Endpoint]
		if g == nil {
			g = newGatewayBook()
			b.gateways[er.Endpoint] = g
		}
		for i := range er.Replicas {
			rep := &er.Replicas[i]
			if !mine[rep.Job] {
				continue
			}
			g.endpoint.add(from, now, rep)
			rr := g.replicas[rep.Job]
			if rr == nil {
				rr = newRing(10 * time.Second)
				g.replicas[rep.Job] = rr
			}
			rr.add(from, now, rep)
			w := g.words[rep.Job]
			if w == nil {
				w = map[string]replicaWord{}
				g.words[rep.Job] = w
			}
			w[r.Gateway] = replicaWord{at: now, inFlight: rep.InFlight, routed: rep.Routed, ready: rep.Ready,
				requests: rep.Requests, errs: rep.Errors}
		}
	}
	return nil
}

// known returns the stored endpoints by name.
func (b *Book) known(ctx context.Context) map[string]*Endpoint {
	out := map[string]*Endpoint{}
	kvs, err := b.host.List(ctx)
	if err != nil {
		return out
	}
	for _, kv := range kvs {
		if e, err := decode(kv.Value); err == nil {
			out[e.Spec.Name] = e
		}
	}
	return out
}

func (r GatewayReport) validate() error {
	if r.Gateway == "" || len(r.Gateway) > maxGatewayName {
		return refusal.New(refusal.InvalidSpec, "gateway", "must name the gateway in 1 to %d printable bytes", maxGatewayName)
	}
	if err := model.Printable("gateway", r.Gateway); err != nil {
		return refusal.FromField(err)
	}
	if len(r.Endpoints) > maxGatewayEntries {
		return refusal.New(refusal.InvalidSpec, "endpoints", "holds %d endpoints, over %d", len(r.Endpoints), maxGatewayEntries)
	}
	for i, e := range r.Endpoints {
		field := fmt.Sprintf("endpoints[%d]", i)
		if !model.ValidName(e.Endpoint) {
			return refusal.New(refusal.InvalidSpec, field+".endpoint", "is not an endpoint name")
		}
		if len(e.Replicas) > maxGatewayReplicas {
			return refusal.New(refusal.InvalidSpec, field+".replicas", "holds %d replicas, over %d", len(e.Replicas), maxGatewayReplicas)
		}
		for k, rep := range e.Replicas {
			rf := fmt.Sprintf("%s.replicas[%d]", field, k)
			switch {
			case rep.Job == "" || len(rep.Job) > maxReplicaName:
				return refusal.New(refusal.InvalidSpec, rf+".job", "must name a job in 1 to %d bytes", maxReplicaName)
			case rep.Errors > rep.Requests:
				return refusal.New(refusal.InvalidSpec, rf+".errors", "%d errors among %d requests", rep.Errors, rep.Requests)
			case rep.InFlight < 0 || rep.InFlight > maxGatewayInFlight:
				return refusal.New(refusal.InvalidSpec, rf+".in_flight", "must be between 0 and %d, got %d", maxGatewayInFlight, rep.InFlight)
			case rep.Latency.Count() > rep.Requests || rep.FirstByte.Count() > rep.Requests:
				return refusal.New(refusal.InvalidSpec, rf+".latency", "holds more latencies than the %d requests", rep.Requests)
			}
		}
	}
	return nil
}

// GatewayMetrics is what the gateways measured of an endpoint over the
// last minute.
type GatewayMetrics struct {
	RequestsPerSec float64
	Errors         uint64
	ErrorsPerSec   float64
	InFlight       int
	// Latency of whole requests and FirstByte (until the headers): p50,
	// p95, p99; zero without requests.
	Latency, FirstByte Quantiles
	Replicas           []GatewayReplicaMetrics
}

// Quantiles are a latency distribution's p50, p95 and p99.
type Quantiles struct{ P50, P95, P99 time.Duration }

func quantiles(h *latency.Histogram) Quantiles {
	return Quantiles{P50: h.Quantile(0.50), P95: h.Quantile(0.95), P99: h.Quantile(0.99)}
}

// GatewayReplicaMetrics is one replica of GatewayMetrics.
type GatewayReplicaMetrics struct {
	Job            string
	RequestsPerSec float64
	Errors         uint64
	ErrorsPerSec   float64
	InFlight       int
	Routed, Ready  bool // by every gateway that reported it lately
	// Latency of whole requests and FirstByte: p50, p95, p99; zero
	// without requests.
	Latency, FirstByte Quantiles
	// Gateways is each gateway's latest word on the replica, of those
	// that reported it lately, by name.
	Gateways []GatewayWord
}

// GatewayWord is one gateway's latest word on a replica.
type GatewayWord struct {
	Gateway       string
	InFlight      int
	Routed, Ready bool
}

// gatewayMetrics returns the gateways' last minute of endpoint name; nil
// when no gateway reported it in that minute.
func (b *Book) gatewayMetrics(name string, now time.Time) *GatewayMetrics {
	b.metricsMu.Lock()
	defer b.metricsMu.Unlock()
	g := b.gateways[name]
	if g == nil {
		return nil
	}
	sum, span := g.endpoint.sum(now, gatewayMinute)
	out := &GatewayMetrics{RequestsPerSec: float64(sum.requests) / span.Seconds(), Errors: sum.errors,
		ErrorsPerSec: float64(sum.errors) / span.Seconds(), Latency: quantiles(&sum.lat), FirstByte: quantiles(&sum.ttfb)}
	heard := false
	for job, r := range g.replicas {
		rs, span := r.sum(now, gatewayMinute)
		m := GatewayReplicaMetrics{Job: job, RequestsPerSec: float64(rs.requests) / span.Seconds(), Errors: rs.errors,
			ErrorsPerSec: float64(rs.errors) / span.Seconds(), Latency: quantiles(&rs.lat),
			FirstByte: quantiles(&rs.ttfb), Routed: true, Ready: true}
		fresh := false
		for gw, w := range g.words[job] {
			if now.Sub(w.at) > gatewaySeen {
				continue
			}
			fresh, heard = true, true
			m.InFlight += w.inFlight
			m.Routed = m.Routed && w.routed
			m.Ready = m.Ready && w.ready
			m.Gateways = append(m.Gateways, GatewayWord{Gateway: gw, InFlight: w.inFlight, Routed: w.routed, Ready: w.ready})
		}
		slices.SortFunc(m.Gateways, func(a, b GatewayWord) int { return strings.Compare(a.Gateway, b.Gateway) })
		if !fresh {
			m.Routed, m.Ready = false, false
			if rs.requests == 0 {
				continue
			}
		}
		out.InFlight += m.InFlight
		out.Replicas = append(out.Replicas, m)
	}
	if !heard && sum.requests == 0 {
		return nil
	}
	slices.SortFunc(out.Replicas, func(a, b GatewayReplicaMetrics) int { return strings.Compare(a.Job, b.Job) })
	return out
}

// gatewaySample is the gateways' part of an autoscaler sample of endpoint
// name at now: the requests/s over the last gatewayWindow, their p95 and
// p50 in ms (0 without requests), and how many replicas the gateways
// found ready. ok is false when no gateway reported the endpoint lately.
func (b *Book) gatewaySample(name string, now time.Time) (rate, p95, p50 float64, ready int, ok bool) {
	g := b.gateways[name]
	if g == nil {
		return 0, 0, 0, 0, false
	}
	for _, words := range g.words {
		fresh, all := false, true
		for _, w := range words {
			if now.Sub(w.at) <= gatewaySeen {
				fresh, ok = true, true
				all = all && w.ready
			}
		}
		if fresh && all {
			ready++
		}
	}
	if !ok {
		return 0, 0, 0, 0, false
	}
	sum, span := g.endpoint.sum(now, gatewayWindow)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return float64(sum.requests) / span.Seconds(), ms(sum.lat.Quantile(0.95)), ms(sum.lat.Quantile(0.50)), ready, true
}

// gatewayReady reports whether a gateway that reported replica job of
// endpoint name lately found it ready.
func (b *Book) gatewayReady(name, job string, now time.Time) bool {
	b.metricsMu.Lock()
	defer b.metricsMu.Unlock()
	g := b.gateways[name]
	if g == nil {
		return false
	}
	for _, w := range g.words[job] {
		if now.Sub(w.at) <= gatewaySeen && w.ready {
			return true
		}
	}
	return false
}

// gatewayRoutes reports whether a gateway reported endpoint name lately.
func (b *Book) gatewayRoutes(name string, now time.Time) bool {
	b.metricsMu.Lock()
	defer b.metricsMu.Unlock()
	g := b.gateways[name]
	if g == nil {
		return false
	}
	for _, words := range g.words {
		for _, w := range words {
			if now.Sub(w.at) <= gatewaySeen {
				return true
			}
		}
	}
	return false
}

// forgetReplicas drops what gateways said of the replicas of endpoint
// name in ended.
func (b *Book) forgetReplicas(name string, ended []*model.Job) {
	g := b.gateways[name]
	if g == nil {
		return
	}
	for _, j := range ended {
		delete(g.replicas, j.ID)
		delete(g.words, j.ID)
	}
}
