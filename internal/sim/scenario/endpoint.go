package scenario

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/autoscale"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sim/engine"
	"github.com/allot-dev/allot/internal/sim/serving"
	"github.com/allot-dev/allot/internal/trace/azurellm"
)

// maxP95 caps a latency that grows without bound (no replica serving, or
// requests dropped), in seconds, where a number must be printed.
const maxP95 = 60.0

// slaShare is the share of a minute's requests that must be within the
// SLO for the minute's p95 to be.
const slaShare = 0.95

// endpointSim drives one endpoint as the server's reconcile does
// (internal/endpoint/reconcile.go): each minute its requests are
// served by the world's model (package sim/serving) on the replicas
// serving then, the measured p95 becomes the autoscaler's sample, the
// autoscaler decides, and replicas are submitted or stopped; the core
// places them like any other job.
type endpointSim struct {
	gen     EndpointGen
	spec    model.EndpointSpec
	params  autoscale.Params
	rng     *rand.Rand // the minute's noise
	seed    uint64
	index   int
	load    float64
	start   time.Time
	slo     float64 // seconds
	pattern *azurellm.Pattern
	// capacity is a replica's requests/s at saturation per GPU model for
	// the trace's mean request: the router's weights.
	capacity map[string]float64
	profiles map[string]serving.Profile
	groups   map[string]*group
	replicas []*model.Job // live, in creation order
	made     int          // replicas made
	drawn    int          // groups made, for their streams' seeds
	window   []autoscale.Sample
	state    autoscale.State
	warm     time.Time // replicas started then serve at once
	// represented is how many requests a minute the representatives of a
	// GPU model must see together (RepresentedRequests; tests change it).
	represented float64
	hist        serving.Histogram
	// scratch of tick
	view, ready []autoscale.Replica
	count       map[string]int

	// measured
	minutes, within int
	requests        float64 // requests offered over the run
	missed          float64 // of them, not within the SLO (dropped included)
	peakReplicas    int
	worstP95        float64   // seconds
	p95Ms           []float64 // per minute; NaN without requests
	ratios          []float64 // the autoscaler's predicted p95 over the measured one, per minute both are finite
}

// group is the replicas of a GPU model whose requests the world serves
// (representatives): requests split between GPU models in proportion to
// capacity, the group receives its replicas' share of the endpoint's
// stream (bursts included) and routes it among them as the gateway does,
// to the one with the fewest in flight (serving.Router); each simulated
// request stands for as many as there are replicas of the model over the
// replicas simulated.
type group struct {
	replicas []*serving.Replica
	arrivals *serving.Arrivals
	router   serving.Router
}

// How many replicas of each GPU model the world serves requests on each
// minute: at least MinRepresentatives (all of them when there are fewer),
// and more until their requests of the minute number RepresentedRequests.
// A minute's p95 is taken over the simulated requests together, so it is
// as noisy as a p95 of that many requests: with four representatives an
// endpoint of 45 replicas at 9 req/s measured its p95 over 48 requests, not
// its 560, and missed minutes no replica count removes (the week's
// copilot-eu; BENCHMARKS.md, "The world measures a minute's p95 over
// enough requests").
const (
	MinRepresentatives  = 4
	RepresentedRequests = 500
)

// representatives is how many of the n replicas of a model whose share of
// the endpoint's requests is share (each) the world serves at rate.
func (ep *endpointSim) representatives(n int, rate, share float64) int {
	k := MinRepresentatives
	if perReplica := rate * share * 60; perReplica > 0 {
		k = max(k, int(min(math.Ceil(ep.represented/perReplica), float64(n))))
	}
	return min(n, k)
}

func (f *File) newEndpointSim(e EndpointGen, seed int64, i int, load float64, start time.Time) (*endpointSim, error) {
	s := endpointSpec(e)
	p, err := f.requestPattern(e.Load.Trace)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: endpoints[%d].load.trace: %w", f.Name, i, err)
	}
	ep := &endpointSim{gen: e, spec: s, params: autoscale.ForEndpoint(s), rng: rand.New(rand.NewPCG(uint64(seed), 1<<32+uint64(i))),
		seed: uint64(seed), index: i, load: load, start: start, slo: e.SLO.P95Ms / 1000, pattern: p,
		represented: RepresentedRequests, capacity: map[string]float64{}, profiles: map[string]serving.Profile{}, groups: map[string]*group{}}
	ctx, gen := p.MeanTokens()
	for _, m := range s.Resources.GPUModels {
		prof, err := serving.NewProfile(*e.Serving, m, s.Resources.GPUsPerInstance)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: endpoints[%d].serving: %w", f.Name, i, err)
		}
		ep.profiles[m] = prof
		ep.capacity[m] = prof.Capacity(ctx, gen)
	}
	return ep, nil
}

// requestPattern reads a request trace once per File, as a pattern with
// the rate taken out minute by minute.
func (f *File) requestPattern(name string) (*azurellm.Pattern, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.patterns[name]; ok {
		return p, nil
	}
	var reqs []azurellm.Request
	err := f.readTrace(name, func(r io.Reader, file string) (err error) {
		reqs, err = azurellm.ReadRequests(r, file)
		return err
	})
	if err != nil {
		return nil, err
	}
	p, err := azurellm.NewPattern(reqs, time.Minute)
	if err != nil {
		return nil, err
	}
	if f.patterns == nil {
		f.patterns = map[string]*azurellm.Pattern{}
	}
	f.patterns[name] = p
	return p, nil
}

// replicaJob is replica n of the endpoint, as the server's replicaSpec
// makes it.
func (ep *endpointSim) replicaJob() *model.Job {
	ep.made++
	sp := ep.spec
	return &model.Job{ID: fmt.Sprintf("ep-%s-%04d", sp.Name, ep.made), Spec: model.JobSpec{
		Name: sp.Name + "-replica", Tenant: sp.Tenant, Resources: sp.Resources, Priority: sp.Priority, Placement: sp.Placement,
		Labels: map[string]string{"endpoint": sp.Name, "workload": "inference"}}}
}

func (ep *endpointSim) add(e *engine.Engine, n int) error {
	for range n {
		j := ep.replicaJob()
		if err := e.Submit(j, engine.Forever); err != nil {
			return err
		}
		ep.replicas = append(ep.replicas, j)
	}
	return nil
}

// initial is the replica count the endpoint has when the run starts
// mid-stream: what the autoscaler asks for at the first minute's rate.
func (ep *endpointSim) initial(now time.Time) int {
	rate := ep.rate(now, false)
	view := make([]autoscale.Replica, ep.spec.MinReplicas)
	d, _ := ep.params.Decide(ep.spec, []autoscale.Sample{{At: now, RequestsPerSec: rate}}, view, now, autoscale.State{})
	return max(d.Desired, ep.spec.MinReplicas)
}

// rate is the minute's request rate at now: the curve times the load,
// with the minute's noise when noisy.
func (ep *endpointSim) rate(now time.Time, noisy bool) float64 {
	r := ep.gen.Load.rate(now) * ep.load
	if n := ep.gen.Load.Noise; n > 0 && noisy {
		r *= 1 + n*(2*ep.rng.Float64()-1)
	}
	return r
}

// serving reports whether replica j serves at now: running, its model
// loaded.
func (ep *endpointSim) serving(j *model.Job, now time.Time) bool {
	if j.Status.State != model.StateRunning {
		return false
	}
	return j.Status.StartedAt.Equal(ep.warm) || !now.Before(j.Status.StartedAt.Add(time.Duration(ep.gen.Startup)))
}

// tick is the minute that ends at now: serve, measure, decide, act. It
// returns the p95 (seconds) the users saw, capped at maxP95.
func (ep *endpointSim) tick(e *engine.Engine, nodeModel map[string]string, now time.Time) (float64, error) {
	rate := ep.rate(now, true)
	// The minute's lists and counts are kept for the next minute's: the
	// autoscaler reads them during the tick only.
	view := slices.Grow(ep.view[:0], len(ep.replicas))[:len(ep.replicas)]
	serving := ep.ready[:0]
	if ep.count == nil {
		ep.count = map[string]int{}
	}
	count := ep.count
	clear(count)
	for i, j := range ep.replicas {
		gpu := ""
		if len(j.Status.Allocations) > 0 {
			gpu = nodeModel[j.Status.Allocations[0].Node]
		}
		view[i] = autoscale.Replica{GPUModel: gpu, Ready: ep.serving(j, now)}
		if view[i].Ready {
			serving = append(serving, view[i])
			count[gpu]++
		}
	}

	ep.view, ep.ready = view, serving

	// Serve the minute's requests.
	p95, within := ep.serve(rate, count, now)
	ep.minutes++
	if within {
		ep.within++
	}
	if !math.IsNaN(p95) {
		ep.worstP95 = max(ep.worstP95, min(p95, maxP95))
	}
	p95Ms := p95 * 1000
	if math.IsNaN(p95) {
		p95Ms = 0 // no request: nothing to report
	}
	ep.p95Ms = append(ep.p95Ms, p95*1000)
	pred := autoscale.PredictP95(ep.spec, serving, rate)
	if p95 > 0 && !math.IsInf(p95, 0) && !math.IsInf(pred, 0) && pred > 0 {
		ep.ratios = append(ep.ratios, pred/p95)
	}
	util := 1.0
	if c := autoscale.Capacity(ep.spec, serving); c > 0 {
		util = min(rate/c, 1)
	}
	ep.window = append(ep.window, autoscale.Sample{At: now, RequestsPerSec: rate, P95Ms: min(p95Ms, maxP95*1000), Utilisation: util, Replicas: len(serving)})
	for len(ep.window) > 0 && now.Sub(ep.window[0].At) > 15*time.Minute {
		ep.window = ep.window[1:]
	}

	// Decide.
	d, st := ep.params.Decide(ep.spec, ep.window, view, now, ep.state)
	ep.state = st

	// Act: submit up to the desired count, or stop the extras: queued
	// first, then those not serving, then the newest serving.
	switch {
	case len(ep.replicas) < d.Desired:
		if err := ep.add(e, d.Desired-len(ep.replicas)); err != nil {
			return 0, err
		}
	case len(ep.replicas) > d.Desired:
		ep.stop(e, len(ep.replicas)-d.Desired, now)
	}
	ep.peakReplicas = max(ep.peakReplicas, len(ep.replicas))
	if math.IsNaN(p95) {
		p95 = 0
	}
	return min(p95, maxP95), nil
}

// serve runs the requests of the minute ending at now, at rate
// requests/s, on count serving replicas per GPU model, and returns the
// minute's p95 of the SLO's metric (NaN without requests, +Inf when more
// than 5 % were dropped) and whether it was within the SLO.
func (ep *endpointSim) serve(rate float64, count map[string]int, now time.Time) (float64, bool) {
	to := now.Sub(ep.start).Seconds()
	from := to - 60
	models := make([]string, 0, len(count))
	for m := range count {
		models = append(models, m)
	}
	slices.Sort(models) // a fixed order of sums and draws, whatever the map's
	var weight float64  // Σ replicas × capacity
	for _, m := range models {
		weight += float64(count[m]) * ep.capacity[m]
	}
	for m, g := range ep.groups {
		if n := count[m]; n < len(g.replicas) {
			g.replicas = g.replicas[:n] // replicas went: their state with them
		}
	}
	ep.hist.Reset()
	var met float64
	offered := rate * 60
	ep.requests += offered
	if weight <= 0 {
		if offered > 0 {
			ep.missed += offered
			return math.Inf(1), false
		}
		return math.NaN(), true
	}
	ttft := ep.gen.SLO.Metric == MetricTTFT
	for _, m := range models {
		prof, ok := ep.profiles[m]
		if !ok {
			continue // a GPU model the endpoint does not allow: not placed there
		}
		share := ep.capacity[m] / weight // of the endpoint's requests, to each replica of m
		k := ep.representatives(count[m], rate, share)
		g := ep.groups[m]
		if g == nil {
			ep.drawn++
			rng := rand.New(rand.NewPCG(ep.seed, 1<<48+uint64(ep.index)<<24+uint64(ep.drawn)))
			g = &group{arrivals: serving.NewArrivals(ep.pattern, rng)}
			ep.groups[m] = g
		}
		for len(g.replicas) < k {
			g.replicas = append(g.replicas, serving.NewReplica(prof))
		}
		n := float64(count[m]) / float64(k) // requests each simulated one stands for
		reps := g.replicas[:k]
		g.arrivals.Span(from, to, rate, min(share*float64(k), 1), func(at float64, ctx, gen int) {
			o := g.router.Pick(reps, at).Serve(at, ctx, gen)
			v := o.Latency
			if ttft {
				v = o.TTFT
			}
			ep.hist.Add(v, n)
			if v <= ep.slo {
				met += n
			}
		})
	}
	total := ep.hist.Total()
	if total == 0 {
		return math.NaN(), true
	}
	// The simulated requests stand for the offered ones.
	ep.missed += offered * (1 - met/total)
	return ep.hist.Quantile(slaShare), met >= slaShare*total
}

func (ep *endpointSim) stop(e *engine.Engine, n int, now time.Time) {
	rank := func(j *model.Job) int {
		switch {
		case j.Status.State == model.StateQueued:
			return 0
		case !ep.serving(j, now):
			return 1
		}
		return 2
	}
	for ; n > 0; n-- {
		pick := -1
		for i := len(ep.replicas) - 1; i >= 0; i-- { // newest first among equals
			if pick < 0 || rank(ep.replicas[i]) < rank(ep.replicas[pick]) {
				pick = i
			}
		}
		e.Stop(ep.replicas[pick].ID)
		ep.replicas = append(ep.replicas[:pick], ep.replicas[pick+1:]...)
	}
}

// RequestPattern is the pattern of request trace name as endpoints of f
// replay it (the trace's gaps normalised minute by minute).
func (f *File) RequestPattern(name string) (*azurellm.Pattern, error) { return f.requestPattern(name) }
