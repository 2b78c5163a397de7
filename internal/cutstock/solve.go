package cutstock

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// GPU is the capacity of one GPU in milli.
const GPU = 1000

// maxCuts bounds the cutting-plane rounds of one Solve; it is a cost
// bound, and the bound returned is valid after any round.
const maxCuts = 500

// ErrSize is returned for a fraction size outside 1..GPU−1 milli.
var ErrSize = errors.New("cutstock: fraction size out of range")

// Pattern is a multiset of fraction sizes that fits one GPU: count by
// size.
type Pattern map[int64]int

// Solution is the LP's optimum (or the bound after maxCuts rounds).
type Solution struct {
	// GPUs is the least number of GPUs, fractionally relaxed, that hold
	// the counts: the LP optimum, or a lower bound on it.
	GPUs float64
	// Prices is the dual price of each size, in GPUs: no pattern's sizes
	// are worth more than one GPU together, and the counts' worth is
	// GPUs.
	Prices map[int64]float64
}

// Solver solves the LP for growing counts. The patterns it finds stay
// valid as long as no count shrinks (none holds more of a size than the
// counts allow), so each Solve starts from those of the last. The zero
// value is ready to use.
type Solver struct {
	pats   []Pattern
	single map[int64]bool // sizes that have their one-size pattern
}

// Solve returns the LP's solution for counts[s] fractions of each size s.
// Counts must not shrink between calls on one Solver.
func (sv *Solver) Solve(counts map[int64]int) (Solution, error) {
	sizes := slices.Sorted(maps.Keys(counts))
	sol := Solution{Prices: map[int64]float64{}}
	if len(sizes) == 0 {
		return sol, nil
	}
	if sv.single == nil {
		sv.single = map[int64]bool{}
	}
	for _, s := range sizes {
		if s <= 0 || s >= GPU {
			return Solution{}, fmt.Errorf("%w: %d milli, want 1 to %d", ErrSize, s, GPU-1)
		}
		if !sv.single[s] { // every size needs a pattern: as many copies as fit
			sv.single[s] = true
			sv.pats = append(sv.pats, Pattern{s: min(counts[s], int(GPU/s))})
		}
	}
	for range maxCuts {
		u, err := solveDual(sizes, counts, sv.pats)
		if err != nil {
			return Solution{}, err
		}
		val, pat := knapsack(sizes, counts, u)
		var obj float64
		for i, s := range sizes {
			obj += float64(counts[s]) * u[i]
		}
		// u scaled down by the most valuable pattern is dual feasible,
		// and worth obj / val: Farley's bound. Once no pattern is worth
		// more than a GPU, u is the LP's optimum, taken as it is.
		done := val <= 1+1e-9
		if b := obj / max(1, val); done || b > sol.GPUs {
			sol.GPUs = b
			for i, s := range sizes {
				sol.Prices[s] = u[i] / max(1, val)
			}
		}
		if done {
			break
		}
		sv.pats = append(sv.pats, pat)
	}
	return sol, nil
}

// solveDual solves max Σ n_i·u_i s.t. Σ_i p_i·u_i ≤ 1 for each pattern p,
// u ≥ 0, in gonum's standard form: min −n·u s.t. [Pᵀ I][u; slack] = 1,
// starting from the slacks as basis.
func solveDual(sizes []int64, counts map[int64]int, pats []Pattern) ([]float64, error) {
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
		return nil, fmt.Errorf("cutstock: %w", err)
	}
	return x[:m], nil
}

// knapsack returns the largest Σ a_s·u_s over patterns a with
// Σ a_s·s ≤ GPU and a_s ≤ counts[s], and that pattern: a bounded knapsack
// over milli, each size split into binary bundles.
func knapsack(sizes []int64, counts map[int64]int, u []float64) (float64, Pattern) {
	type bundle struct {
		size  int64
		n     int
		value float64
	}
	var items []bundle
	for i, s := range sizes {
		left := min(counts[s], int(GPU/s))
		for k := 1; left > 0; k *= 2 {
			n := min(k, left)
			items = append(items, bundle{s, n, float64(n) * u[i]})
			left -= n
		}
	}
	val := make([]float64, GPU+1)
	took := make([][]bool, len(items)) // took[j][c]: bundle j improves capacity c
	for j, it := range items {
		took[j] = make([]bool, GPU+1)
		w := it.size * int64(it.n)
		if it.value <= 0 {
			continue
		}
		for c := int64(GPU); c >= w; c-- {
			if v := val[c-w] + it.value; v > val[c] {
				val[c], took[j][c] = v, true
			}
		}
	}
	pat := Pattern{}
	c := int64(GPU)
	for j := len(items) - 1; j >= 0; j-- {
		if took[j][c] {
			pat[items[j].size] += items[j].n
			c -= items[j].size * int64(items[j].n)
		}
	}
	return val[GPU], pat
}
