package replay

import (
	"fmt"
	"math"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/trace/philly"
)

// Fleet shape of the replay: one region, one InfiniBand cluster, nodes of
// one 8-GPU SKU.
const (
	Region      = "philly"
	ClusterName = "philly-ib"
	SKU         = "ND96-A100x8-IB"
	GPUsPerNode = 8
	gpuModel    = "A100"
)

// vcInfo is one virtual cluster as the replay sees it.
type vcInfo struct {
	name  string
	nodes int // after scaling
	gpus  int
}

// scaleVCs keeps ⌈nodes × scale⌉ nodes of each virtual cluster (a VC with
// no nodes keeps none).
func scaleVCs(vcs []philly.VC, scale float64) []vcInfo {
	out := make([]vcInfo, len(vcs))
	for i, v := range vcs {
		n := int(math.Ceil(float64(v.Nodes)*scale - 1e-9))
		out[i] = vcInfo{name: v.Name, nodes: n, gpus: n * GPUsPerNode}
	}
	return out
}

// buildFleet lays the virtual clusters' nodes out in file order, named so
// that name order is layout order, in leaf groups of leafNodes nodes.
func buildFleet(vcs []vcInfo, leafNodes int) model.Fleet {
	f := model.Fleet{
		Catalog: model.BuiltinCatalog(),
		Regions: []model.Region{{Name: Region, Residency: "us",
			Clusters: []model.Cluster{{Name: ClusterName, Fabric: model.FabricInfiniBand}}}},
	}
	i := 0
	for _, v := range vcs {
		for range v.nodes {
			f.Nodes = append(f.Nodes, model.Node{
				Name: fmt.Sprintf("n%05d", i), SKU: SKU, Region: Region, Cluster: ClusterName,
				Leaf: fmt.Sprintf("leaf%03d", i/leafNodes), Health: model.NodeReady,
			})
			i++
		}
	}
	return f
}

// partitionName and reservationName name a VC's partition and (in static
// sharing) its reservation; the tenant is the VC's own name.
func partitionName(vc string) string   { return "vc-" + vc }
func reservationName(vc string) string { return "vc-" + vc }

// buildTenancy makes each VC a tenant in its own partition guaranteed its
// nodes' GPUs. Static sharing adds an open-ended reservation of the VC's
// node count owned by the tenant; its jobs name it, and the core runs a job
// that names a reservation only on the reservation's nodes. A reservation
// keeps the nodes running its jobs and takes idle ones by name, so each
// keeps a block of its VC's size.
func buildTenancy(vcs []vcInfo, sharing Sharing) model.Tenancy {
	var t model.Tenancy
	for _, v := range vcs {
		t.Partitions = append(t.Partitions, model.Partition{
			Name: partitionName(v.name), Tier: "philly-vc",
			Guarantees: []model.Guarantee{{Region: Region, GPUModel: gpuModel, GPUs: v.gpus}},
		})
		t.Tenants = append(t.Tenants, model.Tenant{Name: v.name, Kind: model.TenantInternal,
			Partition: partitionName(v.name), Weight: 1})
		if sharing == Static && v.nodes > 0 {
			t.Reservations = append(t.Reservations, model.Reservation{
				Name: reservationName(v.name), Owner: v.name, SKU: SKU, Region: Region, Count: v.nodes,
			})
		}
	}
	return t
}

// shape splits g GPUs into instances: up to GPUsPerNode is one instance;
// more is a gang of ⌈g/8⌉ instances of g/instances GPUs when that divides
// evenly, else of 8 GPUs each.
func shape(g int) (instances, perInstance int) {
	if g <= GPUsPerNode {
		return 1, g
	}
	k := (g + GPUsPerNode - 1) / GPUsPerNode
	if g%k == 0 {
		return k, g / k
	}
	return k, GPUsPerNode
}
