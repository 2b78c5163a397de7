package score

import "github.com/allot-dev/allot/internal/sched"

// allotRepeat is the weight allot gives, in its fragmentation measure, to
// free GPU milli that fits the next pod of a target shape but that further
// pods of that shape could not use (see fragOf). 0 is FGD's one-pod view,
// 1 assumes every pod still to come has that shape; the next pods are a mix
// of shapes, so allot takes the midpoint, chosen once and not tuned per
// workload. See the package documentation.
const allotRepeat = 0.5

// Allot is allot's default policy: FGD's integer score over a
// fragmentation measure that also counts what repeated pods of each target
// shape could not use (packing remainders and CPU), and the exact ΔF to
// choose a fraction's GPU. See the package documentation.
type Allot struct{ m *fragModel }

// Name implements sched.Scorer.
func (*Allot) Name() string { return "allot" }

// allotBetter prefers the GPU with the larger exact ΔF, then the one with
// less free milli (best fit).
func allotBetter(n *sched.NodeInfo, a, b float64, i, j int) bool {
	if a != b {
		return a > b
	}
	return n.FreeMilli[i] < n.FreeMilli[j]
}

// Score implements sched.Scorer: int(100·sigmoid(ΔF/1000)) as FGD, ties
// going to the lower node rank. The quantisation is kept on purpose: ranking
// nodes by the exact ΔF did markedly worse (see the package documentation).
func (s *Allot) Score(n *sched.NodeInfo, r *sched.Request) float64 {
	return fgdScore(s.m.evaluate(n, r, allotBetter).delta)
}

// ChooseGPUs implements sched.GPUChooser.
func (s *Allot) ChooseGPUs(n *sched.NodeInfo, r *sched.Request, dst []int) []int {
	if !r.Fractional() {
		return n.PickGPUs(r, dst)
	}
	return append(dst[:0], s.m.evaluate(n, r, allotBetter).gpu)
}
