package sched

import (
	"fmt"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Apply commits the plan to jobs held in memory, as the simulator and the
// offline planner do: bound jobs start running at now; preempted jobs go
// back to the queue without their allocations and with one more
// preemption counted. It fails, changing nothing, when the plan names a job
// that is not there or not in the state the plan expects.
func (p Plan) Apply(jobs []*model.Job, now time.Time) error {
	byID := make(map[string]*model.Job, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
	for _, pr := range p.Preemptions {
		if j, ok := byID[pr.Job]; !ok || !j.Status.State.Holds() {
			return fmt.Errorf("plan preempts %s, which holds nothing", pr.Job)
		}
	}
	for _, b := range p.Binds {
		if j, ok := byID[b.Job]; !ok || j.Status.State != model.StateQueued {
			return fmt.Errorf("plan binds %s, which is not queued", b.Job)
		}
	}
	for _, pr := range p.Preemptions {
		j := byID[pr.Job]
		j.Status.State = model.StateQueued
		j.Status.Allocations = nil
		j.Status.Preemptions++
	}
	for _, b := range p.Binds {
		j := byID[b.Job]
		j.Status.State = model.StateRunning
		j.Status.StartedAt = now
		j.Status.Allocations = make([]model.Allocation, len(b.Nodes))
		for i, n := range b.Nodes {
			j.Status.Allocations[i] = model.Allocation{Node: n.Node, GPUs: n.GPUs, GPUMilli: n.GPUMilli}
		}
	}
	return nil
}
