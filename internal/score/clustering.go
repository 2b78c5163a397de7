package score

import "github.com/allot-dev/allot/internal/sched"

// Clustering keeps GPU pods of one kind (shared, 1-GPU, 2-GPU, …) together
// and prefers busier nodes: a quarter of the score is how much GPU is in
// use, the rest is 75 for a node that holds only the request's kind, 50 for
// a node that holds it among others, 25 for a node without GPU pods and 0
// otherwise. CPU-only requests score 0 everywhere.
type Clustering struct{}

// Name implements sched.Scorer.
func (Clustering) Name() string { return "clustering" }

// Score implements sched.Scorer.
func (Clustering) Score(n *sched.NodeInfo, r *sched.Request) float64 {
	if r.GPUs == 0 {
		return 0
	}
	s := maxScore / 4 * (maxSpecGPU - n.FreeMilliTotal()) / maxSpecGPU
	kinds := 0
	for _, c := range n.Kinds[1:] {
		if c > 0 {
			kinds++
		}
	}
	switch {
	case n.Kinds[sched.KindOf(r)] > 0 && kinds == 1:
		s += maxScore * 3 / 4
	case n.Kinds[sched.KindOf(r)] > 0:
		s += maxScore * 2 / 4
	case kinds == 0:
		s += maxScore / 4
	}
	return float64(s)
}
