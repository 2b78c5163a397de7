package score

import "github.com/allot-dev/allot/internal/sched"

// DotProd is the Tetris-style alignment policy as the FGD paper runs it:
// the dot product of the node's free (CPU, GPU) and the request, both
// scaled by the largest node; a smaller product scores higher. Integer
// scores 0..100.
type DotProd struct{}

// Name implements sched.Scorer.
func (DotProd) Name() string { return "dotprod" }

// Score implements sched.Scorer.
func (DotProd) Score(n *sched.NodeInfo, r *sched.Request) float64 {
	dot := float64(n.CPUFree)/maxSpecCPU*float64(r.CPU)/maxSpecCPU +
		float64(n.FreeMilliTotal())/maxSpecGPU*float64(r.TotalMilli())/maxSpecGPU
	return float64(int64(maxScore * (1 - dot/2)))
}
