package policy

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// Override is one job whose priority an action changed, or wanted to.
type Override struct {
	Job    string
	Policy string
	Action model.ActionKind
	From   model.Priority
	To     model.Priority
	// Detail says why, for a person: "beyond the 30% floor of 10 GPUs".
	Detail string
}

// Adjustment is what Adjust made of a Snapshot.
type Adjustment struct {
	// Snapshot is the copy for the core to schedule: the fleet, tenancy
	// and unchanged jobs are shared with the original, a changed job is a
	// copy. Its Jobs is a new slice when a job changed, the original's
	// otherwise; neither is to be written to.
	Snapshot *sched.Snapshot
	// Overrides are the changes made, in the order of the firings.
	Overrides []Override
	// Ignored are the jobs an action targets but leaves as they are, To
	// being From: those an earlier policy (or an earlier action of the
	// same one) had already decided (changed, or kept within a scale_down
	// floor), Detail naming the one that won; and a customer's work that
	// the action would lower without naming its tenant under tenants
	// (exempt), Detail saying so.
	Ignored []Override
}

// Adjust expresses the actions of the firing policies as inputs of the
// core: the priority class of the queued and capacity-holding jobs they
// target, in a copy of snap. The first decision about a job wins: firings
// are applied in their order (the order of the policies file), the actions
// of one firing in theirs. An action never lowers the class of a customer
// tenant's work unless it names the tenant (model.Action.Tenants); such
// work is reported in Ignored, not decided, so a later action may still
// decide it. now is the time of the cycle, for the work a running job
// would lose. snap is not changed.
func Adjust(snap *sched.Snapshot, ps *model.PolicySet, active []Firing, now time.Time) Adjustment {
	var a Adjuster
	return a.Adjust(snap, ps, active, now)
}

// An Adjuster is Adjust with buffers kept from one call to the next, for a
// driver that adjusts every cycle (Adjust visits the whole queue). The
// zero Adjuster is ready; one is not for concurrent use.
type Adjuster struct {
	facts   []jobFacts
	claimed []int32
	jobs    []target
	choices []choice
	running []runningJob
	queued  []target
}

// Adjust is the package's Adjust, on sc's buffers.
func (sc *Adjuster) Adjust(snap *sched.Snapshot, ps *model.PolicySet, active []Firing, now time.Time) Adjustment {
	out := Adjustment{Snapshot: &sched.Snapshot{Fleet: snap.Fleet, Tenancy: snap.Tenancy, Jobs: snap.Jobs, Images: snap.Images}}
	if len(active) == 0 {
		return out
	}
	w := newWork(snap)
	// What the actions ask of each job, read once: they visit every job,
	// and a busy queue does not fit in the processor's caches.
	facts := sc.facts[:0]
	for _, j := range snap.Jobs {
		facts = append(facts, w.factsOf(j))
	}
	sc.facts = facts
	memo := w.memo()
	claimed := resized(&sc.claimed, len(snap.Jobs)) // by place: 1 + the index in active of the firing that decided the job
	changed := false                                // out.Snapshot.Jobs is a copy of snap.Jobs
	for fi, f := range active {
		for _, a := range f.Actions {
			jobs := sc.jobs[:0] // the jobs the action chose, with their place in the Snapshot
			targets := workTargets(ps, a.Targets)
			clear(memo)
			for i, j := range snap.Jobs {
				if !w.actsOn(j, facts[i], a.Action, targets, memo) {
					continue
				}
				ignore := func(detail string) {
					out.Ignored = append(out.Ignored, Override{Job: j.ID, Policy: f.Policy, Action: a.Kind,
						From: j.Spec.Priority, To: j.Spec.Priority, Detail: detail})
				}
				if by := claimed[i]; by > 0 {
					ignore("already decided by " + active[by-1].Policy)
					continue
				}
				if spares(w.tenant(facts[i]), j, ps, a.Action) {
					if lowered(ps, a.Action, j) {
						ignore(fmt.Sprintf("customer work is exempt unless the action names its tenant: %s is not under tenants", j.Spec.Tenant))
					}
					continue
				}
				jobs = append(jobs, target{j, i})
			}
			sc.jobs = jobs
			sc.choices = decide(ps, a, jobs, now, sc)
			for _, c := range sc.choices {
				j := c.job
				claimed[c.at] = int32(fi + 1)
				if c.keep || c.to == j.Spec.Priority {
					continue
				}
				if !changed {
					out.Snapshot.Jobs, changed = slices.Clone(snap.Jobs), true
				}
				cp := *j
				cp.Spec.Priority = c.to
				out.Snapshot.Jobs[c.at] = &cp
				out.Overrides = append(out.Overrides, Override{Job: j.ID, Policy: f.Policy, Action: a.Kind,
					From: j.Spec.Priority, To: c.to, Detail: c.detail})
			}
		}
	}
	return out
}

// resized is *buf holding n zeros, its storage kept when large enough.
func resized[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	} else {
		*buf = (*buf)[:n]
		clear(*buf)
	}
	return *buf
}

// target is a job an action acts on and its place in the Snapshot (at),
// carried along so that a decision finds its place without a map.
type target struct {
	job *model.Job
	at  int
}

// choice is what an action decides for one job: a priority, or to keep it
// as it is (a scale_down keeps work up to its floor).
type choice struct {
	target
	to     model.Priority
	keep   bool
	detail string
}

// decide applies one action to the jobs it targets: a choice for each, in
// sc.choices' storage.
func decide(ps *model.PolicySet, a Action, jobs []target, now time.Time, sc *Adjuster) []choice {
	out := sc.choices[:0]
	switch a.Kind {
	case model.ActionMigrate:
		to := *ps.Targets[a.Destination].Class // Validate made sure it is a destination
		detail := fmt.Sprintf("migrated to %s (class %s)", a.Destination, to)
		for _, t := range jobs {
			out = append(out, choice{target: t, to: model.Priority{Class: to, Value: t.job.Spec.Priority.Value}, detail: detail})
		}
	case model.ActionReallocate:
		for _, t := range jobs {
			j := t.job
			to := j.Spec.Priority
			if to.Class < a.Priority.Class {
				to.Class = a.Priority.Class
				if a.Priority.Value != 0 {
					to.Value = a.Priority.Value
				}
			}
			c := choice{target: t, to: to}
			if to != j.Spec.Priority { // unchanged work is decided without a word
				c.detail = fmt.Sprintf("raised to %s", to)
			}
			out = append(out, c)
		}
	case model.ActionScaleDown:
		out = scaleDown(a, jobs, now, sc)
	}
	return out
}

// scaleDown keeps the target's running work, most valuable first, until it
// holds the floor (MinCapacity of the baseline); the rest of its running
// work and all of its queued work runs as spot, which the core evicts
// first whenever other work needs the room. The choices go in
// sc.choices' storage.
func scaleDown(a Action, jobs []target, now time.Time, sc *Adjuster) []choice {
	running, queued := sc.running[:0], sc.queued[:0]
	defer func() { sc.running, sc.queued = running, queued }()
	var held int64
	for _, t := range jobs {
		if t.job.Status.State.Holds() {
			running = append(running, runningJob{t, lost(t.job, now)})
			held += heldMilli(t.job)
		} else {
			queued = append(queued, t)
		}
	}
	base := a.Baseline
	if !a.BaselineKnown {
		base = held
	}
	floor := int64(math.Ceil(a.MinCapacity*float64(base) - 1e-9))
	// Keep first what the core would evict last: the higher priority, then
	// the work that would lose the most since its last checkpoint.
	slices.SortStableFunc(running, func(x, y runningJob) int {
		p, q := x.job, y.job
		if p.Spec.Priority != q.Spec.Priority {
			if q.Spec.Priority.Less(p.Spec.Priority) {
				return -1
			}
			return 1
		}
		if x.lost != y.lost {
			if x.lost > y.lost {
				return -1
			}
			return 1
		}
		if !p.Status.StartedAt.Equal(q.Status.StartedAt) {
			return p.Status.StartedAt.Compare(q.Status.StartedAt)
		}
		return strings.Compare(p.ID, q.ID)
	})
	floorText := fmt.Sprintf("%.0f%% floor of %s", a.MinCapacity*100, gpus(base))
	// The details, made once for every job they explain.
	within, beyond, queuedText := "within the "+floorText, "beyond the "+floorText, "queued while scaled down to the "+floorText
	var kept int64
	out := sc.choices[:0]
	for _, r := range running {
		j := r.job
		if kept < floor {
			kept += heldMilli(j)
			out = append(out, choice{target: r.target, to: j.Spec.Priority, keep: true, detail: within})
			continue
		}
		out = append(out, choice{target: r.target, to: spot(j), detail: beyond})
	}
	for _, t := range queued {
		out = append(out, choice{target: t, to: spot(t.job), detail: queuedText})
	}
	return out
}

// runningJob is a running job scale_down may keep, with its loss,
// computed once rather than at every comparison of the sort.
type runningJob struct {
	target
	lost float64
}

func spot(j *model.Job) model.Priority {
	return model.Priority{Class: model.ClassSpot, Value: j.Spec.Priority.Value}
}

// lost is the GPU-seconds j would lose if evicted at now: its GPUs times
// the time since its last checkpoint or its start.
func lost(j *model.Job, now time.Time) float64 {
	since := j.Status.StartedAt
	if c := j.Status.LastCheckpoint; c.After(since) {
		since = c
	}
	d := max(now.Sub(since).Seconds(), 0)
	return d * float64(heldMilli(j)) / model.MilliPerGPU
}

// heldMilli is the milli-GPUs j's allocations hold.
func heldMilli(j *model.Job) int64 {
	var m int64
	for _, a := range j.Status.Allocations {
		m += int64(len(a.GPUs)) * a.GPUMilli
	}
	return m
}

func gpus(milli int64) string {
	if milli%model.MilliPerGPU == 0 {
		return fmt.Sprintf("%d GPUs", milli/model.MilliPerGPU)
	}
	return fmt.Sprintf("%.2f GPUs", float64(milli)/model.MilliPerGPU)
}

// work finds the labels of a job's work: its partition's, its tenant's,
// its own.
type work struct {
	// index numbers the tenants by name, found once per snapshot rather
	// than once per job; tenants holds each one's tenant and partition.
	index   map[string]int32
	tenants []tenantFacts
}

// tenantFacts is a tenant and its partition (nil without one).
type tenantFacts struct {
	tenant *model.Tenant
	part   *model.Partition
}

func newWork(snap *sched.Snapshot) work {
	w := work{index: map[string]int32{}}
	if snap.Tenancy == nil {
		return w
	}
	partitions := map[string]*model.Partition{}
	for i := range snap.Tenancy.Partitions {
		partitions[snap.Tenancy.Partitions[i].Name] = &snap.Tenancy.Partitions[i]
	}
	for i := range snap.Tenancy.Tenants {
		t := &snap.Tenancy.Tenants[i]
		w.index[t.Name] = int32(i)
		w.tenants = append(w.tenants, tenantFacts{tenant: t, part: partitions[t.Partition]})
	}
	return w
}

// jobFacts is what deciding whether an action acts on a job reads of it,
// small so that a long queue's facts stay in the processor's caches.
type jobFacts struct {
	ti     int32 // the tenant's number; -1 for a tenant the tenancy does not have
	live   bool  // Queued or holding capacity
	labels bool  // labels of its own
}

func (w work) factsOf(j *model.Job) jobFacts {
	f := jobFacts{ti: -1, live: j.Status.State == model.StateQueued || j.Status.State.Holds(), labels: len(j.Spec.Labels) > 0}
	if ti, ok := w.index[j.Spec.Tenant]; ok {
		f.ti = ti
	}
	return f
}

// tenant is the tenant f names; nil for one the tenancy does not have.
func (w work) tenant(f jobFacts) *model.Tenant {
	if f.ti < 0 {
		return nil
	}
	return w.tenants[f.ti].tenant
}

// workTargets is the selectors of the targets of work among names, looked
// up and read once for all the jobs an action visits.
func workTargets(ps *model.PolicySet, names []string) []model.Selector {
	var out []model.Selector
	for _, name := range names {
		if tg, ok := ps.Targets[name]; ok && tg.Work() {
			out = append(out, model.NewSelector(tg.Match))
		}
	}
	return out
}

// actsOn reports whether a acts on j, of what f says of it: j is Queued
// or holds capacity, is work of one of a's targets (targets, workTargets),
// and, when a names tenants, of one of them. memo (work.memo, one per
// action) holds a's answers by tenant for jobs without labels of their
// own, which depend on the tenant alone (most of a busy queue): 0 unknown,
// 1 yes, 2 no.
func (w work) actsOn(j *model.Job, f jobFacts, a model.Action, targets []model.Selector, memo []int8) bool {
	if !f.live {
		return false
	}
	t := w.tenant(f)
	if f.labels || len(a.Targets) == 0 || t == nil {
		return (len(a.Tenants) == 0 || a.Names(j.Spec.Tenant)) && w.match(j, f, targets)
	}
	switch memo[f.ti] {
	case 1:
		return true
	case 2:
		return false
	}
	v := (len(a.Tenants) == 0 || a.Names(t.Name)) && w.match(j, f, targets)
	memo[f.ti] = 2
	if v {
		memo[f.ti] = 1
	}
	return v
}

// memo is an empty memo of actsOn's answers by tenant.
func (w work) memo() []int8 { return make([]int8, len(w.tenants)) }

// spares reports whether a, which acts on j, leaves j alone because j is a
// customer tenant's work and a names no tenants: scale_down never takes
// such work (it counts in neither the baseline nor the floor), migrate
// does not move it to a lower class. reallocate only raises and spares
// nothing. t is j's tenant (work.tenant), nil for one the tenancy does
// not have.
func spares(t *model.Tenant, j *model.Job, ps *model.PolicySet, a model.Action) bool {
	if len(a.Tenants) > 0 { // a acts on j only when it names j's tenant
		return false
	}
	if t == nil || t.Kind != model.TenantCustomer {
		return false
	}
	switch a.Kind {
	case model.ActionScaleDown:
		return true
	case model.ActionMigrate:
		return lowered(ps, a, j)
	}
	return false
}

// lowered reports whether a would lower j's class: scale_down to spot,
// migrate to its destination's class.
func lowered(ps *model.PolicySet, a model.Action, j *model.Job) bool {
	switch a.Kind {
	case model.ActionScaleDown:
		return model.ClassSpot < j.Spec.Priority.Class
	case model.ActionMigrate:
		d, ok := ps.Targets[a.Destination]
		return ok && d.Class != nil && *d.Class < j.Spec.Priority.Class
	}
	return false
}

// match reports whether j, of what f says, is work of one of targets.
func (w work) match(j *model.Job, f jobFacts, targets []model.Selector) bool {
	var tf tenantFacts
	if f.ti >= 0 {
		tf = w.tenants[f.ti]
	}
	for _, sel := range targets {
		if sel.WorkMatches(tf.part, tf.tenant, &j.Spec) {
			return true
		}
	}
	return false
}
