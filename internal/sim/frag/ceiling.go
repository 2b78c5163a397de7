package frag

import (
	"fmt"
	"maps"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// GPU fractions waste what they leave of their GPUs: an 810-milli pod
// leaves 190 that only pods of 190 or less can use, two 470-milli pods
// leave 60, and so on. The packing ceiling bounds that loss for one run:
// given the fractions the run placed and the whole-GPU demand that
// arrived, no arrangement of them allocates more than the fractions plus
// the whole-GPU demand that fits on the GPUs that the fewest-GPU packing
// of the fractions leaves. The packing is Gilmore–Gomory's LP relaxation
// of cutting stock, and everything but GPU packing is relaxed (node
// boundaries, CPU, memory, GPU models; multi-GPU pods may spread), so the
// ceiling is an upper bound on the run's allocation, not a target: the gap
// between the two is what placement alone could still win on the pods the
// run accepted.

// Ceiling is the bound for one prefix of arrivals.
type Ceiling struct {
	// FractionGPUs is the least number of GPUs, fractionally relaxed, that
	// can hold every one-GPU fraction (Gilmore–Gomory's LP bound).
	FractionGPUs float64
	// Waste is FractionGPUs × 1000 less the fractions' milli: GPU milli
	// that no packing of the fractions can avoid leaving free.
	Waste float64
	// AllocPct is the most that can be allocated, in % of capacity: the
	// fractions, plus the whole-GPU demand that fits on the GPUs the
	// fractions leave.
	AllocPct float64
}

// maxCuts bounds the rounds of the cutting-plane loop of one bound; it is
// a cost bound, and the bound returned is valid after any round.
const maxCuts = 500

// ceiling accumulates requests and bounds them. Requests only add, so the
// patterns found for one bound stay valid for the next (none holds more of
// a size than had arrived) and warm-start it.
type ceiling struct {
	gpus        int
	counts      map[int64]int // fractions by size
	frac, whole int64         // milli of the fractions and of whole GPUs
	pats        []pattern     // patterns found so far
	single      map[int64]bool
	dirty       bool
	last        float64 // FractionGPUs of the last bound
}

// pattern is a multiset of fraction sizes that fits one GPU: count by size.
type pattern map[int64]int

func newCeiling(gpus int) *ceiling {
	return &ceiling{gpus: gpus, counts: map[int64]int{}, single: map[int64]bool{}}
}

// add counts one request: runSeed adds the fractions placed and every
// whole-GPU request that arrived.
func (c *ceiling) add(r *sched.Request) {
	switch {
	case r.GPUs == 0:
	case r.Fractional():
		c.counts[r.Milli]++
		c.frac += r.Milli
		c.dirty = true
	default:
		c.whole += int64(r.GPUs) * model.MilliPerGPU
	}
}

// bound returns the ceiling of the requests added so far.
func (c *ceiling) bound() (Ceiling, error) {
	if c.dirty {
		n, err := c.packingGPUs()
		if err != nil {
			return Ceiling{}, err
		}
		c.last, c.dirty = n, false
	}
	n := c.last
	capMilli := float64(c.gpus) * model.MilliPerGPU
	alloc := float64(c.frac) + max(0, min(float64(c.whole), capMilli-n*model.MilliPerGPU))
	return Ceiling{FractionGPUs: n, Waste: n*model.MilliPerGPU - float64(c.frac), AllocPct: 100 * alloc / capMilli}, nil
}

// packingGPUs returns a lower bound on the GPUs that hold c.counts[s]
// fractions of each size s, exact at the optimum of the Gilmore–Gomory LP.
// It solves the LP's dual, max Σ n_s·u_s subject to Σ a_s·u_s ≤ 1 for
// every pattern a, by cutting planes: solve with the patterns found so
// far, then find the pattern of largest value under u (a bounded
// knapsack), and stop when none exceeds 1. After any round, Σ n_s·u_s
// divided by that largest value is a valid bound (Farley), so stopping at
// maxCuts still returns one.
func (c *ceiling) packingGPUs() (float64, error) {
	sizes := slices.Sorted(maps.Keys(c.counts))
	if len(sizes) == 0 {
		return 0, nil
	}
	for _, s := range sizes {
		if s <= 0 || s >= model.MilliPerGPU {
			return 0, fmt.Errorf("frag: a fraction of %d milli: want 1 to %d", s, model.MilliPerGPU-1)
		}
		if !c.single[s] { // every size needs a pattern: as many copies as fit
			c.single[s] = true
			c.pats = append(c.pats, pattern{s: min(c.counts[s], int(model.MilliPerGPU/s))})
		}
	}
	best := 0.0
	for range maxCuts {
		u, err := solveDual(sizes, c.counts, c.pats)
		if err != nil {
			return 0, err
		}
		val, pat := knapsack(sizes, c.counts, u)
		var obj float64
		for i, s := range sizes {
			obj += float64(c.counts[s]) * u[i]
		}
		best = max(best, obj/max(1, val))
		if val <= 1+1e-9 {
			break
		}
		c.pats = append(c.pats, pat)
	}
	return best, nil
}

// solveDual solves max Σ n_i·u_i s.t. Σ_i p_i·u_i ≤ 1 for each pattern p,
// u ≥ 0, in gonum's standard form: min −n·u s.t. [Pᵀ I][u; slack] = 1,
// starting from the slacks as basis.
func solveDual(sizes []int64, counts map[int64]int, pats []pattern) ([]float64, error) {
	m, k := len(sizes), len(pats)
	c := make([]float64, m+k)
	for i, s := range sizes {
		c[i] = -float64(counts[s])
	}
	a := mat.NewDense(k, m+k, nil)
	b := make([]float64, k)
	basic := make([]int, k)
	for j, p := range pats {
		for i, s := range sizes {
			a.Set(j, i, float64(p[s]))
		}
		a.Set(j, m+j, 1)
		b[j] = 1
		basic[j] = m + j
	}
	_, x, err := lp.Simplex(c, a, b, 1e-10, basic)
	if err != nil {
		return nil, fmt.Errorf("frag: packing bound: %w", err)
	}
	return x[:m], nil
}

// knapsack returns the largest Σ a_s·u_s over patterns a with
// Σ a_s·s ≤ 1000 and a_s ≤ counts[s], and that pattern: a bounded
// knapsack over milli, each size split into binary bundles.
func knapsack(sizes []int64, counts map[int64]int, u []float64) (float64, pattern) {
	type bundle struct {
		size  int64
		n     int
		value float64
	}
	var items []bundle
	for i, s := range sizes {
		left := min(counts[s], int(model.MilliPerGPU/s))
		for k := 1; left > 0; k *= 2 {
			n := min(k, left)
			items = append(items, bundle{s, n, float64(n) * u[i]})
			left -= n
		}
	}
	const capacity = model.MilliPerGPU
	val := make([]float64, capacity+1)
	took := make([][]bool, len(items)) // took[j][c]: bundle j improves capacity c
	for j, it := range items {
		took[j] = make([]bool, capacity+1)
		w := it.size * int64(it.n)
		if it.value <= 0 {
			continue
		}
		for c := int64(capacity); c >= w; c-- {
			if v := val[c-w] + it.value; v > val[c] {
				val[c], took[j][c] = v, true
			}
		}
	}
	pat := pattern{}
	c := int64(capacity)
	for j := len(items) - 1; j >= 0; j-- {
		if took[j][c] {
			pat[items[j].size] += items[j].n
			c -= items[j].size * int64(items[j].n)
		}
	}
	return val[capacity], pat
}
