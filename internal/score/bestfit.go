package score

import "github.com/allot-dev/allot/internal/sched"

// BestFit prefers the node with the least CPU and GPU left after the
// placement, each weighted ½ and scaled by the largest node. Integer
// scores, min-max rescaled across the feasible nodes of a decision.
type BestFit struct{}

// Name implements sched.Scorer.
func (BestFit) Name() string { return "bestfit" }

// Score implements sched.Scorer.
func (BestFit) Score(n *sched.NodeInfo, r *sched.Request) float64 {
	left := 0.5*float64(n.CPUFree-r.CPU)/maxSpecCPU + 0.5*float64(n.FreeMilliTotal()-r.TotalMilli())/maxSpecGPU
	return float64(int64((1 - left) * maxScore))
}

// Normalize implements sched.Normalizer.
func (BestFit) Normalize(scores []float64) { minMax(scores) }
