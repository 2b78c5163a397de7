package sched

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Scheduler runs scheduling cycles with one Config. It holds no state
// between cycles; a Session (NewSession) carries it for drivers that
// report what changed.
type Scheduler struct {
	cfg Config
}

// New returns a Scheduler; a nil cfg.Scorer means BinPack.
func New(cfg Config) *Scheduler {
	if cfg.Scorer == nil {
		cfg.Scorer = BinPack{}
	}
	return &Scheduler{cfg: cfg}
}

// Schedule runs one cycle over snap at now and returns its Plan. It never
// modifies snap.
func (s *Scheduler) Schedule(snap *Snapshot, now time.Time) Plan {
	return newState(snap, now, s.cfg).cycle(snap.Jobs)
}

// cycle decides the queued jobs among jobs on a state readied by begin.
func (st *state) cycle(jobs []*model.Job) Plan {
	var plan Plan
	failed := map[string]failure{} // shape key -> outcome, valid until capacity it could use is freed

	// 1. Order the queue: class; then tenants whose next job fits their
	// guarantee; then fair share; then the tenant's own order.
	queues := st.queues(jobs)
	n := 0
	for _, q := range queues {
		for _, t := range q.tenants {
			n += len(t.jobs)
		}
	}
	if n > 0 {
		plan.Pending = st.pendingList(n) // nearly every job of a long queue waits
	}
	st.chooseHolders(jobs)
	st.clearKept()
	st.clearMisses()
	st.listSKUSizes()
	obs := st.cfg.Observer
	if obs != nil {
		obs.Prepared()
	}
	for _, q := range queues {
		for {
			t := q.next(st)
			if t == nil {
				break
			}
			j := t.jobs[0]
			t.jobs = t.jobs[1:]
			st.scheduleJob(j, t.state, &plan, failed)
			if obs != nil {
				obs.Decided(j)
			}
		}
	}
	if len(st.elastic) > 0 {
		st.grow(&plan)
	}
	return plan
}

// pendingList is an empty Pending list with room for n: the one given
// back by Session.Recycle when it has the room, else a new one.
func (st *state) pendingList(n int) []Pending {
	if p := st.spare; cap(p) >= n {
		st.spare = nil
		return p[:0]
	}
	return make([]Pending, 0, n)
}

// scheduleJob runs steps 2–5 for one job and records the outcome in plan.
func (st *state) scheduleJob(j *model.Job, t *tenantState, plan *Plan, failed map[string]failure) {
	pend := func(r Reason, d string) {
		if h := st.holderIndex(j); h >= 0 {
			d += st.holderNote(h)
		}
		plan.Pending = append(plan.Pending, Pending{Job: j.ID, Reason: r, Detail: d})
	}
	if t == nil { // t is the tenant's state: nil for a tenant the tenancy does not define
		names := make([]string, 0, len(st.tenants))
		for name := range st.tenants {
			names = append(names, name)
		}
		slices.Sort(names) // Nearest keeps the first of equally near names
		pend(UnknownTenant, fmt.Sprintf("tenant %q is not defined%s", j.Spec.Tenant, model.DidYouMean(j.Spec.Tenant, names)))
		return
	}
	res := st.resIndex(j)
	if name := j.Spec.Placement.Reservation; name != "" {
		if res < 0 {
			pend(ReservationNotActive, fmt.Sprintf("reservation %q does not exist", name))
			return
		}
		r := st.res[res]
		switch {
		case r.Owner != t.name:
			pend(ReservationNotActive, fmt.Sprintf("reservation %q belongs to %s", name, r.Owner))
			return
		case !r.active:
			pend(ReservationNotActive, fmt.Sprintf("reservation %q is active %s", name, windowText(r.Reservation)))
			return
		}
	}
	// Most of a long queue is answered here, by a verdict for its shape:
	// the key is looked up without allocating, the attempt made only after.
	st.keyBuf = st.holdKey(st.earmarkKey(appendShapeKey(st.keyBuf[:0], j), j, t), j)
	if f, seen := failed[string(st.keyBuf)]; seen && !j.Status.SubmittedAt.Before(f.submitted) {
		pend(f.Reason, f.Detail)
		return
	}
	// ...or by one for its shape whatever CPU and memory it asks (miss.go).
	if f, seen := st.settled[string(st.missKey(&j.Spec.Resources))]; seen && !j.Status.SubmittedAt.Before(f.submitted) {
		pend(f.Reason, f.Detail)
		return
	}
	key := string(st.keyBuf)
	a := st.newAttempt(j, t, res)
	// 2–3. Admit and place.
	p, reason, detail, blind := st.placeOrBlind(a)
	if reason != ReasonNone {
		// 4. Shrink elastic jobs (elastic.go), else preempt.
		if freed, ok := st.shrinkFor(a, plan); ok {
			st.dropVerdicts(failed, freed)
			p, reason, detail = st.place(a)
			if reason != ReasonNone {
				panic(fmt.Sprintf("sched: %s unplaceable after shrinking: %s: %s", j.ID, reason, detail))
			}
			st.bind(a, p, plan)
			return
		}
		counts := st.counts
		victims, until, missed, universal := st.preemptOrMiss(a)
		if len(victims) == 0 {
			st.counts = counts // every victim tried out was restored: use is as it was
			if !until.IsZero() {
				reason, detail = AwaitingPreemption, fmt.Sprintf("%s; work it may preempt is protected until %s",
					detail, until.UTC().Format(time.RFC3339))
				st.keep(a, until)
			}
			// 5. Explain.
			groups := st.shapeGroups(a)
			failed[key] = failure{Pending: Pending{Reason: reason, Detail: detail}, groups: groups, submitted: j.Status.SubmittedAt}
			if !missed {
				st.addMiss(a, until, groups)
			}
			if blind && universal {
				st.settle(a, Pending{Reason: reason, Detail: detail}, groups)
			}
			pend(reason, detail)
			return
		}
		freed := st.freedScratch()
		for _, v := range victims {
			st.markFreed(v.rj, freed)
			st.vacate(v.rj.nodes)
			st.unindexRunning(v.rj)
			if v.rj.fresh {
				// Bound earlier in this cycle: it never starts.
				plan.unbind(v.rj.job.ID)
				displaced := Pending{Job: v.rj.job.ID, Reason: InsufficientCapacity,
					Detail: fmt.Sprintf("displaced in this cycle by %s (%s)", j.ID, v.reason)}
				plan.Pending = append(plan.Pending, displaced)
				continue
			}
			plan.Preemptions = append(plan.Preemptions, Preemption{
				Job: v.rj.job.ID, For: j.ID, Reason: v.reason, Detail: preemptionDetail(v, a), LostGPUSeconds: v.cost,
			})
		}
		st.dropVerdicts(failed, freed)
		p, reason, detail = st.place(a)
		if reason != ReasonNone {
			// Cannot happen: preempt checked this very placement.
			panic(fmt.Sprintf("sched: %s unplaceable after preemption: %s: %s", j.ID, reason, detail))
		}
	}
	st.bind(a, p, plan)
}

// dropVerdicts forgets, once capacity was freed in the groups of freed,
// the verdicts for shapes that could use it: they may no longer hold.
func (st *state) dropVerdicts(failed map[string]failure, freed []uint64) {
	for k, f := range failed {
		if intersects(f.groups, freed) {
			delete(failed, k)
		}
	}
	st.dropMisses(freed)
}

// bind charges a placement and adds it to the plan.
func (st *state) bind(a *attempt, p placement, plan *Plan) {
	rj := &running{job: a.job, tenant: a.tenant, req: a.req, nodes: p.nodes, gpus: p.gpus,
		pool: st.groups[st.groupOf[p.nodes[0]]].pool, fresh: true}
	st.commit(rj)
	st.indexRunning(rj, true)
	b := Bind{Job: a.job.ID, Nodes: make([]Placement, len(p.nodes))}
	for i, n := range p.nodes {
		b.Nodes[i] = Placement{Node: st.nodes[n].Name, GPUs: p.gpus[i], GPUMilli: a.req.Milli}
	}
	plan.Binds = append(plan.Binds, b)
}

// appendShapeKey appends to b the key of j's shape: jobs of one key are
// treated alike by every filter, so a verdict for one holds for all while
// capacity only shrinks.
func appendShapeKey(b []byte, j *model.Job) []byte {
	s := &j.Spec
	r := &s.Resources
	// Binary, not text: numbers at a fixed width, strings and lists after
	// their length, so that no two shapes share a key.
	for _, v := range [...]int64{int64(s.Priority.Class), int64(r.InstanceCount), int64(r.GPUsPerInstance), r.GPUMilli, r.CPUMilli, r.MemoryMiB} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	for _, v := range [...]string{s.Tenant, s.Placement.Residency, string(s.Placement.Interconnect), s.Placement.DataRegion, s.Placement.Reservation, s.Placement.SKU} {
		b = appendKeyString(b, v)
	}
	for _, list := range [...][]string{r.GPUModels, s.Placement.Regions, s.Placement.Nodes, s.Placement.ExcludeNodes} {
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, v := range list {
			b = appendKeyString(b, v)
		}
	}
	return b
}

// appendKeyString appends v to a key after its length.
func appendKeyString(b []byte, v string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

func windowText(r model.Reservation) string {
	from, to := "now", "open-ended"
	if !r.Start.IsZero() {
		from = r.Start.UTC().Format(time.RFC3339)
	}
	if !r.End.IsZero() {
		to = r.End.UTC().Format(time.RFC3339)
	}
	return "from " + from + " to " + to
}

// classQueue holds the queued jobs of one priority class by tenant.
type classQueue struct {
	tenants []*tenantQueue
}

type tenantQueue struct {
	state *tenantState
	name  string
	jobs  []*model.Job
	// The tenant's share and whether jobs[0] fits within its guarantee,
	// as next found them when keyHead was jobs[0] and the state's use was
	// numbered keyCounts.
	share     float64
	within    bool
	keyHead   *model.Job
	keyCounts uint64
}

// next returns the tenant to serve: first those whose next job fits inside
// their partition's guarantee (so reclaiming comes before borrowing), then
// the lowest fair share, then the name.
func (q *classQueue) next(st *state) *tenantQueue {
	var best *tenantQueue
	var bestShare float64
	bestIn := false
	for _, t := range q.tenants {
		if len(t.jobs) == 0 {
			continue
		}
		if t.keyHead != t.jobs[0] || t.keyCounts != st.counts {
			// Only a bind or release changes a share or a partition's
			// use; only serving a tenant changes its head.
			t.share, t.within = st.queueKey(t)
			t.keyHead, t.keyCounts = t.jobs[0], st.counts
		}
		sh, in := t.share, t.within
		if best == nil || (in && !bestIn) || (in == bestIn && sh < bestShare) {
			best, bestShare, bestIn = t, sh, in
		}
	}
	return best
}

// queueKey is what next orders t by: its share, and whether its next job
// fits inside its partition's unused guarantee.
func (st *state) queueKey(t *tenantQueue) (share float64, within bool) {
	ts := t.state
	if ts == nil {
		return 0, false
	}
	return ts.share(), st.withinGuarantee(ts, t.jobs[0])
}

// withinGuarantee reports whether j fits inside what t's partition is
// guaranteed and not yet using in some pool j may run in.
func (st *state) withinGuarantee(t *tenantState, j *model.Job) bool {
	p := t.partition
	if p == nil {
		return false
	}
	total := j.Spec.Resources.TotalMilli()
	for k, g := range p.guar {
		if g > 0 && p.used[k]+total <= g && j.Spec.Resources.AcceptsModel(st.pools[k].gpuModel) &&
			j.Spec.Placement.AllowsRegion(st.pools[k].region) {
			return true
		}
	}
	return false
}

// queues groups the queued jobs by class, highest first, and tenant; each
// tenant's jobs are ordered by priority inside the class, then age, then ID.
func (st *state) queues(jobs []*model.Job) []*classQueue {
	// The queued jobs go into one slice, by class and tenant (a counting
	// sort), each tenant's run then sorted and handed out as its queue: a
	// long queue costs a few allocations, not one per tenant and growth.
	type group struct {
		class  model.Class
		tenant string
		n, at  int
	}
	var groups []group
	index := map[string]*[model.ClassReserved + 1]int{} // by tenant and class: 1 + the group's index
	of := slices.Grow(st.queueOf[:0], len(jobs))[:len(jobs)]
	st.queueOf = of
	queued := 0
	for i, j := range jobs {
		of[i] = -1
		c := j.Spec.Priority.Class
		if j.Status.State != model.StateQueued || c < model.ClassSpot || c > model.ClassReserved {
			continue
		}
		byClass := index[j.Spec.Tenant]
		if byClass == nil {
			byClass = new([model.ClassReserved + 1]int)
			index[j.Spec.Tenant] = byClass
		}
		if byClass[c] == 0 {
			groups = append(groups, group{class: c, tenant: j.Spec.Tenant})
			byClass[c] = len(groups)
		}
		g := byClass[c] - 1
		groups[g].n++
		of[i] = g
		queued++
	}
	order := make([]int, len(groups))
	for g := range order {
		order[g] = g
	}
	slices.SortFunc(order, func(x, y int) int {
		if c := cmp.Compare(groups[y].class, groups[x].class); c != 0 {
			return c
		}
		return strings.Compare(groups[x].tenant, groups[y].tenant)
	})
	at := 0
	for _, g := range order {
		groups[g].at = at
		at += groups[g].n
	}
	all := slices.Grow(st.queueAll[:0], queued)[:queued] // the cycle's queues are read before the next one's
	st.queueAll = all
	for i, j := range jobs {
		if g := of[i]; g >= 0 {
			all[groups[g].at] = j
			groups[g].at++
		}
	}
	var out []*classQueue
	for x, g := range order {
		gr := groups[g]
		tq := &tenantQueue{name: gr.tenant, state: st.tenants[gr.tenant], jobs: all[gr.at-gr.n : gr.at : gr.at]}
		slices.SortFunc(tq.jobs, func(a, b *model.Job) int {
			if a.Spec.Priority.Value != b.Spec.Priority.Value {
				return cmp.Compare(b.Spec.Priority.Value, a.Spec.Priority.Value)
			}
			if c := a.Status.SubmittedAt.Compare(b.Status.SubmittedAt); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
		if x == 0 || groups[order[x-1]].class != gr.class {
			out = append(out, &classQueue{})
		}
		q := out[len(out)-1]
		q.tenants = append(q.tenants, tq)
	}
	return out
}
