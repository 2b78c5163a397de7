package autoscale

import (
	"math"

	"github.com/allot-dev/allot/internal/model"
)

// PredictP95 is the queueing model's p95 latency, in seconds, of the
// serving replicas of spec's endpoint at an arrival rate of load
// requests/s (queue.go): +Inf without a replica or at or beyond their
// capacity. The simulator uses it as the latency the endpoint's users
// see, so the autoscaler is judged by the model it plans with.
func PredictP95(spec model.EndpointSpec, serving []Replica, load float64) float64 {
	fl, ok := newFleet(spec.Throughput, spec.Resources.GPUModels, serving, spec.SLO.P95.Seconds(), spec.ServiceTime.Seconds(), 1)
	if !ok || len(serving) == 0 {
		return math.Inf(1)
	}
	if load <= 0 {
		load = 0
	}
	return fl.p95(len(serving), load)
}

// Capacity is the requests/s the serving replicas sustain before their
// queues grow without bound (Σμ of the model).
func Capacity(spec model.EndpointSpec, serving []Replica) float64 {
	fl, ok := newFleet(spec.Throughput, spec.Resources.GPUModels, serving, spec.SLO.P95.Seconds(), spec.ServiceTime.Seconds(), 1)
	if !ok {
		return 0
	}
	return fl.capacity(len(serving))
}

// ForEndpoint returns the parameters Decide uses for spec: DefaultParams
// with the endpoint's own autoscale tuning.
func ForEndpoint(spec model.EndpointSpec) Params {
	p, a := DefaultParams, spec.Autoscale
	if a.ScaleInAfter > 0 {
		p.Stabilisation = a.ScaleInAfter
	}
	if a.ScaleInInterval > 0 {
		p.ScaleInInterval = a.ScaleInInterval
	}
	if a.LeadTime > 0 {
		p.LeadTime = a.LeadTime
	}
	if a.PeakWindow > 0 {
		p.PeakWindow = a.PeakWindow
	}
	return p
}
