package score

import "github.com/allot-dev/allot/internal/sched"

// Packing fills partly used GPUs first, then idle GPUs of busy nodes, then
// idle nodes, in three integer bands:
//   - only partly used GPUs taken: 100 − (their free %)/10, at least 50;
//   - idle GPUs of a busy node taken: 50 − their count, at least 33;
//   - an idle node: 33 − its GPUs, at least its GPUs.
//
// CPU-only requests score 0 everywhere.
type Packing struct{}

// Name implements sched.Scorer.
func (Packing) Name() string { return "packing" }

// Score implements sched.Scorer.
func (Packing) Score(n *sched.NodeInfo, r *sched.Request) float64 {
	if r.GPUs == 0 {
		return 0
	}
	if n.FreeWhole == n.GPUs() {
		return float64(max(maxScore/3-n.FreeWhole, n.FreeWhole))
	}
	if !r.Fractional() {
		return float64(max(maxScore/2-r.GPUs, maxScore/3))
	}
	var buf [1]int
	g := n.PickGPUs(r, buf[:0])
	if n.FreeMilli[g[0]] == milliPerGPU {
		return float64(max(maxScore/2-1, maxScore/3))
	}
	pct := n.FreeMilli[g[0]] * 100 / milliPerGPU
	return float64(max(maxScore-pct/10, maxScore/2))
}
