package scenario

import (
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// An elastic run keeps free of growth what each endpoint's curve will ask
// for within the resize interval beyond the replicas it has, in the pool
// where most of them run; a falling curve keeps nothing.
func TestHeadroomFollowsTheCurve(t *testing.T) {
	peak := time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC) // a Monday; the curve peaks at 14:00
	ep := &endpointSim{
		gen:  EndpointGen{Load: Load{PeakRPS: 100, TroughRPS: 10, PeakHour: 14, Weekend: 1}},
		spec: model.EndpointSpec{Resources: model.Resources{GPUsPerInstance: 2}, Throughput: map[string]float64{"H100": 10}},
		load: 1,
	}
	on := func(node string) *model.Job {
		return &model.Job{Status: model.JobStatus{State: model.StateRunning, Allocations: []model.Allocation{{Node: node}}}}
	}
	ep.replicas = []*model.Job{on("e1"), on("e2"), on("w1"), {Status: model.JobStatus{State: model.StateQueued}}}
	r := &run{endpoints: []*endpointSim{ep}, nodePool: map[string][2]string{
		"e1": {"east", "H100"}, "e2": {"east", "H100"}, "w1": {"west", "H100"}}}

	// Ten minutes before the peak the curve rises to 100 req/s: 10 replicas,
	// 4 there (one queued): 6 more of 2 GPUs, in east.
	got := r.headroom(peak.Add(-10 * time.Minute))
	if want := []sched.Headroom{{Region: "east", GPUModel: "H100", GPUs: 12}}; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("before the peak: %+v, want %+v", got, want)
	}
	// At 02:00, the trough, 10 req/s: one replica, fewer than it has.
	if got := r.headroom(peak.Add(-12 * time.Hour)); len(got) != 0 {
		t.Fatalf("at the trough: %+v, want none", got)
	}
}
