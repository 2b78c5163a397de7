package schedtest

import (
	"fmt"

	"github.com/allot-dev/allot/internal/model"
)

// CheckInvariants verifies the world's allocations: no GPU holds more than
// one whole GPU of work, no node's CPU or memory is over-committed, every
// gang is whole or absent, no tenant exceeds a hard quota, no rack or
// region draws more than its power cap, no partition borrows beyond its
// borrowing limit, every multi-instance gang runs on one GPU model in one
// cluster (of the fabric it asks for), and a job that names a reservation
// is its owner's and runs on nodes of the reservation's SKU and region.
// Rules that depend on what a cycle saw (which nodes a reservation held,
// what was lendable) are Cycle's to check.
func CheckInvariants(w *World) error {
	type gpuKey struct {
		node string
		gpu  int
	}
	type poolKey struct{ partition, region, gpuModel string }
	nodes := map[string]model.Node{}
	for _, n := range w.Fleet.Nodes {
		nodes[n.Name] = n
	}
	fabric, rackCap, regionCap := fleetCaps(&w.Fleet)
	partitionOf := map[string]string{}
	for _, t := range w.Tenancy.Tenants {
		partitionOf[t.Name] = t.Partition
	}
	reservations := map[string]model.Reservation{}
	for _, r := range w.Tenancy.Reservations {
		reservations[r.Name] = r
	}
	milli := map[gpuKey]int64{}
	cpu := map[string]int64{}
	mem := map[string]int64{}
	used := map[[3]string]int64{}
	pool := map[poolKey]int64{}
	rackDraw := map[string]int64{}
	regionDraw := map[string]int64{}
	for _, j := range w.Jobs {
		a := j.Status.Allocations
		if !j.Status.State.Holds() {
			if len(a) != 0 {
				return fmt.Errorf("%s is %s but holds %v", j.ID, j.Status.State, a)
			}
			continue
		}
		if e := j.Spec.Elastic; e != nil {
			if len(a) < e.MinInstances || len(a) > e.MaxInstances || (len(a)-e.MinInstances)%e.StepOrOne() != 0 {
				return fmt.Errorf("elastic %s holds %d instances, outside %s", j.ID, len(a), e)
			}
		} else if len(a) != j.Spec.Resources.InstanceCount {
			return fmt.Errorf("gang %s holds %d of %d instances", j.ID, len(a), j.Spec.Resources.InstanceCount)
		}
		if err := checkGang(w, j, nodes, fabric); err != nil {
			return err
		}
		if name := j.Spec.Placement.Reservation; name != "" {
			r, ok := reservations[name]
			if !ok || r.Owner != j.Spec.Tenant {
				return fmt.Errorf("%s of %s runs in reservation %q, which is not its tenant's", j.ID, j.Spec.Tenant, name)
			}
			for _, x := range a {
				if n := nodes[x.Node]; n.SKU != r.SKU || n.Region != r.Region {
					return fmt.Errorf("%s names reservation %s (%s in %s) but runs on %s (%s in %s)",
						j.ID, name, r.SKU, r.Region, x.Node, n.SKU, n.Region)
				}
			}
		}
		for _, x := range a {
			n, ok := nodes[x.Node]
			if !ok {
				return fmt.Errorf("%s is on unknown node %s", j.ID, x.Node)
			}
			if !j.Spec.Placement.AllowsNode(x.Node) {
				return fmt.Errorf("%s runs on %s, which its placement rules out", j.ID, x.Node)
			}
			sku := w.Fleet.Catalog[n.SKU]
			if want := j.Spec.Resources.GPUsPerInstance; len(x.GPUs) != want {
				return fmt.Errorf("%s holds %d GPUs on %s, wants %d", j.ID, len(x.GPUs), x.Node, want)
			}
			for _, g := range x.GPUs {
				if g < 0 || g >= sku.GPUs {
					return fmt.Errorf("%s holds GPU %d of %s, which has %d", j.ID, g, x.Node, sku.GPUs)
				}
				k := gpuKey{x.Node, g}
				milli[k] += x.GPUMilli
				if milli[k] > model.MilliPerGPU {
					return fmt.Errorf("GPU %d of %s is over-committed (%d milli) with %s", g, x.Node, milli[k], j.ID)
				}
			}
			cpu[x.Node] += j.Spec.Resources.CPUMilli
			mem[x.Node] += j.Spec.Resources.MemoryMiB
			if cpu[x.Node] > sku.CPUMilli() || mem[x.Node] > sku.MemoryMiB() {
				return fmt.Errorf("CPU or memory of %s over-committed with %s", x.Node, j.ID)
			}
			m := x.GPUMilli * int64(len(x.GPUs))
			used[[3]string{j.Spec.Tenant, n.Region, sku.Series}] += m
			if p := partitionOf[j.Spec.Tenant]; p != "" {
				pool[poolKey{p, n.Region, sku.GPUModel}] += m
			}
			watts := power(sku, m)
			rackDraw[n.Rack] += watts
			regionDraw[n.Region] += watts
		}
	}
	for _, q := range w.Tenancy.Quotas {
		if u := used[[3]string{q.Tenant, q.Region, q.Series}]; u > int64(q.GPUs)*model.MilliPerGPU {
			return fmt.Errorf("tenant %s uses %d milli of %s in %s, quota %d GPUs", q.Tenant, u, q.Series, q.Region, q.GPUs)
		}
	}
	for rack, c := range rackCap {
		if c > 0 && rackDraw[rack] > c {
			return fmt.Errorf("rack %s draws %d W, cap %d W", rack, rackDraw[rack], c)
		}
	}
	for region, c := range regionCap {
		if c > 0 && regionDraw[region] > c {
			return fmt.Errorf("region %s draws %d W, headroom %d W", region, regionDraw[region], c)
		}
	}
	for _, p := range w.Tenancy.Partitions {
		for _, g := range guarantees(p) {
			if g.borrow < 0 {
				continue
			}
			if u := pool[poolKey{p.Name, g.region, g.gpuModel}]; u-g.milli > g.borrow {
				return fmt.Errorf("partition %s uses %d milli of %s in %s: %d guaranteed, may borrow %d",
					p.Name, u, g.gpuModel, g.region, g.milli, g.borrow)
			}
		}
	}
	return nil
}

// checkGang verifies that a job of several instances runs on one GPU model
// in one cluster, of the fabric it asks for.
func checkGang(w *World, j *model.Job, nodes map[string]model.Node, fabric map[string]model.Fabric) error {
	a := j.Spec.Placement.Interconnect
	if len(j.Status.Allocations) < 2 {
		return nil
	}
	first := nodes[j.Status.Allocations[0].Node]
	gpuModel := w.Fleet.Catalog[first.SKU].GPUModel
	for _, x := range j.Status.Allocations {
		n := nodes[x.Node]
		if m := w.Fleet.Catalog[n.SKU].GPUModel; n.Cluster != first.Cluster || m != gpuModel {
			return fmt.Errorf("gang %s spans %s (%s in %s) and %s (%s in %s)",
				j.ID, first.Name, gpuModel, first.Cluster, n.Name, m, n.Cluster)
		}
	}
	if a != "" && fabric[first.Cluster] != a {
		return fmt.Errorf("gang %s asks for %s but runs in %s, a %s cluster", j.ID, a, first.Cluster, fabric[first.Cluster])
	}
	return nil
}

// fleetCaps returns each cluster's fabric and the power caps of racks and
// regions (0: none).
func fleetCaps(f *model.Fleet) (fabric map[string]model.Fabric, rack, region map[string]int64) {
	fabric, rack, region = map[string]model.Fabric{}, map[string]int64{}, map[string]int64{}
	for _, r := range f.Regions {
		region[r.Name] = r.PowerHeadroomW
		for _, c := range r.Clusters {
			fabric[c.Name] = c.Fabric
			for _, rk := range c.Racks {
				rack[rk.Name] = rk.PowerCapW
			}
		}
	}
	return fabric, rack, region
}

// power is the draw of milli-GPU on a node of sku: its full-load power
// spread evenly over its GPUs, as the core charges it per instance.
func power(sku model.SKU, milli int64) int64 {
	if sku.GPUs == 0 || milli == 0 {
		return 0
	}
	return sku.PowerW * milli / (int64(sku.GPUs) * model.MilliPerGPU)
}

// guarantee is one partition's guarantee in one pool, summed over the
// entries that name it; borrow and lend are -1 when unlimited.
type guarantee struct {
	region, gpuModel    string
	milli, borrow, lend int64
}

func guarantees(p model.Partition) []guarantee {
	var out []guarantee
	find := func(region, gpuModel string) *guarantee {
		for i := range out {
			if out[i].region == region && out[i].gpuModel == gpuModel {
				return &out[i]
			}
		}
		out = append(out, guarantee{region: region, gpuModel: gpuModel, borrow: -1, lend: -1})
		return &out[len(out)-1]
	}
	for _, g := range p.Guarantees {
		x := find(g.Region, g.GPUModel)
		x.milli += int64(g.GPUs) * model.MilliPerGPU
		if g.BorrowLimit != nil {
			x.borrow = int64(*g.BorrowLimit) * model.MilliPerGPU
		}
		if g.LendLimit != nil {
			x.lend = int64(*g.LendLimit) * model.MilliPerGPU
		}
	}
	return out
}
