package replay

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
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
// the cycle (see capacity) — or, when only idle GPUs count, the instances
// of its size that fit on the idle GPUs of each node (see slots), over the
// instances a job needs. So the window holds, for each GPU count g, that
// many first jobs in the core's own order; the jobs behind it would be
// left pending. Under static sharing, where VCs never meet, the core's
// decisions are exactly those it makes on the whole queue. Under borrow
// sharing they can differ a little: the core picks the next tenant by its
// head job (does it fit the guarantee?), so a head that cannot start can
// change the order in which tenants are served; and a VC whose jobs are all
// outside the window does not pick up, in the same cycle, capacity another
// VC's reclaim freed beyond its need (the cycle that runs at once after any
// preemption offers it). Config.FullQueue turns the window off to check
// this. Without the window a cycle costs time in the length of the whole
// queue, which for FIFO holds thousands of jobs.
//
// With holds (Config.HoldAfter) the jobs the core would choose to hold
// nodes are added (holders): a holder may start where jobs alike to it may
// not, and its nodes are kept from the window's jobs, so leaving it out
// would change what the core decides.
func (s *sim) window(v int, jobs []*model.Job) []*model.Job {
	from := len(jobs)
	holders := s.holders(v)
	if s.cfg.Policy == "fifo" {
		jobs = s.strictHead(v, jobs)
	} else {
		jobs = s.startable(v, jobs, holders)
	}
	shown := jobs[from:]
	for _, j := range holders {
		if !slices.Contains(shown, j.job) {
			j.job.Spec.Priority.Value = s.pol.prioritise(j, s.now)
			jobs = append(jobs, j.job)
		}
	}
	return jobs
}

// startable appends to jobs, for each GPU count, the first jobs of VC v in
// the core's order that can start in this cycle (see window), counting
// what holders (the VC's candidates to hold nodes) may evict.
func (s *sim) startable(v int, jobs []*model.Job, holders []*simJob) []*model.Job {
	c, perNode := s.capacity(v)
	if e := s.yielding(v, holders); e > 0 {
		// A holder evicts work that yields to it (sched's HeldNodes) and
		// may leave some of what it frees to others.
		c, perNode = c+e, false
	}
	valued := s.priorityGap() > 0
	if valued {
		// Running work of the VC a queued job outranks by the gap may make
		// room: count its GPUs, not slots.
		best := math.MinInt
		for _, g := range s.queues[v] {
			for _, j := range g.jobs {
				j.job.Spec.Priority.Value = s.pol.prioritise(j, s.now)
				best = max(best, j.job.Spec.Priority.Value)
			}
		}
		if e := s.evictable(v, best); e > 0 {
			c, perNode = c+e, false
		}
	}
	for _, g := range s.queues[v] {
		n := c / g.gpus
		if perNode {
			inst, per := shape(g.gpus)
			n = s.slots(v, per) / inst
		}
		if s.cfg.FullQueue {
			n = len(g.jobs)
		}
		if n == 0 || len(g.jobs) == 0 {
			continue
		}
		if !valued {
			for _, j := range g.jobs {
				j.job.Spec.Priority.Value = s.pol.prioritise(j, s.now)
			}
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

// holders returns, when jobs may hold nodes (Config.HoldAfter), the first
// sched.HoldCandidates queued jobs of VC v in sched.HoldOrder that
// sched.MayHold: the core tries no more than that many holders in a
// cycle, in that order, so the window that shows them lets it choose the
// holders it would choose on the whole queue.
func (s *sim) holders(v int) []*simJob {
	if s.cfg.HoldAfter <= 0 {
		return nil
	}
	var best []*simJob // in HoldOrder
	order := func(a, b *simJob) int { return sched.HoldOrder(a.job, b.job) }
	for _, g := range s.queues[v] {
		for _, j := range g.jobs {
			if !sched.MayHold(j.job, s.at(s.now), s.cfg.HoldAfter) {
				continue
			}
			if len(best) == sched.HoldCandidates && order(j, best[len(best)-1]) >= 0 {
				continue
			}
			k, _ := slices.BinarySearchFunc(best, j, order)
			best = slices.Insert(best, k, j)
			if len(best) > sched.HoldCandidates {
				best = best[:sched.HoldCandidates]
			}
		}
	}
	return best
}

// yielding bounds the GPUs that holders may evict in VC v: work yields to
// a holder when it checkpoints and started after the hold began (sched's
// yields), so no later than the earliest of theirs.
func (s *sim) yielding(v int, holders []*simJob) int {
	if len(holders) == 0 || s.cfg.Checkpoint <= 0 {
		return 0
	}
	since := sched.WaitingSince(holders[0].job)
	for _, h := range holders[1:] {
		if w := sched.WaitingSince(h.job); w.Before(since) {
			since = w
		}
	}
	from := int64(since.Add(s.cfg.HoldAfter).Sub(s.base) / time.Second)
	n := 0
	for _, j := range s.running {
		if j.vc == v && j.runStart >= from {
			n += j.gpus
		}
	}
	return n
}

// strictHead appends VC v's queued jobs in submit order up to the first one
// that what the VC can get this cycle cannot hold, so that no job overtakes
// an earlier one (strict FIFO, the baseline of the Helios study). Whether a
// job fits is judged on a copy of the free GPUs per node, best fit, or on
// the GPU count alone while borrowed capacity may be reclaimed.
func (s *sim) strictHead(v int, jobs []*model.Job) []*model.Job {
	var queue []*simJob
	for _, g := range s.queues[v] {
		queue = append(queue, g.jobs...)
	}
	slices.SortFunc(queue, func(a, b *simJob) int { return cmp.Compare(a.idx, b.idx) })
	c, perNode := s.capacity(v)
	var free []int
	if perNode {
		free = s.nodeFree
		if s.cfg.Sharing == Static {
			free = free[s.vcFirst[v] : s.vcFirst[v]+s.vcs[v].nodes]
		}
		free = slices.Clone(free)
	}
	for _, j := range queue {
		if !take(j.gpus, &c, free) {
			break
		}
		j.job.Spec.Priority.Value = 0
		jobs = append(jobs, j.job)
	}
	return jobs
}

// take reserves a job of g GPUs from c GPUs in all or, when free is not
// nil, instance by instance on the fullest node that holds it.
func take(g int, c *int, free []int) bool {
	if free == nil {
		if g > *c {
			return false
		}
		*c -= g
		return true
	}
	inst, per := shape(g)
	chosen := make([]int, 0, inst)
	for k := 0; k < inst; k++ {
		best := -1
		for i, f := range free {
			if f >= per && (best < 0 || f < free[best]) {
				best = i
			}
		}
		if best < 0 {
			for _, i := range chosen {
				free[i] += per
			}
			return false
		}
		free[best] -= per
		chosen = append(chosen, best)
	}
	return true
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
// reclaim from borrowers while below its guarantee. perNode reports that
// nothing can be reclaimed, so only idle GPUs count and the tighter bound of
// slots holds.
func (s *sim) capacity(v int) (gpus int, perNode bool) {
	if s.cfg.Sharing == Static {
		return s.vcs[v].gpus - s.vcUsed[v], true
	}
	c := s.res.GPUs - s.busy
	reclaim := 0
	if room := s.vcs[v].gpus - s.vcUsed[v]; room > 0 {
		borrowed := 0
		for o, u := range s.vcUsed {
			if o != v {
				borrowed += max(0, u-s.vcs[o].gpus)
			}
		}
		reclaim = min(room, borrowed)
	}
	return c + reclaim, reclaim == 0
}

// slots is how many instances of per GPUs fit on the idle GPUs of the nodes
// VC v may use: its own under static sharing, all under borrow sharing.
func (s *sim) slots(v, per int) int {
	nodes := s.nodeFree
	if s.cfg.Sharing == Static {
		nodes = nodes[s.vcFirst[v] : s.vcFirst[v]+s.vcs[v].nodes]
	}
	n := 0
	for _, f := range nodes {
		n += f / per
	}
	return n
}

// priorityGap is the core's sched.Config.PriorityGap for this replay: the
// configured gap under the allot policy and static sharing, else 0 (off).
func (s *sim) priorityGap() int {
	if s.cfg.Policy != "allot" || s.cfg.Sharing != Static || s.cfg.PriorityGap < 0 {
		return 0
	}
	return s.cfg.PriorityGap
}

// evictable is how many GPUs VC v's running work holds that the core may
// preempt for a better priority value in this cycle: that which has run
// MinRunTime and whose value (set by selectJobs) is at least the gap below
// best, the best value in the VC's queue.
func (s *sim) evictable(v, best int) int {
	gap := s.priorityGap()
	if gap <= 0 || best == math.MinInt {
		return 0
	}
	mrt := int64(s.cfg.MinRunTime / time.Second)
	n := 0
	for _, j := range s.running {
		if j.vc == v && s.now >= j.runStart+mrt && j.job.Spec.Priority.Value <= best-gap {
			n += j.gpus
		}
	}
	return n
}
