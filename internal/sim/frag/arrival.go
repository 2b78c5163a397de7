package frag

import (
	"math/rand"
	"slices"
	"strings"

	"github.com/allot-dev/allot/internal/trace/openb"
)

// Arrival is the order in which pods arrive in one seed's run, and the
// tie-break rank of each node.
type Arrival struct {
	Pods  []int // indices into the pod list; copies repeat an index
	Ranks []int // by index into the node list
}

// byName returns the indices of items sorted by name.
func byName(n int, name func(int) string) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(name(a), name(b)) })
	return idx
}

// Arrivals draws the arrival order and node ranks of one seed. Copies of
// randomly drawn pods are appended while the requested milli-GPU (num_gpu ×
// gpu_milli, originals included) stays within inflate × capacity. The
// protocol notes describe the bound as counted in per-GPU milli; only
// num_gpu × gpu_milli reproduces the paper's recorded seed-42 figures
// (10,866 pods, 8,075,080 milli), so that is what is counted here.
func Arrivals(pods []openb.Pod, nodes []openb.Node, inflate float64, seed int64) Arrival {
	rng := rand.New(rand.NewSource(seed))
	rng.Int()
	sorted := byName(len(pods), func(i int) string { return pods[i].Name })
	order := slices.Clone(sorted)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })

	var capMilli, total int64
	for _, n := range nodes {
		capMilli += int64(n.GPUs) * openb.MilliPerGPU
	}
	for _, i := range order {
		total += pods[i].TotalMilli()
	}
	limit := int64(inflate * float64(capMilli))
	if inflate > 1 && len(pods) > 0 {
		for {
			p := sorted[rng.Intn(len(sorted))]
			if total+pods[p].TotalMilli() > limit {
				break
			}
			total += pods[p].TotalMilli()
			order = append(order, p)
		}
	}
	nodeSorted := byName(len(nodes), func(i int) string { return nodes[i].Name })
	perm := rng.Perm(len(nodes))
	ranks := make([]int, len(nodes))
	for k, i := range nodeSorted {
		ranks[i] = perm[k]
	}
	return Arrival{Pods: order, Ranks: ranks}
}
