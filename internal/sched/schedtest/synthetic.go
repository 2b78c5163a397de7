package schedtest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Synthetic builds a large world for benchmarks: nodes 8-GPU nodes (H100
// and A100 by alternating leaf group) in three InfiniBand regions with leaf
// groups of 32 nodes and racks of 8, twenty tenants in three partitions,
// and jobs queued jobs: mostly single GPUs and fractions, some 2–8 GPU
// jobs, and 1 % gangs of 2–64 nodes.
func Synthetic(nodes, jobs int, seed uint64) *World {
	w := NewWorld()
	rng := rand.New(rand.NewPCG(seed, 0))
	regions := []string{"r0", "r1", "r2"}
	for _, r := range regions {
		w.Region(r, "us", model.FabricInfiniBand)
	}
	for i := 0; i < nodes; i++ {
		ri := i % len(regions)
		reg := &w.Fleet.Regions[ri]
		c := &reg.Clusters[0]
		k := i / len(regions) // index inside the region
		leaf := k / 32
		if k%8 == 0 {
			c.Racks = append(c.Racks, model.Rack{Name: fmt.Sprintf("%s-rack%d", reg.Name, k/8), PowerCapW: 90_000})
		}
		sku := "ND96-H100x8-IB"
		if leaf%2 == 1 {
			sku = "ND96-A100x8-IB"
		}
		w.Fleet.Nodes = append(w.Fleet.Nodes, model.Node{
			Name: fmt.Sprintf("%s-n%05d", reg.Name, k), SKU: sku, Region: reg.Name, Cluster: c.Name,
			Leaf: fmt.Sprintf("%s-leaf%d", reg.Name, leaf), Rack: c.Racks[len(c.Racks)-1].Name, Health: model.NodeReady,
		})
	}
	parts := []string{"internal-ai", "customer-critical", "elastic"}
	w.Tenancy.Partitions = []model.Partition{
		{Name: parts[0], Guarantees: []model.Guarantee{{Region: "r0", GPUModel: "H100", GPUs: nodes * 8 / 6 * 9 / 10}}},
		{Name: parts[1], Guarantees: []model.Guarantee{{Region: "r1", GPUModel: "A100", GPUs: nodes * 8 / 6 * 7 / 10}}},
		{Name: parts[2]},
	}
	for t := 0; t < 20; t++ {
		w.Tenant(fmt.Sprintf("tenant%02d", t), parts[t%3])
	}
	for i := 0; i < jobs; i++ {
		b := w.Job(fmt.Sprintf("job%05d", i), fmt.Sprintf("tenant%02d", rng.IntN(20))).Submitted(Epoch.Add(-time.Duration(jobs-i) * time.Second))
		switch k := rng.IntN(100); {
		case k < 45:
			b.GPUs(1, 1)
		case k < 75:
			b.Milli(int64(100 * (1 + rng.IntN(9))))
		case k < 92:
			b.GPUs(1, []int{2, 4}[rng.IntN(2)])
		case k < 99:
			b.GPUs(1, 8)
		default:
			b.GPUs(2+rng.IntN(63), 8).Interconnect(model.FabricInfiniBand)
		}
		b.CPU(int64(1000*(1+rng.IntN(8))), int64(4096*(1+rng.IntN(8))))
		switch rng.IntN(3) {
		case 0:
			b.Models("H100")
		case 1:
			b.Models("A100")
		}
		if rng.IntN(5) == 0 {
			b.Class(model.ClassSpot)
		}
	}
	return w
}
