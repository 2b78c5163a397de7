package sched

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Elastic jobs (model.Elastic) run with MinInstances to MaxInstances
// instances. The core starts one as a gang of its minimum, like any other,
// and then resizes it, each time as a Resize in the Plan: the job's
// attempt ends and the next starts with the new size from its checkpoint.
//
//   - Shrink (shrinkFor): when a queued job cannot be placed, before any
//     preemption, the instances elastic jobs hold above their minimum are
//     given up, in steps, the instances added last first, when they are
//     what stands between the job and a place: only jobs the queued one may
//     evict (evictable, the rules of preemption) and that are not
//     protected (Config.MinRunTime, or ResizeInterval if longer, since the
//     start of their attempt: no job is resized more often than that),
//     cheapest lost work first. Giving up
//     more than needed is undone, costliest first, as preempt spares
//     victims. A shrink loses the work since the checkpoint of every
//     instance, since all of them restart; an eviction would lose as much
//     and leave nothing running.
//   - Growth (grow): after every queued job was decided, so only on
//     capacity no queued job took this cycle, each running elastic job
//     whose current attempt has run Config.ResizeInterval grows by steps
//     up to its maximum, on the GPU model and cluster (so the fabric) its
//     instances run on, under every filter a queued job meets (quotas,
//     partitions' guarantees and borrowing limits, reservations and their
//     earmarks, held nodes, power caps). Growth never preempts. It leaves
//     free what Snapshot.Headroom says will be asked for within the
//     interval (an endpoint's daily curve, read by the driver).
//
// A resized job is neither resized again nor evicted in the same cycle.

// resized is what an elastic job held before the cycle resized it, so that
// a Session's cycle can be undone.
type resized struct {
	rj    *running
	nodes []int
	gpus  [][]int
}

// cut is one elastic job's part in a shrink: its instances from keep on
// are given up.
type cut struct {
	rj     *running
	reason Reason
	keep   int
	size   int
}

// resizeInterval is Config.ResizeInterval or its default.
func (st *state) resizeInterval() time.Duration {
	if st.cfg.ResizeInterval > 0 {
		return st.cfg.ResizeInterval
	}
	return model.DefaultResizeInterval
}

// moveInstances releases (sign -1) or charges again (+1) instances from to
// to of rj, everywhere they are counted. A placement trial after it runs
// in full: preempt's room (room.go) does not follow these moves.
func (st *state) moveInstances(rj *running, from, to int, sign int64) {
	st.counts++
	st.room.domain = -1 // gangHolds' memory of the last trial is void
	for k := from; k < to; k++ {
		st.accountNode(rj, k, sign)
		st.accountUse(rj, k, sign)
	}
}

// remember records what rj holds before the cycle resizes it.
func (st *state) remember(rj *running) {
	st.resized = append(st.resized, resized{rj: rj, nodes: slices.Clone(rj.nodes), gpus: slices.Clone(rj.gpus)})
	rj.resized = true
}

// undoResizes gives every job the cycle resized back what it held before:
// the instances a growth added are released, those a shrink gave up
// charged again.
func (st *state) undoResizes() {
	for i := len(st.resized) - 1; i >= 0; i-- {
		r := st.resized[i]
		if !r.rj.evicted {
			st.moveInstances(r.rj, 0, len(r.rj.nodes), -1)
		}
		r.rj.nodes, r.rj.gpus = r.nodes, r.gpus
		if !r.rj.evicted {
			st.moveInstances(r.rj, 0, len(r.rj.nodes), +1)
		}
		r.rj.resized = false
	}
	clear(st.resized)
	st.resized = st.resized[:0]
}

// mayShrink reports whether rj may give up instances in this cycle.
func (st *state) mayShrink(rj *running) bool {
	e := rj.job.Spec.Elastic
	return !rj.evicted && !rj.fresh && !rj.resized && rj.guarded.IsZero() &&
		rj.job.Status.State == model.StateRunning && len(rj.nodes)-e.StepOrOne() >= e.MinInstances
}

// shrinkFor gives up instances of elastic jobs so that a can be placed,
// adding the resizes to plan, and returns the groups whose verdicts the
// freed capacity may change; ok is false, and nothing changed, when no
// shrink lets a in.
func (st *state) shrinkFor(a *attempt, plan *Plan) (freed []uint64, ok bool) {
	if len(st.shrinkable) == 0 || st.cfg.DisablePreemption || a.class == model.ClassSpot {
		return nil, false
	}
	cuts := st.cuts[:0]
	stamped := false
	for _, rj := range st.shrinkable {
		if rj.job == a.job || !st.mayShrink(rj) {
			continue
		}
		if !stamped {
			st.startVictims(a) // the groups a's filters admit, and partitions' use before
			stamped = true
		}
		reason := st.evictable(a, rj)
		if reason == ReasonNone || !st.relevant(a, rj, st.victims.stamp) {
			continue
		}
		cuts = append(cuts, cut{rj: rj, reason: reason, keep: rj.job.Spec.Elastic.MinInstances, size: len(rj.nodes)})
	}
	st.cuts = cuts
	if len(cuts) == 0 {
		return nil, false
	}
	for _, c := range cuts {
		st.moveInstances(c.rj, c.keep, c.size, -1)
	}
	if !st.placeable(a) {
		for _, c := range cuts {
			st.moveInstances(c.rj, c.keep, c.size, +1)
		}
		return nil, false
	}
	// Take back, costliest first and step by step, what a does without.
	for i := len(cuts) - 1; i >= 0; i-- {
		c := &cuts[i]
		step := c.rj.job.Spec.Elastic.StepOrOne()
		for c.keep+step <= c.size {
			st.moveInstances(c.rj, c.keep, c.keep+step, +1)
			if !st.placeable(a) {
				st.moveInstances(c.rj, c.keep, c.keep+step, -1)
				break
			}
			c.keep += step
		}
	}
	freed = st.freedScratch()
	for _, c := range cuts {
		if c.keep == c.size {
			continue
		}
		rj := c.rj
		gone := &running{nodes: rj.nodes[c.keep:]}
		st.markFreed(gone, freed)
		st.vacate(gone.nodes)
		st.remember(rj)
		lost := rj.cost
		rj.nodes, rj.gpus = rj.nodes[:c.keep:c.keep], rj.gpus[:c.keep:c.keep]
		plan.Resizes = append(plan.Resizes, Resize{
			Job: rj.job.ID, From: c.size, To: c.keep, Nodes: st.placements(rj), For: a.job.ID,
			Reason: c.reason, LostGPUSeconds: lost,
			Detail: fmt.Sprintf("shrank %d→%d for %s (%s), which needs %s; %.0f GPU-seconds since the last checkpoint are lost",
				c.size, c.keep, a.job.ID, a.job.Spec.Priority, gpusText(a.total), lost),
		})
	}
	return freed, true
}

// vacate records that the cycle freed capacity on nodes (vacated).
func (st *state) vacate(nodes []int) {
	if len(st.elastic) == 0 {
		return // nobody grows
	}
	if st.vacated == nil {
		st.vacated = map[int]bool{}
	}
	for _, i := range nodes {
		st.vacated[i] = true
	}
}

// placements lists where each instance of rj runs, as a Bind does.
func (st *state) placements(rj *running) []Placement {
	out := make([]Placement, len(rj.nodes))
	for i, n := range rj.nodes {
		out[i] = Placement{Node: st.nodes[n].Name, GPUs: rj.gpus[i], GPUMilli: rj.req.Milli}
	}
	return out
}

// growable reports whether rj may grow in this cycle.
func (st *state) growable(rj *running) bool {
	e := rj.job.Spec.Elastic
	return !rj.evicted && !rj.fresh && !rj.resized && rj.job.Status.State == model.StateRunning &&
		len(rj.nodes)+e.StepOrOne() <= e.MaxInstances && !st.now.Before(rj.job.Status.StartedAt.Add(st.resizeInterval()))
}

// grow gives running elastic jobs more instances on capacity the cycle left
// free, highest class first, then the jobs that waited longest.
func (st *state) grow(plan *Plan) {
	// A job whose domain lacks the idle GPUs of one step is passed over
	// before anything is built for it: on a busy fleet that is nearly all.
	var jobs []*running
	var free []int
	for _, rj := range st.elastic {
		if !st.growable(rj) {
			continue
		}
		if free == nil {
			free = st.freeWholeByDomain()
		}
		if free[st.groups[st.groupOf[rj.nodes[0]]].domain] >= rj.job.Spec.Elastic.StepOrOne()*rj.req.GPUs {
			jobs = append(jobs, rj)
		}
	}
	if len(jobs) == 0 {
		return
	}
	slices.SortFunc(jobs, func(x, y *running) int {
		if c := cmp.Compare(y.job.Spec.Priority.Class, x.job.Spec.Priority.Class); c != 0 {
			return c
		}
		if c := x.job.Status.SubmittedAt.Compare(y.job.Status.SubmittedAt); c != 0 {
			return c
		}
		return cmp.Compare(x.job.ID, y.job.ID)
	})
	failed := map[string]bool{} // growth of a shape in a domain that found no room: capacity only shrinks
	for _, rj := range jobs {
		j := rj.job
		t, known := st.tenants[j.Spec.Tenant]
		if !known || t != rj.tenant {
			continue
		}
		d := st.groups[st.groupOf[rj.nodes[0]]].domain
		a := st.newAttempt(j, t, st.resIndex(j))
		a.grow, a.within = true, d
		a.count = j.Spec.Elastic.StepOrOne()
		a.total = int64(a.count) * a.req.TotalMilli()
		key := string(binaryDomain(st.holdKey(st.earmarkKey(appendShapeKey(nil, j), j, st.tenants[j.Spec.Tenant]), j), d))
		from := len(rj.nodes)
		var added placement
		for len(rj.nodes)+a.count <= j.Spec.Elastic.MaxInstances && free[d] >= a.count*a.req.GPUs && !failed[key] {
			if !st.headroomAllows(rj, a) {
				break
			}
			p, reason, _ := st.place(a)
			if reason != ReasonNone {
				failed[key] = true
				break
			}
			if len(added.nodes) == 0 {
				st.remember(rj)
			}
			k := len(rj.nodes)
			rj.nodes = append(slices.Clip(rj.nodes), p.nodes...)
			rj.gpus = append(slices.Clip(rj.gpus), p.gpus...)
			st.moveInstances(rj, k, len(rj.nodes), +1)
			added.nodes = append(added.nodes, p.nodes...)
			free[d] -= a.count * a.req.GPUs
		}
		if len(added.nodes) == 0 {
			continue
		}
		to := len(rj.nodes)
		plan.Resizes = append(plan.Resizes, Resize{
			Job: j.ID, From: from, To: to, Nodes: st.placements(rj), Reason: IdleCapacity, LostGPUSeconds: rj.cost,
			Detail: fmt.Sprintf("grew %d→%d: %d idle %s in %s; %.0f GPU-seconds since the last checkpoint are lost",
				from, to, (to-from)*a.req.GPUs, st.nodes[rj.nodes[0]].GPUModel, st.domains[d].name, rj.cost),
		})
	}
}

// binaryDomain appends domain d to a growth key.
func binaryDomain(b []byte, d int) []byte {
	return append(b, byte(d), byte(d>>8), byte(d>>16), byte(d>>24))
}

// freeWholeByDomain counts the idle GPUs of Ready nodes in each domain: a
// growth step that needs more cannot fit there.
func (st *state) freeWholeByDomain() []int {
	free := make([]int, len(st.domains))
	for _, g := range st.groups {
		for _, n := range g.nodes {
			if n.Ready {
				free[g.domain] += n.FreeWhole
			}
		}
	}
	return free
}

// headroomAllows reports whether growing rj by a leaves the free capacity
// of its pool that Snapshot.Headroom keeps for demand expected within the
// resize interval.
func (st *state) headroomAllows(rj *running, a *attempt) bool {
	if len(st.headroom) == 0 {
		return true
	}
	pool := st.groups[st.groupOf[rj.nodes[0]]].pool
	keep, ok := st.headroom[pool]
	return !ok || st.poolFree[pool]-a.total >= keep
}

// setHeadroom files Snapshot.Headroom by pool; pools the fleet lacks keep
// nothing.
func (st *state) setHeadroom(hs []Headroom) {
	st.headroom = nil
	for _, h := range hs {
		id, ok := st.poolID[poolKey{h.Region, h.GPUModel}]
		if !ok || h.GPUs <= 0 {
			continue
		}
		if st.headroom == nil {
			st.headroom = map[int]int64{}
		}
		st.headroom[id] += int64(h.GPUs) * model.MilliPerGPU
	}
}
