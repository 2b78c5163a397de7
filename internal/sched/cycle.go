package sched

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
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
	st.chooseHolders(jobs)
	st.clearKept()
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
	return plan
}

// scheduleJob runs steps 2–5 for one job and records the outcome in plan.
func (st *state) scheduleJob(j *model.Job, t *tenantState, plan *Plan, failed map[string]failure) {
	pend := func(r Reason, d string) {
		if h := st.holderIndex(j); h >= 0 {
			d += st.holderNote(h)
		}
		plan.Pending = append(plan.Pending, Pending{Job: j.ID, Reason: r, Detail: d})
	}
	if _, known := st.tenants[j.Spec.Tenant]; !known || t == nil {
		names := make([]string, 0, len(st.tenants))
		for name := range st.tenants {
			names = append(names, name)
		}
		slices.Sort(names) // Nearest keeps the first of equally near names
		pend(UnknownTenant, fmt.Sprintf("tenant %q is not defined%s", j.Spec.Tenant, model.DidYouMean(j.Spec.Tenant, names)))
		return
	}
	a := st.newAttempt(j, t)
	if name := j.Spec.Placement.Reservation; name != "" {
		if a.res < 0 {
			pend(ReservationNotActive, fmt.Sprintf("reservation %q does not exist", name))
			return
		}
		r := st.res[a.res]
		switch {
		case r.Owner != t.name:
			pend(ReservationNotActive, fmt.Sprintf("reservation %q belongs to %s", name, r.Owner))
			return
		case !r.active:
			pend(ReservationNotActive, fmt.Sprintf("reservation %q is active %s", name, windowText(r.Reservation)))
			return
		}
	}
	key := shapeKey(a) + st.earmarkKey(a) + st.holdKey(a)
	if f, seen := failed[key]; seen {
		pend(f.Reason, f.Detail)
		return
	}
	// 2–3. Admit and place.
	p, reason, detail := st.place(a)
	if reason != ReasonNone {
		// 4. Preempt.
		counts := st.counts
		victims, until := st.preempt(a)
		if len(victims) == 0 {
			st.counts = counts // every victim tried out was restored: use is as it was
			if !until.IsZero() {
				reason, detail = AwaitingPreemption, fmt.Sprintf("%s; work it may preempt is protected until %s",
					detail, until.UTC().Format(time.RFC3339))
				st.keep(a, until)
			}
			// 5. Explain.
			failed[key] = failure{Pending: Pending{Reason: reason, Detail: detail}, groups: st.shapeGroups(a)}
			pend(reason, detail)
			return
		}
		freed := st.freedScratch()
		for _, v := range victims {
			st.markFreed(v.rj, freed)
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
		// Capacity was freed: verdicts for shapes that could use it may no
		// longer hold.
		for k, f := range failed {
			if intersects(f.groups, freed) {
				delete(failed, k)
			}
		}
		p, reason, detail = st.place(a)
		if reason != ReasonNone {
			// Cannot happen: preempt checked this very placement.
			panic(fmt.Sprintf("sched: %s unplaceable after preemption: %s: %s", j.ID, reason, detail))
		}
	}
	st.bind(a, p, plan)
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

// shapeKey identifies jobs that every filter treats alike, so a verdict for
// one holds for all while capacity only shrinks.
func shapeKey(a *attempt) string {
	s := &a.job.Spec
	r := s.Resources
	b := make([]byte, 0, 96)
	field := func(v string) { b = append(append(b, v...), '|') }
	num := func(v int64) { b = append(strconv.AppendInt(b, v, 10), '|') }
	field(s.Tenant)
	for _, v := range []int64{int64(s.Priority.Class), int64(r.InstanceCount), int64(r.GPUsPerInstance), r.GPUMilli, r.CPUMilli, r.MemoryMiB} {
		num(v)
	}
	for _, list := range [][]string{r.GPUModels, s.Placement.Regions, s.Placement.Nodes, s.Placement.ExcludeNodes} {
		for _, v := range list {
			b = append(append(b, v...), ',')
		}
		b = append(b, '|')
	}
	for _, v := range []string{s.Placement.Residency, string(s.Placement.Interconnect), s.Placement.DataRegion, s.Placement.Reservation, s.Placement.SKU} {
		field(v)
	}
	return string(b)
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
	byClass := map[model.Class]map[string]*tenantQueue{}
	for _, j := range jobs {
		if j.Status.State != model.StateQueued {
			continue
		}
		c := j.Spec.Priority.Class
		if byClass[c] == nil {
			byClass[c] = map[string]*tenantQueue{}
		}
		tq := byClass[c][j.Spec.Tenant]
		if tq == nil {
			tq = &tenantQueue{name: j.Spec.Tenant, state: st.tenants[j.Spec.Tenant]}
			byClass[c][j.Spec.Tenant] = tq
		}
		tq.jobs = append(tq.jobs, j)
	}
	var out []*classQueue
	for c := model.ClassReserved; c >= model.ClassSpot; c-- {
		m := byClass[c]
		if len(m) == 0 {
			continue
		}
		q := &classQueue{}
		for _, tq := range m {
			slices.SortStableFunc(tq.jobs, func(a, b *model.Job) int {
				if a.Spec.Priority.Value != b.Spec.Priority.Value {
					return cmp.Compare(b.Spec.Priority.Value, a.Spec.Priority.Value)
				}
				if c := a.Status.SubmittedAt.Compare(b.Status.SubmittedAt); c != 0 {
					return c
				}
				return strings.Compare(a.ID, b.ID)
			})
			q.tenants = append(q.tenants, tq)
		}
		sort.Slice(q.tenants, func(x, y int) bool { return q.tenants[x].name < q.tenants[y].name })
		out = append(out, q)
	}
	return out
}
