package score

import (
	"fmt"

	"github.com/allot-dev/allot/internal/sched"
)

// FGD is the fragmentation gradient descent policy of the FGD paper: it
// places a request where the expected fragmentation of the node, measured
// against the target workload, grows least. The score is the paper's
// integer int(100·sigmoid(ΔF/1000)), ties and all; a fraction goes to the
// GPU that scores best (lowest index among equals).
type FGD struct{ m *fragModel }

func newFrag(c config, name string) (sched.Scorer, error) {
	if len(c.workload) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoWorkload, name)
	}
	m := newFragModel(c.workload)
	if name == "allot" {
		p, err := newPlan(c.workload)
		if err != nil {
			return nil, fmt.Errorf("allot: %w", err)
		}
		m.plan = p
		return newAllot(m), nil
	}
	return &FGD{m: m}, nil
}

// Name implements sched.Scorer.
func (*FGD) Name() string { return "fgd" }

func fgdScore(delta float64) float64 { return float64(int64(sigmoid(delta/1000) * maxScore)) }

func fgdBetter(_ *sched.NodeInfo, a, b float64, _, _ int) bool { return fgdScore(a) > fgdScore(b) }

// Score implements sched.Scorer.
func (s *FGD) Score(n *sched.NodeInfo, r *sched.Request) float64 {
	return fgdScore(s.m.evaluate(n, r, fgdBetter).delta)
}

// ChooseGPUs implements sched.GPUChooser.
func (s *FGD) ChooseGPUs(n *sched.NodeInfo, r *sched.Request, dst []int) []int {
	if !r.Fractional() {
		return n.PickGPUs(r, dst)
	}
	return append(dst[:0], s.m.evaluate(n, r, fgdBetter).gpu)
}
