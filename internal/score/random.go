package score

import (
	"math/rand"

	"github.com/allot-dev/allot/internal/sched"
)

// Random picks a feasible node uniformly at random: every node draws a
// fresh score, so the highest is a uniform choice. Seeded, so a run is
// reproducible.
type Random struct{ rng *rand.Rand }

func newRandom(c config) (sched.Scorer, error) {
	return &Random{rng: rand.New(rand.NewSource(c.seed))}, nil
}

// Name implements sched.Scorer.
func (*Random) Name() string { return "random" }

// Score implements sched.Scorer.
func (s *Random) Score(*sched.NodeInfo, *sched.Request) float64 { return s.rng.Float64() }

// ChooseGPUs implements sched.GPUChooser: a fraction goes to a GPU drawn
// uniformly among those it fits, whole GPUs are the lowest-index idle ones.
func (s *Random) ChooseGPUs(n *sched.NodeInfo, r *sched.Request, dst []int) []int {
	if !r.Fractional() {
		return n.PickGPUs(r, dst)
	}
	dst = dst[:0]
	for i, f := range n.FreeMilli {
		if f >= r.Milli {
			dst = append(dst, i)
		}
	}
	if len(dst) == 0 {
		return nil
	}
	g := dst[s.rng.Intn(len(dst))]
	return append(dst[:0], g)
}
