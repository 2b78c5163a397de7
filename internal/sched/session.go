package sched

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Session carries the core's state from one cycle to the next for a driver
// that reports what changed, so that a cycle does not rebuild the fleet and
// recount every running job. It holds the nodes with what running work
// uses on them, the running work itself, and the tenants', partitions' and
// quotas' use; the driver keeps it in step with Hold, Release, Update and
// SetHealth, and replaces the fleet or tenancy with Reset.
//
// A Session decides exactly as the Scheduler does: Schedule(queued, now)
// returns the Plan of Scheduler.Schedule over a Snapshot of the same fleet
// and tenancy whose Jobs are the work the Session holds plus queued. It
// counts the Plan's binds and preemptions only for the length of the cycle:
// the driver commits the Plan and reports the jobs that start (Hold) and
// those preempted (Release) like any other change.
//
// A cycle that panics leaves the Session to rebuild from what it was told
// at the next Schedule. A Session is not safe for concurrent use.
type Session struct {
	sched   *Scheduler
	fleet   *model.Fleet
	tenancy *model.Tenancy
	st      *state
	// holds are the jobs holding capacity, by ID: counted in st.running,
	// or apart when one of their nodes is not in the fleet (such a job is
	// not counted; the server requeues it).
	holds map[string]*hold
	// guests counts, by name, the holding jobs of each tenant the tenancy
	// does not define: a cycle knows such a tenant only while it runs work.
	guests map[string]int
	// health is what SetHealth said of nodes since the fleet was read:
	// a rebuild after a cycle that did not finish reads the fleet again
	// and must not lose it.
	health map[string]model.Health
	// headroom is what SetHeadroom said, kept across rebuilds.
	headroom []Headroom
	// images is what SetImages said, kept across rebuilds.
	images map[string][]string
	// broken is set when a cycle did not finish: the next one rebuilds.
	broken bool
}

// hold is one job holding capacity in a Session.
type hold struct {
	job *model.Job
	rj  *running // nil when a node of the job is not in the fleet
}

// NewSession returns a Session over fleet and tenancy holding no work. The
// Session reads fleet and tenancy when it is made and at Reset only: node
// health changes come through SetHealth, and any other change to either (a
// node added or gone, a reservation's window or size, a quota) is a Reset.
func (s *Scheduler) NewSession(fleet *model.Fleet, tenancy *model.Tenancy) *Session {
	ss := &Session{sched: s, holds: map[string]*hold{}, guests: map[string]int{}, health: map[string]model.Health{}}
	ss.Reset(fleet, tenancy)
	return ss
}

// Reset replaces the fleet and the tenancy and rebuilds the state, keeping
// the work held (but for a job whose allocations name a GPU the new fleet's
// node does not have, which Hold refuses).
func (ss *Session) Reset(fleet *model.Fleet, tenancy *model.Tenancy) {
	clear(ss.health)
	ss.rebuild(fleet, tenancy)
}

// rebuild builds the state again from fleet and tenancy and the work held.
func (ss *Session) rebuild(fleet *model.Fleet, tenancy *model.Tenancy) {
	ss.fleet, ss.tenancy = fleet, tenancy
	// The jobs held, in ID order; not st.running, which a cycle that did
	// not finish left with its binds.
	jobs := make([]*model.Job, 0, len(ss.holds))
	for _, h := range ss.holds {
		jobs = append(jobs, h.job)
	}
	slices.SortFunc(jobs, func(x, y *model.Job) int { return strings.Compare(x.ID, y.ID) })
	ss.st = newBase(fleet, tenancy, ss.sched.cfg)
	ss.st.setHeadroom(ss.headroom)
	ss.st.setImages(ss.images)
	clear(ss.holds)
	clear(ss.guests)
	ss.broken = false
	for _, j := range jobs {
		_ = ss.Hold(j) // held before, so valid on the old fleet; the new one may lack its GPUs
	}
}

// Holding is the number of jobs the Session counts as holding capacity.
func (ss *Session) Holding() int { return len(ss.holds) }

// Hold records that j holds capacity: a job bound by a Plan once the driver
// committed it, or running work the driver learnt of. j must be in a state
// that holds (Preparing, Running, Preempted) with its allocations; a job
// without either is released instead. Holding a job held already replaces
// it. An allocation naming a GPU its node does not have is an error, and
// the job is not held; one on a node the fleet does not have is held but
// counted nowhere, as a cycle of its own would do. The Session keeps j and
// reads it at every cycle, as a Snapshot would: its checkpoint and state
// may change in place (Update documents when to say so), its allocations
// and spec may not.
func (ss *Session) Hold(j *model.Job) error {
	if _, ok := ss.holds[j.ID]; ok {
		ss.Release(j.ID)
	}
	if !j.Status.State.Holds() || len(j.Status.Allocations) == 0 {
		return nil // a cycle ignores it
	}
	st := ss.st
	for k, a := range j.Status.Allocations {
		i, found := st.nodeByName[a.Node]
		if !found {
			continue
		}
		for _, g := range a.GPUs {
			if g < 0 || g >= st.nodes[i].GPUs() {
				return fmt.Errorf("hold %s: allocations[%d]: GPU %d is not on node %s (%d GPUs)", j.ID, k, g, a.Node, st.nodes[i].GPUs())
			}
		}
	}
	name := j.Spec.Tenant
	t, known := st.tenant(name)
	if _, guest := ss.guests[name]; guest || !known {
		ss.guests[name]++
	}
	h := &hold{job: j}
	ss.holds[j.ID] = h
	rj := &running{job: j, tenant: t, req: RequestOf(j.Spec.Resources),
		nodes: make([]int, 0, len(j.Status.Allocations)), gpus: make([][]int, 0, len(j.Status.Allocations))}
	for _, a := range j.Status.Allocations {
		i, found := st.nodeByName[a.Node]
		if !found {
			return nil // counted nowhere, as in a cycle of its own
		}
		rj.nodes = append(rj.nodes, i)
		rj.gpus = append(rj.gpus, a.GPUs)
	}
	rj.pool = st.groups[st.groupOf[rj.nodes[0]]].pool
	h.rj = rj
	st.commit(rj)
	return nil
}

// Release records that the job with this ID holds nothing any more: it
// completed, failed, was cancelled, or was preempted by a committed Plan.
// Releasing a job the Session does not hold does nothing.
func (ss *Session) Release(id string) {
	h, ok := ss.holds[id]
	if !ok {
		return
	}
	delete(ss.holds, id)
	st := ss.st
	if rj := h.rj; rj != nil {
		st.account(rj, -1)
		rj.released = true // dropped from st.running at the next begin
	}
	name := h.job.Spec.Tenant
	if n, guest := ss.guests[name]; guest {
		if n <= 1 {
			delete(ss.guests, name)
			delete(st.tenants, name)
		} else {
			ss.guests[name] = n - 1
		}
	}
}

// Update records a change in the status of a job: a new checkpoint, a
// state that still holds. j replaces the job held under its ID. A job
// whose state no longer holds is released; one the Session does not hold,
// or whose allocations differ from those it was held with, is held anew
// (Hold, whose error it returns).
func (ss *Session) Update(j *model.Job) error {
	h, ok := ss.holds[j.ID]
	switch {
	case !j.Status.State.Holds():
		ss.Release(j.ID)
		return nil
	case !ok || !ss.sameAllocations(h, j):
		return ss.Hold(j)
	case h.rj == nil:
		h.job = j
	default:
		h.job, h.rj.job, h.rj.since = j, j, lastSaved(j)
	}
	return nil
}

// sameAllocations reports whether j's allocations are those h was held
// with.
func (ss *Session) sameAllocations(h *hold, j *model.Job) bool {
	if h.rj == nil {
		return slices.EqualFunc(h.job.Status.Allocations, j.Status.Allocations, func(x, y model.Allocation) bool {
			return x.Node == y.Node && slices.Equal(x.GPUs, y.GPUs)
		})
	}
	if len(j.Status.Allocations) != len(h.rj.nodes) {
		return false
	}
	for k, a := range j.Status.Allocations {
		if ss.st.nodes[h.rj.nodes[k]].Name != a.Node || !slices.Equal(h.rj.gpus[k], a.GPUs) {
			return false
		}
	}
	return true
}

// SetHealth records a node's health: only Ready nodes take new work.
func (ss *Session) SetHealth(node string, health model.Health) error {
	st := ss.st
	i, ok := st.nodeByName[node]
	if !ok {
		return fmt.Errorf("set health: node %q is not in the fleet", node)
	}
	ss.health[node] = health
	n := st.nodes[i]
	n.Draining = health == model.NodeDraining
	ready := health == model.NodeReady
	if n.Ready == ready {
		return nil
	}
	// Free capacity is counted by pool on Ready nodes only (account).
	free := int64(n.GPUs()) * model.MilliPerGPU
	for _, rj := range st.byNode[i] {
		free -= rj.req.TotalMilli()
	}
	if !ready {
		free = -free
	}
	st.poolFree[st.groups[st.groupOf[i]].pool] += free
	n.Ready = ready
	n.Gen++
	return nil
}

// SetHeadroom replaces the capacity kept free of elastic growth
// (Snapshot.Headroom) for the cycles to come.
func (ss *Session) SetHeadroom(hs []Headroom) {
	ss.headroom = slices.Clone(hs)
	ss.st.setHeadroom(ss.headroom)
}

// SetImages replaces what images the nodes hold (Snapshot.Images) for
// the cycles to come; the Session keeps images, which the caller must
// not change afterwards.
func (ss *Session) SetImages(images map[string][]string) {
	ss.images = images
	ss.st.setImages(images)
}

// Schedule runs one cycle over the work held and queued at now; jobs in
// queued that are not in state Queued are ignored, as in a Snapshot. The
// Session is left as it was: the Plan's binds and preemptions count once
// the driver reports them.
func (ss *Session) Schedule(queued []*model.Job, now time.Time) Plan {
	if ss.broken {
		ss.rebuild(ss.fleet, ss.tenancy)
		for node, h := range ss.health {
			_ = ss.SetHealth(node, h) // named a node of this fleet before
		}
	}
	st := ss.st
	ss.broken = true // until the cycle is undone
	st.begin(now, queued)
	held := len(st.running)
	plan := st.cycle(queued)
	st.undo(held)
	ss.broken = false
	return plan
}

// Recycle gives back p, a Plan of this Session its caller is done with:
// the next Schedule fills p's Pending list again instead of allocating one
// (a long queue's, the most a cycle allocates). The caller must not read p
// after.
func (ss *Session) Recycle(p Plan) {
	if cap(p.Pending) > cap(ss.st.spare) {
		clear(p.Pending) // no detail stays reachable from the list
		ss.st.spare = p.Pending[:0]
	}
}

// undo takes back what a cycle counted: the jobs it bound (the first held
// of st.running were there before it) and the releases of its preemptions.
func (st *state) undo(held int) {
	st.undoResizes()
	for _, rj := range st.running[held:] {
		if !rj.evicted {
			st.account(rj, -1)
		}
	}
	clear(st.running[held:])
	st.running = st.running[:held]
	for _, rj := range st.running {
		if rj.evicted {
			st.account(rj, +1)
			rj.evicted = false
		}
	}
}

// Reserved returns the nodes of each reservation in the last cycle, by
// reservation name, each list in name order: those an active reservation
// held, and those a reservation ahead of its start earmarked. Nil before
// the first cycle.
func (ss *Session) Reserved() map[string][]string {
	var out map[string][]string
	for i := range ss.st.res {
		rs := &ss.st.res[i]
		nodes := rs.nodes
		if !rs.active {
			nodes = rs.earmarks
		}
		if len(nodes) == 0 {
			continue
		}
		names := make([]string, len(nodes))
		for k, n := range nodes {
			names[k] = ss.st.nodes[n].Name
		}
		slices.Sort(names)
		if out == nil {
			out = map[string][]string{}
		}
		out[rs.Name] = names
	}
	return out
}

// Running lists the jobs the Session counts on nodes of the fleet, in no
// particular order.
func (ss *Session) Running() []*model.Job {
	out := make([]*model.Job, 0, len(ss.st.running))
	for _, rj := range ss.st.running {
		if !rj.released {
			out = append(out, rj.job)
		}
	}
	return slices.Clip(out)
}
