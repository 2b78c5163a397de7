package schedtest

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// Cycle is the world as one cycle found it, kept to check the cycle's Plan
// against the rules that depend on what the cycle saw: which nodes each
// reservation held, and what capacity others lent. Take it before
// Schedule; Check the Plan after.
type Cycle struct {
	w    *World
	now  time.Time
	jobs map[string]heldJob
	// Reserved maps a node to the reservation that holds it in this cycle,
	// worked out from the rule the core documents (not from its code).
	Reserved map[string]model.Reservation
	// Earmarked maps a node to the reservation ahead (its start after now)
	// that keeps it for its start, by the same documented rule.
	Earmarked map[string]model.Reservation
	// ResizeInterval is the core's Config.ResizeInterval (zero: its
	// default) and MinRunTime its Config.MinRunTime (BeforeCycle's cfg),
	// for the rules of resizes and of work on reserved nodes.
	ResizeInterval, MinRunTime time.Duration
}

func (c *Cycle) resizeInterval() time.Duration {
	if c.ResizeInterval > 0 {
		return c.ResizeInterval
	}
	return model.DefaultResizeInterval
}

type heldJob struct {
	job    *model.Job
	allocs []model.Allocation // as the cycle found them
}

// BeforeCycle records w at now, before a cycle plans over it by cfg (the
// core's defaults when none is given; only its MinRunTime and
// ResizeInterval are read).
func BeforeCycle(w *World, now time.Time, cfg ...sched.Config) *Cycle {
	c := &Cycle{w: w, now: now, jobs: map[string]heldJob{}}
	if len(cfg) > 0 {
		c.MinRunTime, c.ResizeInterval = cfg[0].MinRunTime, cfg[0].ResizeInterval
	}
	for _, j := range w.Jobs {
		h := heldJob{job: j}
		if j.Status.State.Holds() {
			h.allocs = append([]model.Allocation(nil), j.Status.Allocations...)
		}
		c.jobs[j.ID] = h
	}
	c.Reserved = c.reserve()
	c.Earmarked = c.earmark()
	return c
}

// reserve gives each active reservation, in order, Count Ready nodes of its
// SKU and region not taken before: those running work that names it, then
// those holding no other tenant's work (while the owner's work that names
// it is queued, those whose owner's work loses the fewest GPU-seconds
// first, idle ones before all), then (for a reservation with a start)
// those whose other tenants' work is all spot or work that, from its
// start, precedes the reservation (Precedes), then those whose other
// tenants' work loses the fewest GPU-seconds since its last checkpoint,
// then by name; while all the owner's queued work naming it names its
// nodes, the nodes none of it may use after all others; taken from as few
// clusters as it can (fewClusters).
func (c *Cycle) reserve() map[string]model.Reservation {
	type cand struct {
		name string
		tier int
		cost float64
	}
	out := map[string]model.Reservation{}
	active := false
	for _, r := range c.w.Tenancy.Reservations {
		active = active || r.ActiveAt(c.now)
	}
	if !active {
		return out
	}
	onNode := map[string][]*model.Job{} // in the order of w.Jobs, each job once
	for _, j := range c.w.Jobs {
		for _, a := range c.jobs[j.ID].allocs {
			if list := onNode[a.Node]; len(list) == 0 || list[len(list)-1] != j {
				onNode[a.Node] = append(list, j)
			}
		}
	}
	for _, r := range c.w.Tenancy.Reservations {
		if !r.ActiveAt(c.now) {
			continue
		}
		waiting := false         // the owner's work that names r is queued
		var steered []*model.Job // that work, while all of it names its nodes
		free := false            // some of it names none
		for _, j := range c.w.Jobs {
			if j.Status.State == model.StateQueued && j.Spec.Tenant == r.Owner && j.Spec.Placement.Reservation == r.Name {
				waiting = true
				if len(j.Spec.Placement.Nodes)+len(j.Spec.Placement.ExcludeNodes) == 0 {
					free = true
				}
				steered = append(steered, j)
			}
		}
		// wanted: some of the queued work naming r may use node n.
		wanted := func(n string) bool {
			if free || len(steered) == 0 {
				return true
			}
			for _, j := range steered {
				if j.Spec.Placement.AllowsNode(n) {
					return true
				}
			}
			return false
		}
		var cands []cand
		for _, n := range c.w.Fleet.Nodes {
			if _, taken := out[n.Name]; taken || n.Health != model.NodeReady || n.SKU != r.SKU || n.Region != r.Region {
				continue
			}
			x := cand{name: n.Name, tier: 1}
			named, foreign, spot := false, false, true
			var own float64
			for _, j := range onNode[n.Name] {
				switch {
				case j.Spec.Tenant != r.Owner:
					foreign = true
					spot = spot && (j.Spec.Priority.Class == model.ClassSpot ||
						(!r.Start.IsZero() && c.precedesFrom(j, j.Status.StartedAt, r)))
					x.cost += c.lost(j)
				case j.Spec.Placement.Reservation == r.Name:
					named = true
				case waiting:
					own += c.lost(j)
				}
			}
			switch {
			case named:
				x.tier = 0
			case foreign && spot && !r.Start.IsZero():
				x.tier = 2
			case foreign:
				x.tier = 3
			default:
				x.cost = own
			}
			if x.tier > 0 && !wanted(n.Name) {
				x.tier += 4 // after every node the work naming r may use
			}
			cands = append(cands, x)
		}
		sort.Slice(cands, func(a, b int) bool {
			x, y := cands[a], cands[b]
			if x.tier != y.tier {
				return x.tier < y.tier
			}
			if x.cost != y.cost {
				return x.cost < y.cost
			}
			return x.name < y.name
		})
		rs := make([]ranked, len(cands))
		for i, x := range cands {
			rs[i] = ranked{name: x.name, tier: x.tier, cost: x.cost}
		}
		for _, name := range fewClusters(&c.w.Fleet, rs, r.Count) {
			out[name] = r
		}
	}
	return out
}

// lost is the GPU-seconds j loses if evicted at the cycle's now.
func (c *Cycle) lost(j *model.Job) float64 {
	since := j.Status.StartedAt
	if j.Status.LastCheckpoint.After(since) {
		since = j.Status.LastCheckpoint
	}
	d := max(c.now.Sub(since).Seconds(), 0)
	var m int64
	for _, a := range c.jobs[j.ID].allocs {
		m += a.GPUMilli * int64(len(a.GPUs))
	}
	return d * float64(m) / model.MilliPerGPU
}

// Check verifies p against what the cycle saw: a job bound on a reserved
// node is the owner's, spot work, or names that reservation; a job that
// names a reservation is bound only on its nodes; and a job bound beyond
// its partition's guarantee took only capacity others lend. Binds are
// replayed in the order the core made them, each after the preemptions
// made for it.
func (c *Cycle) Check(p sched.Plan) error {
	for _, b := range p.Binds {
		j := c.jobs[b.Job].job
		if j == nil {
			return fmt.Errorf("plan binds unknown job %s", b.Job)
		}
		for _, n := range b.Nodes {
			r, reserved := c.Reserved[n.Node]
			if name := j.Spec.Placement.Reservation; name != "" {
				if !reserved || r.Name != name {
					return fmt.Errorf("%s names reservation %s but is bound on %s (reserved: %q)", j.ID, name, n.Node, r.Name)
				}
				continue
			}
			if reserved && r.Owner != j.Spec.Tenant && j.Spec.Priority.Class != model.ClassSpot {
				return fmt.Errorf("%s of %s (%s) is bound on %s, reserved for %s by %s",
					j.ID, j.Spec.Tenant, j.Spec.Priority.Class, n.Node, r.Owner, r.Name)
			}
			if e, ok := c.Earmarked[n.Node]; ok && !c.Precedes(j, e) {
				return fmt.Errorf("%s of %s (%s, retry.timeout %s) is bound on %s, which reservation %s of %s takes at %s",
					j.ID, j.Spec.Tenant, j.Spec.Priority.Class, j.Spec.Retry.Timeout, n.Node, e.Name, e.Owner, e.Start)
			}
		}
	}
	if err := c.checkResizes(p); err != nil {
		return err
	}
	return c.checkLending(p)
}

// checkResizes verifies the plan's resizes by the rules of model.Elastic:
// only running elastic jobs, within their range and step, the instances
// kept where they ran, growth only after the resize interval, for nobody,
// on the job's GPU model and cluster and never on what a preemption of
// this plan freed or a reservation keeps from the job; a shrink only for a
// job the plan binds, which a preemption of the job would also be for.
func (c *Cycle) checkResizes(p sched.Plan) error {
	interval := c.resizeInterval()
	bound := map[string]bool{}
	for _, b := range p.Binds {
		bound[b.Job] = true
	}
	displaced := map[string]bool{} // bound in the cycle, then displaced by a preemption
	for _, x := range p.Pending {
		if strings.HasPrefix(x.Detail, "displaced in this cycle by ") {
			displaced[x.Job] = true
		}
	}
	freed := map[string]bool{} // node/GPU a preemption of this plan freed
	for _, pr := range p.Preemptions {
		for _, a := range c.jobs[pr.Job].allocs {
			for _, g := range a.GPUs {
				freed[fmt.Sprintf("%s/%d", a.Node, g)] = true
			}
		}
	}
	nodes := map[string]model.Node{}
	for _, n := range c.w.Fleet.Nodes {
		nodes[n.Name] = n
	}
	seen := map[string]bool{}
	for _, r := range p.Resizes {
		h, ok := c.jobs[r.Job]
		j := h.job
		switch {
		case !ok:
			return fmt.Errorf("plan resizes unknown job %s", r.Job)
		case seen[r.Job]:
			return fmt.Errorf("plan resizes %s twice", r.Job)
		case j.Spec.Elastic == nil:
			return fmt.Errorf("plan resizes %s, which is not elastic", r.Job)
		case j.Status.State != model.StateRunning:
			return fmt.Errorf("plan resizes %s, which is %s", r.Job, j.Status.State)
		case r.From != len(h.allocs) || len(r.Nodes) != r.To || r.From == r.To:
			return fmt.Errorf("resize of %s from %d to %d with %d placements; it holds %d", r.Job, r.From, r.To, len(r.Nodes), len(h.allocs))
		}
		seen[r.Job] = true
		e := j.Spec.Elastic
		if r.To < e.MinInstances || r.To > e.MaxInstances || (r.To-r.From)%e.StepOrOne() != 0 {
			return fmt.Errorf("resize of %s to %d instances, outside %s", r.Job, r.To, e)
		}
		for i := range min(r.From, r.To) {
			if x, y := r.Nodes[i], h.allocs[i]; x.Node != y.Node || fmt.Sprint(x.GPUs) != fmt.Sprint(y.GPUs) {
				return fmt.Errorf("resize of %s moves instance %d from %s %v to %s %v", r.Job, i, y.Node, y.GPUs, x.Node, x.GPUs)
			}
		}
		if r.To < r.From {
			if !bound[r.For] && !displaced[r.For] {
				return fmt.Errorf("%s shrank for %s, which the plan does not bind", r.Job, r.For)
			}
			continue
		}
		if r.For != "" || r.Reason != sched.IdleCapacity {
			return fmt.Errorf("%s grew for %q (%s): growth is for nobody", r.Job, r.For, r.Reason)
		}
		if c.now.Before(j.Status.StartedAt.Add(interval)) {
			return fmt.Errorf("%s grew %s after its attempt started, before the resize interval %s", r.Job, c.now.Sub(j.Status.StartedAt), interval)
		}
		first := nodes[r.Nodes[0].Node]
		for _, x := range r.Nodes[r.From:] {
			n := nodes[x.Node]
			if n.Cluster != first.Cluster || c.w.Fleet.Catalog[n.SKU].GPUModel != c.w.Fleet.Catalog[first.SKU].GPUModel {
				return fmt.Errorf("%s grew onto %s (%s), off its cluster %s and GPU model", r.Job, x.Node, n.Cluster, first.Cluster)
			}
			for _, g := range x.GPUs {
				if freed[fmt.Sprintf("%s/%d", x.Node, g)] {
					return fmt.Errorf("%s grew onto GPU %d of %s, which a preemption of this plan freed", r.Job, g, x.Node)
				}
			}
			if res, ok := c.Reserved[x.Node]; ok && res.Owner != j.Spec.Tenant && j.Spec.Priority.Class != model.ClassSpot {
				return fmt.Errorf("%s grew onto %s, reserved for %s by %s", r.Job, x.Node, res.Owner, res.Name)
			}
			if name := j.Spec.Placement.Reservation; name != "" {
				if res, ok := c.Reserved[x.Node]; !ok || res.Name != name {
					return fmt.Errorf("%s names reservation %s but grew onto %s", r.Job, name, x.Node)
				}
			}
			if ear, ok := c.Earmarked[x.Node]; ok && !c.Precedes(j, ear) {
				return fmt.Errorf("%s grew onto %s, which reservation %s takes at %s", r.Job, x.Node, ear.Name, ear.Start)
			}
		}
	}
	return nil
}

// checkLending replays p over the cycle's pools.
func (c *Cycle) checkLending(p sched.Plan) error {
	type poolKey struct{ region, gpuModel string }
	nodes := map[string]model.Node{}
	free := map[poolKey]int64{} // on Ready nodes
	for _, n := range c.w.Fleet.Nodes {
		nodes[n.Name] = n
		if n.Health == model.NodeReady {
			sku := c.w.Fleet.Catalog[n.SKU]
			free[poolKey{n.Region, sku.GPUModel}] += int64(sku.GPUs) * model.MilliPerGPU
		}
	}
	partitionOf := map[string]string{}
	for _, t := range c.w.Tenancy.Tenants {
		partitionOf[t.Name] = t.Partition
	}
	used := map[string]map[poolKey]int64{} // partition -> pool -> milli
	charge := func(j *model.Job, allocs []model.Allocation, sign int64) {
		for _, a := range allocs {
			n := nodes[a.Node]
			k := poolKey{n.Region, c.w.Fleet.Catalog[n.SKU].GPUModel}
			m := sign * a.GPUMilli * int64(len(a.GPUs))
			if n.Health == model.NodeReady {
				free[k] -= m
			}
			if p := partitionOf[j.Spec.Tenant]; p != "" {
				if used[p] == nil {
					used[p] = map[poolKey]int64{}
				}
				used[p][k] += m
			}
		}
	}
	for _, h := range c.jobs {
		charge(h.job, h.allocs, +1)
	}
	bound := map[string]bool{}
	for _, b := range p.Binds {
		bound[b.Job] = true
	}
	byFor := map[string][]string{}
	for _, pr := range p.Preemptions {
		if bound[pr.For] {
			byFor[pr.For] = append(byFor[pr.For], pr.Job)
			continue
		}
		// Made for a job displaced later in the cycle: releasing its victims
		// from the start only makes more capacity lendable.
		charge(c.jobs[pr.Job].job, c.jobs[pr.Job].allocs, -1)
	}
	guar := map[string][]guarantee{}
	for _, part := range c.w.Tenancy.Partitions {
		guar[part.Name] = guarantees(part)
	}
	// protected is the idle guaranteed capacity of pool k that partitions
	// other than p keep for themselves.
	protected := func(k poolKey, p string) int64 {
		var sum int64
		for q, gs := range guar {
			for _, g := range gs {
				if q == p || g.lend < 0 || g.region != k.region || g.gpuModel != k.gpuModel {
					continue
				}
				sum += max(0, g.milli-g.lend-used[q][k])
			}
		}
		return sum
	}
	shrunkFor := map[string][]sched.Resize{}
	for _, r := range p.Resizes {
		switch {
		case r.To >= r.From:
		case bound[r.For]:
			shrunkFor[r.For] = append(shrunkFor[r.For], r)
		default: // for a job displaced later, as preemptions above
			charge(c.jobs[r.Job].job, c.jobs[r.Job].allocs[r.To:], -1)
		}
	}
	// borrows checks that job may take m milli of pool k beyond its
	// partition's guarantee only from what others lend.
	borrows := func(j *model.Job, k poolKey, m int64) error {
		part := partitionOf[j.Spec.Tenant]
		var g int64
		for _, x := range guar[part] {
			if x.region == k.region && x.gpuModel == k.gpuModel {
				g = x.milli
			}
		}
		if m > 0 && used[part][k]+m > g {
			if prot := protected(k, part); prot > 0 && free[k]-prot < m {
				return fmt.Errorf("%s of partition %q borrows %d milli of %s in %s, but only %d are free and %d of them are not lent",
					j.ID, part, m, k.gpuModel, k.region, free[k], prot)
			}
		}
		return nil
	}
	allocsOf := func(ps []sched.Placement) []model.Allocation {
		allocs := make([]model.Allocation, len(ps))
		for i, x := range ps {
			allocs[i] = model.Allocation{Node: x.Node, GPUs: x.GPUs, GPUMilli: x.GPUMilli}
		}
		return allocs
	}
	milliOf := func(ps []sched.Placement) int64 {
		var m int64
		for _, x := range ps {
			m += x.GPUMilli * int64(len(x.GPUs))
		}
		return m
	}
	for _, b := range p.Binds {
		for _, v := range byFor[b.Job] {
			charge(c.jobs[v].job, c.jobs[v].allocs, -1)
		}
		for _, r := range shrunkFor[b.Job] {
			charge(c.jobs[r.Job].job, c.jobs[r.Job].allocs[r.To:], -1)
		}
		j := c.jobs[b.Job].job
		n := nodes[b.Nodes[0].Node]
		k := poolKey{n.Region, c.w.Fleet.Catalog[n.SKU].GPUModel}
		if err := borrows(j, k, milliOf(b.Nodes)); err != nil {
			return err
		}
		charge(j, allocsOf(b.Nodes), +1)
	}
	// Growth comes after every bind, on what they left.
	for _, r := range p.Resizes {
		if r.To < r.From {
			continue
		}
		j := c.jobs[r.Job].job
		n := nodes[r.Nodes[0].Node]
		k := poolKey{n.Region, c.w.Fleet.Catalog[n.SKU].GPUModel}
		if err := borrows(j, k, milliOf(r.Nodes[r.From:])); err != nil {
			return err
		}
		charge(j, allocsOf(r.Nodes[r.From:]), +1)
	}
	return nil
}
