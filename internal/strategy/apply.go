package strategy

import (
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// Workloads that the hybrid strategy's overflow layer runs as spot: the
// values of the workload label of non-urgent work.
var Overflow = []string{"batch", "developer"}

// Apply returns the Snapshot the core schedules at now under
// snap.Tenancy's strategy; see the package documentation. snap itself is
// returned when nothing changes, as it is without a strategy.
func Apply(snap *sched.Snapshot, now time.Time) *sched.Snapshot {
	if snap == nil || snap.Tenancy == nil {
		return snap
	}
	switch snap.Tenancy.Strategy {
	case "":
		return snap
	case model.StrategyStatic:
		out := *snap
		out.Tenancy = fenced(snap.Tenancy, snap.Fleet, now)
		return &out
	case model.StrategyDynamic:
		out := *snap
		out.Tenancy = pooled(snap.Tenancy)
		return &out
	default: // hybrid
		jobs, changed := overflow(snap.Tenancy, snap.Jobs)
		if !changed {
			return snap
		}
		out := *snap
		out.Jobs = jobs
		return &out
	}
}

// fenced is t at now under the static strategy: a partition with
// guarantees may go beyond them in a pool only by the GPUs its tenants'
// reservations hold there then.
func fenced(t *model.Tenancy, f *model.Fleet, now time.Time) *model.Tenancy {
	out := *t
	out.Partitions = make([]model.Partition, len(t.Partitions))
	zero := 0
	reserved := reservedGPUs(t, f, now)
	limit := func(part string, pool [2]string) *int {
		n := reserved[part][pool]
		return &n
	}
	var all [][2]string // the fleet's pools, read at the first partition with guarantees
	for i, p := range t.Partitions {
		q := p
		if len(p.Guarantees) > 0 {
			if all == nil {
				all = pools(f)
			}
			q.Guarantees = make([]model.Guarantee, 0, len(p.Guarantees))
			have := map[[2]string]bool{}
			for _, g := range p.Guarantees {
				pool := [2]string{g.Region, g.GPUModel}
				g.BorrowLimit, g.LendLimit = limit(p.Name, pool), &zero
				have[pool] = true
				q.Guarantees = append(q.Guarantees, g)
			}
			for _, pool := range all {
				if !have[pool] {
					q.Guarantees = append(q.Guarantees, model.Guarantee{Region: pool[0], GPUModel: pool[1],
						BorrowLimit: limit(p.Name, pool), LendLimit: &zero})
				}
			}
		}
		out.Partitions[i] = q
	}
	return &out
}

// reservedGPUs sums, per partition and pool, the GPUs of the reservations
// its tenants own that are active at now: capacity bought for the
// partition's own work. One outside its window lets nobody borrow.
func reservedGPUs(t *model.Tenancy, f *model.Fleet, now time.Time) map[string]map[[2]string]int {
	out := map[string]map[[2]string]int{}
	if f == nil {
		return out
	}
	for _, r := range t.Reservations {
		owner, ok := t.Tenant(r.Owner)
		sku, known := f.Catalog[r.SKU]
		if !ok || !known || owner.Partition == "" || !r.ActiveAt(now) {
			continue
		}
		if out[owner.Partition] == nil {
			out[owner.Partition] = map[[2]string]int{}
		}
		out[owner.Partition][[2]string{r.Region, sku.GPUModel}] += r.Count * sku.GPUs
	}
	return out
}

// pools lists the fleet's (region, GPU model) pairs in node order.
func pools(f *model.Fleet) [][2]string {
	if f == nil {
		return nil
	}
	return f.Pools()
}

// pooled is t under the dynamic strategy.
func pooled(t *model.Tenancy) *model.Tenancy {
	out := *t
	out.Partitions = make([]model.Partition, len(t.Partitions))
	for i, p := range t.Partitions {
		p.Guarantees = nil
		out.Partitions[i] = p
	}
	return &out
}

// overflow returns jobs with the non-urgent ones of class standard moved
// to the spot class (copies), and whether any was.
func overflow(t *model.Tenancy, jobs []*model.Job) ([]*model.Job, bool) {
	var out []*model.Job
	for i, j := range jobs {
		if j.Spec.Priority.Class != model.ClassStandard || !NonUrgent(t, &j.Spec) {
			if out != nil {
				out = append(out, j)
			}
			continue
		}
		if out == nil {
			out = make([]*model.Job, i, len(jobs))
			copy(out, jobs[:i])
		}
		c := *j
		c.Spec.Priority = model.Priority{Class: model.ClassSpot, Value: j.Spec.Priority.Value}
		out = append(out, &c)
	}
	if out == nil {
		return jobs, false
	}
	return out, true
}

// NonUrgent reports whether the work of spec is what the hybrid strategy's
// overflow layer runs as spot: its workload label (its own, else its
// tenant's, else its partition's) is one of Overflow, and its tenant is
// not a customer.
func NonUrgent(t *model.Tenancy, spec *model.JobSpec) bool {
	var tenant *model.Tenant
	var part *model.Partition
	for i := range t.Tenants {
		if t.Tenants[i].Name == spec.Tenant {
			tenant = &t.Tenants[i]
			break
		}
	}
	if tenant != nil && tenant.Kind == model.TenantCustomer {
		return false // a paying customer's work keeps the class it bought
	}
	if tenant != nil {
		for i := range t.Partitions {
			if t.Partitions[i].Name == tenant.Partition {
				part = &t.Partitions[i]
				break
			}
		}
	}
	// The label as model.WorkLabels merges it (the job's own, else its
	// tenant's, else its partition's), without building the merged map:
	// this runs for every job of every cycle.
	w, ok := spec.Labels["workload"]
	if !ok && tenant != nil {
		w, ok = tenant.Labels["workload"]
	}
	if !ok && part != nil {
		w = part.Labels["workload"]
	}
	for _, o := range Overflow {
		if w == o {
			return true
		}
	}
	return false
}
