package replay

import (
	"cmp"
	"slices"

	"github.com/allot-dev/allot/internal/model"
)

// group is one VC's queued jobs of one GPU count. Jobs of a group are alike
// to every filter of the core, so it decides them in their queue order and,
// once one does not fit, no later one fits in that cycle.
type group struct {
	gpus int
	jobs []*simJob
}

// enqueue adds a job to its VC's queue.
func (s *sim) enqueue(j *simJob) {
	j.job.Status.State = model.StateQueued
	s.vcQueued[j.vc] += j.gpus
	s.queued++
	s.dirty[j.vc] = true
	for _, g := range s.queues[j.vc] {
		if g.gpus == j.gpus {
			g.jobs = append(g.jobs, j)
			return
		}
	}
	s.queues[j.vc] = append(s.queues[j.vc], &group{gpus: j.gpus, jobs: []*simJob{j}})
}

// dropStarted removes the jobs that left the queue from every group.
func (s *sim) dropStarted() {
	for _, gs := range s.queues {
		for _, g := range gs {
			g.jobs = slices.DeleteFunc(g.jobs, func(j *simJob) bool {
				return j.job.Status.State != model.StateQueued
			})
		}
	}
}

// window appends to jobs the queued jobs of VC v the core may place in this
// cycle, with their priority values set by the policy.
//
// The core serves a tenant's queue by priority value, then submit time, then
// ID, and decides jobs of one shape alike: within one cycle at most ⌊C/g⌋
// jobs of g GPUs can start, where C bounds the capacity the VC can get in
// the cycle (see capacity). So the window holds, for each GPU count g, the
// first ⌊C/g⌋ jobs in the core's own order; the jobs behind it would be
// left pending. Under static sharing, where VCs never meet, the core's
// decisions are exactly those it makes on the whole queue. Under borrow
// sharing they can differ in one way: a VC whose jobs are all outside the
// window does not pick up, in the same cycle, capacity that another VC's
// reclaim freed beyond its need; the next cycle (one runs at once after any
// preemption) offers it. Config.FullQueue turns the window off to check
// this. Without the window a cycle costs time in the length of the whole
// queue, which for FIFO holds thousands of jobs.
func (s *sim) window(v int, jobs []*model.Job) []*model.Job {
	c := s.capacity(v)
	for _, g := range s.queues[v] {
		n := c / g.gpus
		if s.cfg.FullQueue {
			n = len(g.jobs)
		}
		if n == 0 || len(g.jobs) == 0 {
			continue
		}
		for _, j := range g.jobs {
			j.job.Spec.Priority.Value = s.pol.prioritise(j, s.now)
		}
		if n < len(g.jobs) {
			// Mostly in order already: the policies' values keep their
			// order inside a group from cycle to cycle.
			slices.SortFunc(g.jobs, coreOrder)
		} else {
			n = len(g.jobs)
		}
		for _, j := range g.jobs[:n] {
			jobs = append(jobs, j.job)
		}
	}
	return jobs
}

// coreOrder is the order of the core's queue inside one tenant and class:
// priority value (higher first), submit time, ID. IDs follow submit order.
func coreOrder(a, b *simJob) int {
	if a.job.Spec.Priority.Value != b.job.Spec.Priority.Value {
		return cmp.Compare(b.job.Spec.Priority.Value, a.job.Spec.Priority.Value)
	}
	return cmp.Compare(a.idx, b.idx)
}

// capacity bounds the GPUs VC v can get in one cycle: under static sharing
// its own idle GPUs; under borrow sharing every idle GPU, plus what it can
// reclaim from borrowers while below its guarantee.
func (s *sim) capacity(v int) int {
	if s.cfg.Sharing == Static {
		return s.vcs[v].gpus - s.vcUsed[v]
	}
	c := s.res.GPUs - s.busy
	if room := s.vcs[v].gpus - s.vcUsed[v]; room > 0 {
		borrowed := 0
		for o, u := range s.vcUsed {
			if o != v {
				borrowed += max(0, u-s.vcs[o].gpus)
			}
		}
		c += min(room, borrowed)
	}
	return c
}
