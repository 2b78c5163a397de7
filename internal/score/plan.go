package score

import (
	"math"

	"github.com/allot-dev/allot/internal/cutstock"
)

// planScale turns the target's shares into counts for the cutting-stock
// LP: counts per million pods, so that no pattern is limited by a count.
const planScale = 1e6

// plan is the cutting-stock LP's plan for the target workload's one-GPU
// fractions (cutstock). The LP's dual prices each size s at u_s, the
// share of a GPU a fraction of s is worth when the fractions are packed
// onto the fewest GPUs; worth[f] is the most a GPU with f free milli can
// still take under those prices (a knapsack over the target's sizes). A
// fraction of size s put on a GPU with f free milli leaves it worth
// worth[f−s], so it loses
//
//	loss(s, f) = 1000 · (worth[f] − worth[f−s] − u_s) ≥ 0
//
// milli of planned capacity: 0 where s joins fractions the plan puts
// together (a 320 beside a 650, or on an idle GPU the plan gives a 650
// next), more where it takes room the plan keeps for larger ones (a 320
// beside a 470 takes the place of a second 470). A size the target lacks
// is priced at worth[s], what the plan would put in its room.
type plan struct {
	price map[int64]float64
	worth []float64 // by free milli, 0..milliPerGPU
}

// newPlan solves the LP for w's fractions; nil when w has none.
func newPlan(w Workload) (*plan, error) {
	counts := map[int64]int{}
	for _, t := range w {
		if t.Fraction() {
			counts[t.Milli] += int(math.Round(t.P * planScale))
		}
	}
	for s, n := range counts {
		if n == 0 {
			delete(counts, s)
		}
	}
	if len(counts) == 0 {
		return nil, nil
	}
	var sv cutstock.Solver
	sol, err := sv.Solve(counts)
	if err != nil {
		return nil, err
	}
	p := &plan{price: sol.Prices, worth: make([]float64, milliPerGPU+1)}
	for f := range p.worth {
		for s, u := range p.price {
			if s <= int64(f) {
				p.worth[f] = max(p.worth[f], p.worth[int64(f)-s]+u)
			}
		}
	}
	return p, nil
}

// loss is loss(s, f) above, rounded to whole milli so that equal losses
// compare equal.
func (p *plan) loss(s, f int64) float64 {
	u, ok := p.price[s]
	if !ok {
		u = p.worth[s]
	}
	return math.Round(milliPerGPU * (p.worth[f] - p.worth[f-s] - u))
}
