package sched

import (
	"fmt"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Apply commits the plan to jobs held in memory, as the simulator and the
// offline planner do: bound jobs start running at now, a new attempt on
// their nodes; preempted jobs go back to the queue without their
// allocations, their attempt ended at now, and with one more preemption
// counted; resized jobs keep running with their new allocations, their
// attempt ended ("Resized") and the next started at now. Attempts are recorded as the server records them, since a
// queued job's wait runs from the end of its last one (WaitingSince); the
// slice is replaced, never written in place, so a shallow copy of a job
// keeps its own. It fails, changing nothing, when the plan names a job
// that is not there or not in the state the plan expects.
func (p Plan) Apply(jobs []*model.Job, now time.Time) error {
	if len(p.Preemptions) == 0 && len(p.Binds) == 0 && len(p.Resizes) == 0 {
		return nil
	}
	// Index only the jobs the plan names: most cycles change few of many.
	byID := make(map[string]*model.Job, len(p.Preemptions)+len(p.Binds))
	for _, pr := range p.Preemptions {
		byID[pr.Job] = nil
	}
	for _, b := range p.Binds {
		byID[b.Job] = nil
	}
	for _, r := range p.Resizes {
		byID[r.Job] = nil
	}
	for _, j := range jobs {
		if _, named := byID[j.ID]; named {
			byID[j.ID] = j
		}
	}
	return p.ApplyTo(func(id string) *model.Job { return byID[id] }, now)
}

// ApplyTo is Apply to the jobs find returns by ID (nil for one it does
// not have), for a driver that keeps its jobs indexed and need not walk
// them all to commit a plan that names a few.
func (p Plan) ApplyTo(find func(id string) *model.Job, now time.Time) error {
	if len(p.Preemptions) == 0 && len(p.Binds) == 0 && len(p.Resizes) == 0 {
		return nil
	}
	byID := make(map[string]*model.Job, len(p.Preemptions)+len(p.Binds)+len(p.Resizes))
	for _, pr := range p.Preemptions {
		byID[pr.Job] = find(pr.Job)
	}
	for _, b := range p.Binds {
		byID[b.Job] = find(b.Job)
	}
	for _, r := range p.Resizes {
		byID[r.Job] = find(r.Job)
	}
	for _, pr := range p.Preemptions {
		if j := byID[pr.Job]; j == nil || !j.Status.State.Holds() {
			return fmt.Errorf("plan preempts %s, which holds nothing", pr.Job)
		}
	}
	for _, b := range p.Binds {
		if j := byID[b.Job]; j == nil || j.Status.State != model.StateQueued {
			return fmt.Errorf("plan binds %s, which is not queued", b.Job)
		}
	}
	for _, r := range p.Resizes {
		if j := byID[r.Job]; j == nil || j.Status.State != model.StateRunning || len(j.Status.Allocations) != r.From {
			return fmt.Errorf("plan resizes %s from %d instances, which is not running with them", r.Job, r.From)
		}
	}
	for _, pr := range p.Preemptions {
		j := byID[pr.Job]
		j.Status.State = model.StateQueued
		j.Status.Allocations = nil
		j.Status.Preemptions++
		if n := len(j.Status.Attempts); n > 0 && j.Status.Attempts[n-1].Ended.IsZero() {
			att := slices.Clone(j.Status.Attempts)
			att[n-1].Ended, att[n-1].Reason, att[n-1].Detail = now, "Preempted", "preempted for "+pr.For+" ("+pr.Reason.String()+"): "+pr.Detail
			j.Status.Attempts = att
		}
	}
	for _, b := range p.Binds {
		j := byID[b.Job]
		j.Status.State = model.StateRunning
		j.Status.StartedAt = now
		var nodes []string
		j.Status.Allocations, nodes = allocations(b.Nodes)
		j.Status.Attempts = append(slices.Clip(j.Status.Attempts),
			model.Attempt{Number: len(j.Status.Attempts) + 1, Nodes: nodes, Started: now})
	}
	for _, r := range p.Resizes {
		j := byID[r.Job]
		att := slices.Clone(j.Status.Attempts)
		if n := len(att); n > 0 && att[n-1].Ended.IsZero() {
			att[n-1].Ended, att[n-1].Reason, att[n-1].Detail = now, "Resized", r.Detail
		}
		j.Status.Resizes++
		j.Status.StartedAt = now
		var nodes []string
		j.Status.Allocations, nodes = allocations(r.Nodes)
		j.Status.Attempts = append(att, model.Attempt{Number: len(att) + 1, Nodes: nodes, Started: now})
	}
	return nil
}

// allocations is what a job holds once placed on ps, and the node of each
// instance, as its attempt records them.
func allocations(ps []Placement) ([]model.Allocation, []string) {
	allocs := make([]model.Allocation, len(ps))
	nodes := make([]string, len(ps))
	for i, n := range ps {
		allocs[i] = model.Allocation{Node: n.Node, GPUs: n.GPUs, GPUMilli: n.GPUMilli}
		nodes[i] = n.Node
	}
	return allocs, nodes
}
