package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/allot-dev/allot/internal/autoscale"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sim/engine"
)

// maxP95 caps a latency that grows without bound (no replica serving, or
// more requests than the replicas sustain), in seconds.
const maxP95 = 60.0

// endpointSim drives one endpoint as the server's reconcile does
// (internal/server/endpoint_reconcile.go): each minute the replicas'
// latency becomes a sample, the autoscaler decides, and replicas are
// submitted or stopped; the core places them like any other job.
type endpointSim struct {
	gen      EndpointGen
	spec     model.EndpointSpec
	params   autoscale.Params
	rng      *rand.Rand
	replicas []*model.Job // live, in creation order
	made     int
	window   []autoscale.Sample
	state    autoscale.State
	warm     time.Time // replicas started then serve at once

	// measured
	minutes, within int
	requests        float64 // requests served over the run
	peakReplicas    int
	worstP95        float64 // seconds
}

func newEndpointSim(e EndpointGen, seed int64, i int) *endpointSim {
	s := endpointSpec(e)
	return &endpointSim{gen: e, spec: s, params: autoscale.ForEndpoint(s), rng: rand.New(rand.NewPCG(uint64(seed), 1<<32+uint64(i)))}
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

// serving reports whether replica j serves at now: running, its model
// loaded.
func (ep *endpointSim) serving(j *model.Job, now time.Time) bool {
	if j.Status.State != model.StateRunning {
		return false
	}
	return j.Status.StartedAt.Equal(ep.warm) || !now.Before(j.Status.StartedAt.Add(time.Duration(ep.gen.Startup)))
}

// tick is one minute of the endpoint: measure, decide, act. It returns
// the p95 (seconds) the users saw.
func (ep *endpointSim) tick(e *engine.Engine, nodeModel map[string]string, now time.Time) (float64, error) {
	// Measure: the queueing model's p95 of the serving replicas at the
	// minute's arrival rate.
	rate := ep.gen.Curve.rate(now)
	if n := ep.gen.Curve.Noise; n > 0 {
		rate *= 1 + n*(2*ep.rng.Float64()-1)
	}
	var serving []autoscale.Replica
	view := make([]autoscale.Replica, len(ep.replicas))
	for i, j := range ep.replicas {
		gpu := ""
		if len(j.Status.Allocations) > 0 {
			gpu = nodeModel[j.Status.Allocations[0].Node]
		}
		view[i] = autoscale.Replica{GPUModel: gpu, Ready: ep.serving(j, now)}
		if view[i].Ready {
			serving = append(serving, view[i])
		}
	}
	p95 := min(autoscale.PredictP95(ep.spec, serving, rate), maxP95)
	util := 1.0
	if c := autoscale.Capacity(ep.spec, serving); c > 0 {
		util = min(rate/c, 1)
	}
	ep.minutes++
	if p95 <= ep.spec.SLO.P95.Seconds() {
		ep.within++
	}
	ep.requests += rate * 60
	ep.worstP95 = max(ep.worstP95, p95)
	ep.window = append(ep.window, autoscale.Sample{At: now, RequestsPerSec: rate, P95Ms: p95 * 1000, Utilisation: util, Replicas: len(serving)})
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
		p95 = maxP95
	}
	return p95, nil
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
