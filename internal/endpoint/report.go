package endpoint

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/autoscale"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/refusal"
)

// Metrics of endpoints: each replica's latest report, kept in memory (a
// restart forgets them; replicas report again within their interval), and
// per endpoint a window of the samples the reconciles made of them.

// Report is what one replica measured over its last report interval (the
// body of POST /v1/endpoints/{name}/metrics).
type Report struct {
	RequestsPerSec float64 // requests that arrived, per second
	P95Ms          float64 // p95 latency of the requests completed, ms
	Utilisation    float64 // busy share of the replica's capacity, 0 to 1
	// Replica names the reporter: "JOB.ATTEMPT" for a replica job (what
	// allot demo serve sends), any name for another reporter.
	Replica string
	// Port is the TCP port the replica serves on, on its node's address;
	// 0 when it does not say. A gateway routes to a replica only once it
	// has said (routes.go).
	Port int
}

// Bounds of reports and of what is kept of them.
const (
	maxReportRate    = 1e9 // requests per second
	maxReportP95     = 1e7 // ms
	maxReplicaName   = 253
	reportFresh      = time.Minute      // a report older than this no longer counts
	minWindow        = 15 * time.Minute // samples kept at least this long
	maxWindowSamples = 4096
	minSampleGap     = time.Second // reconciles closer than this replace the last sample
)

// replicaReport is the latest report of one reporter.
type replicaReport struct {
	at      time.Time
	r       Report
	job     string // the replica job it names, "" for another reporter
	attempt int    // the attempt of job it names
}

// Report records a report for endpoint name from c: its tenant, the
// administrator, or (own) the endpoint's own token, which sees no tenant;
// the server has checked that such a token is this endpoint's.
func (b *Book) Report(ctx context.Context, c Caller, own bool, name string, r Report) error {
	e, _, err := b.read(ctx, name)
	if err != nil {
		return err
	}
	if !own && !c.Sees(e.Spec.Tenant) {
		return refusal.New(refusal.Forbidden, "", "endpoint %q belongs to another tenant", name)
	}
	if err := r.validate(); err != nil {
		return err
	}
	job, attempt := "", 0
	if id, n, _ := strings.Cut(r.Replica, "."); id != "" {
		if j, found := b.host.Job(id); found && isReplica(e, j) {
			job = id
			attempt, _ = strconv.Atoi(n)
		}
	}
	key := r.Replica
	if job != "" {
		key = job // the latest attempt's report replaces the earlier ones'
	}
	b.record(name, key, replicaReport{at: b.host.Now(), r: r, job: job, attempt: attempt}, 2*e.Spec.MaxReplicas+16)
	return nil
}

func (r Report) validate() error {
	for _, f := range []struct {
		field    string
		v, limit float64
	}{{"requests_per_sec", r.RequestsPerSec, maxReportRate}, {"p95_ms", r.P95Ms, maxReportP95}, {"utilisation", r.Utilisation, 1}} {
		if !(f.v >= 0 && f.v <= f.limit) {
			return refusal.New(refusal.InvalidSpec, f.field, "must be a number between 0 and %g, got %g", f.limit, f.v)
		}
	}
	if r.Port < 0 || r.Port > 65535 {
		return refusal.New(refusal.InvalidSpec, "port", "must be a TCP port, 1 to 65535 (or 0: not said), got %d", r.Port)
	}
	if len(r.Replica) > maxReplicaName {
		return refusal.New(refusal.InvalidSpec, "replica", "must be at most %d bytes", maxReplicaName)
	}
	if err := model.Printable("replica", r.Replica); err != nil {
		return refusal.FromField(err)
	}
	return nil
}

// record keeps rep as the latest report of key for endpoint name; past
// limit reporters, the one heard from longest ago is forgotten.
func (b *Book) record(name, key string, rep replicaReport, limit int) {
	b.metricsMu.Lock()
	defer b.metricsMu.Unlock()
	rs := b.reports[name]
	if rs == nil {
		rs = map[string]replicaReport{}
		b.reports[name] = rs
	}
	if old, ok := rs[key]; !ok || old.r.Port != rep.r.Port || old.attempt != rep.attempt {
		b.changedRoutes()
	}
	rs[key] = rep
	for len(rs) > limit {
		oldest := ""
		for k, r := range rs {
			if oldest == "" || r.at.Before(rs[oldest].at) {
				oldest = k
			}
		}
		delete(rs, oldest)
	}
}

// reportedSince reports whether replica job of endpoint name reported at or
// after t.
func (b *Book) reportedSince(name, job string, t time.Time) bool {
	b.metricsMu.Lock()
	defer b.metricsMu.Unlock()
	r, ok := b.reports[name][job]
	return ok && !r.at.Before(t)
}

// sample aggregates the fresh reports of endpoint name into one Sample at
// now (the sum of the rates, the worst p95, the mean utilisation), appends
// it to the endpoint's window, drops samples older than keep, and returns
// the window. Reports of replicas in ended are dropped: their load has
// moved to the others.
func (b *Book) sample(name string, ended []*model.Job, now time.Time, keep time.Duration) []autoscale.Sample {
	b.metricsMu.Lock()
	defer b.metricsMu.Unlock()
	rs := b.reports[name]
	for _, j := range ended {
		delete(rs, j.ID)
	}
	var sm autoscale.Sample
	for k, r := range rs {
		if now.Sub(r.at) > reportFresh || r.at.After(now) {
			if now.Sub(r.at) > 2*reportFresh {
				delete(rs, k)
			}
			continue
		}
		sm.RequestsPerSec += r.r.RequestsPerSec
		sm.P95Ms = math.Max(sm.P95Ms, r.r.P95Ms)
		sm.Utilisation += r.r.Utilisation
		sm.Replicas++
	}
	if sm.Replicas > 0 {
		sm.Utilisation /= float64(sm.Replicas)
	}
	// The gateways' measurement is the primary signal: what callers saw,
	// queueing at the replica and the network included, over a window
	// (gatewayWindow) that a burst of a second does not fill. The
	// replicas' own reports stay an extra one: their utilisation, their
	// p95 while the gateways measured no request, and their rate when the
	// gateways carried less than half of it over the same window: most
	// callers then reach the replicas directly. (Taking the larger rate
	// always, or comparing with the replicas' latest reports of two
	// seconds, bursty under a traced load, scaled an endpoint that needed
	// 4 replicas to 8.)
	b.forgetReplicas(name, ended)
	if rate, p95, p50, ready, ok := b.gatewaySample(name, now); ok {
		if rate >= b.gateways[name].replicaRate(now, sm.RequestsPerSec)/2 {
			sm.RequestsPerSec = rate
		}
		if p95 > 0 {
			sm.P95Ms, sm.P50Ms = p95, p50
		}
		sm.Replicas = max(sm.Replicas, ready)
	}
	w := b.windows[name]
	if sm.Replicas > 0 {
		sm.At = now
		if n := len(w); n > 0 && now.Sub(w[n-1].At) < minSampleGap {
			w[n-1] = sm
		} else {
			w = append(w, sm)
		}
	}
	drop := 0
	for drop < len(w) && (now.Sub(w[drop].At) > keep || len(w)-drop > maxWindowSamples) {
		drop++
	}
	w = w[drop:]
	b.windows[name] = w
	return append([]autoscale.Sample(nil), w...)
}

// setDecision keeps the reason of the latest decision for endpoint name.
func (b *Book) setDecision(name, reason string) {
	b.metricsMu.Lock()
	defer b.metricsMu.Unlock()
	b.latest[name] = reason
}

// last returns the newest sample and decision reason of endpoint name.
func (b *Book) last(name string) (*autoscale.Sample, string) {
	b.metricsMu.Lock()
	defer b.metricsMu.Unlock()
	var out *autoscale.Sample
	if w := b.windows[name]; len(w) > 0 {
		s := w[len(w)-1]
		out = &s
	}
	return out, b.latest[name]
}

// windowKeep is how long the samples of an endpoint with params p are kept.
func windowKeep(p autoscale.Params) time.Duration {
	return max(minWindow, p.PeakWindow, p.TrendWindow)
}
