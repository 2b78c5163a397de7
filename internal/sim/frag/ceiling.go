package frag

import (
	"fmt"

	"github.com/allot-dev/allot/internal/cutstock"
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

// ceiling accumulates requests and bounds them. Requests only add, so the
// solver's patterns from one bound stay valid for the next and warm-start
// it.
type ceiling struct {
	gpus        int
	counts      map[int64]int // fractions by size
	frac, whole int64         // milli of the fractions and of whole GPUs
	lp          cutstock.Solver
	dirty       bool
	last        float64 // FractionGPUs of the last bound
}

func newCeiling(gpus int) *ceiling {
	return &ceiling{gpus: gpus, counts: map[int64]int{}}
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
// fractions of each size s, exact at the optimum of the Gilmore–Gomory LP
// (cutstock).
func (c *ceiling) packingGPUs() (float64, error) {
	sol, err := c.lp.Solve(c.counts)
	if err != nil {
		return 0, fmt.Errorf("frag: packing bound: %w", err)
	}
	return sol.GPUs, nil
}
