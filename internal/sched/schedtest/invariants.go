package schedtest

import (
	"fmt"

	"github.com/allot-dev/allot/internal/model"
)

// CheckInvariants verifies the world's allocations: no GPU holds more than
// one whole GPU of work, no node's CPU or memory is over-committed, every
// gang is whole or absent, and no tenant exceeds a hard quota.
func CheckInvariants(w *World) error {
	type gpuKey struct {
		node string
		gpu  int
	}
	nodes := map[string]model.Node{}
	for _, n := range w.Fleet.Nodes {
		nodes[n.Name] = n
	}
	milli := map[gpuKey]int64{}
	cpu := map[string]int64{}
	mem := map[string]int64{}
	used := map[[3]string]int64{}
	for _, j := range w.Jobs {
		a := j.Status.Allocations
		if !j.Status.State.Holds() {
			if len(a) != 0 {
				return fmt.Errorf("%s is %s but holds %v", j.ID, j.Status.State, a)
			}
			continue
		}
		if len(a) != j.Spec.Resources.InstanceCount {
			return fmt.Errorf("gang %s holds %d of %d instances", j.ID, len(a), j.Spec.Resources.InstanceCount)
		}
		for _, x := range a {
			n, ok := nodes[x.Node]
			if !ok {
				return fmt.Errorf("%s is on unknown node %s", j.ID, x.Node)
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
			used[[3]string{j.Spec.Tenant, n.Region, sku.Series}] += x.GPUMilli * int64(len(x.GPUs))
		}
	}
	for _, q := range w.Tenancy.Quotas {
		if u := used[[3]string{q.Tenant, q.Region, q.Series}]; u > int64(q.GPUs)*model.MilliPerGPU {
			return fmt.Errorf("tenant %s uses %d milli of %s in %s, quota %d GPUs", q.Tenant, u, q.Series, q.Region, q.GPUs)
		}
	}
	return nil
}
