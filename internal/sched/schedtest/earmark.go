package schedtest

import (
	"sort"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Precedes reports whether job j, starting at the cycle's now, may run on a
// node that reservation r keeps for its start: the owner's work, spot work,
// work whose retry.timeout plus checkpoint grace ends it by the start, and
// work that checkpoints whose protection (MinRunTime, an elastic job's
// resize interval if longer) and one checkpoint interval end by the start.
func (c *Cycle) Precedes(j *model.Job, r model.Reservation) bool {
	if j.Spec.Tenant == r.Owner || j.Spec.Priority.Class == model.ClassSpot {
		return true
	}
	return c.precedesFrom(j, c.now, r)
}

// precedesFrom reports whether j, started at at, is gone by r's start
// (its timeout and grace) or evictable then having saved once (its
// protection and one checkpoint interval end by the start) with a
// partition that lends in r's pool.
func (c *Cycle) precedesFrom(j *model.Job, at time.Time, r model.Reservation) bool {
	if endsBy(j, at, r.Start) {
		return true
	}
	guard := c.MinRunTime
	if j.Spec.Elastic != nil {
		guard = max(guard, c.resizeInterval())
	}
	every := j.Spec.Checkpoint.Interval
	return every > 0 && !at.Add(guard+every).After(r.Start) && c.lends(j.Spec.Tenant, r)
}

// lends reports whether the partition of tenant lends in the pool of r's
// nodes: a guarantee there with a lending limit of zero lends nothing.
func (c *Cycle) lends(tenant string, r model.Reservation) bool {
	part := ""
	for _, t := range c.w.Tenancy.Tenants {
		if t.Name == tenant {
			part = t.Partition
		}
	}
	gpuModel := c.w.Fleet.Catalog[r.SKU].GPUModel
	for _, p := range c.w.Tenancy.Partitions {
		if p.Name != part {
			continue
		}
		for _, g := range p.Guarantees {
			if g.Region == r.Region && g.GPUModel == gpuModel && g.LendLimit != nil && *g.LendLimit == 0 {
				return false
			}
		}
	}
	return true
}

func endsBy(j *model.Job, start, by time.Time) bool {
	t := j.Spec.Retry.Timeout
	return t > 0 && !start.Add(t+j.Spec.Checkpoint.GraceOrDefault()).After(by)
}

// earmark gives each reservation whose start is after now, in order, Count
// Ready nodes of its SKU and region that no active reservation holds and
// no earlier one earmarks: first those whose work all may precede it, then
// those whose other work holds the fewest GPUs, then by name, taken from
// as few clusters as it can (fewClusters; the rule package sched
// documents).
func (c *Cycle) earmark() map[string]model.Reservation {
	out := map[string]model.Reservation{}
	onNode := map[string]map[*model.Job]int64{} // node -> job -> milli-GPU there
	for _, h := range c.jobs {
		for _, a := range h.allocs {
			if onNode[a.Node] == nil {
				onNode[a.Node] = map[*model.Job]int64{}
			}
			onNode[a.Node][h.job] += max(a.GPUMilli*int64(len(a.GPUs)), 1)
		}
	}
	type cand struct {
		name  string
		stays int64
	}
	for _, r := range c.w.Tenancy.Reservations {
		if r.Start.IsZero() || !r.Start.After(c.now) {
			continue
		}
		var cands []cand
		for _, n := range c.w.Fleet.Nodes {
			_, held := c.Reserved[n.Name]
			_, taken := out[n.Name]
			if held || taken || n.Health != model.NodeReady || n.SKU != r.SKU || n.Region != r.Region {
				continue
			}
			x := cand{name: n.Name}
			for j, m := range onNode[n.Name] {
				if j.Spec.Tenant != r.Owner && j.Spec.Priority.Class != model.ClassSpot && !endsBy(j, j.Status.StartedAt, r.Start) {
					x.stays += m
				}
			}
			cands = append(cands, x)
		}
		sort.Slice(cands, func(a, b int) bool {
			x, y := cands[a], cands[b]
			if x.stays != y.stays {
				return x.stays < y.stays
			}
			return x.name < y.name
		})
		rs := make([]ranked, len(cands))
		for i, x := range cands {
			rs[i] = ranked{name: x.name, cost: float64(x.stays)}
		}
		for _, name := range fewClusters(&c.w.Fleet, rs, r.Count) {
			out[name] = r
		}
	}
	return out
}
