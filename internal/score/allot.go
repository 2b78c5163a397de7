package score

import "github.com/allot-dev/allot/internal/sched"

// Allot is allot's default policy: FGD's fragmentation score, with ties
// settled by how full the node's GPUs will be instead of by node rank. See
// the package documentation for what it sees that FGD does not.
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

// Score implements sched.Scorer: the integer FGD score plus, below one
// point, the share of the node's GPU capacity in use after the placement.
func (s *Allot) Score(n *sched.NodeInfo, r *sched.Request) float64 {
	ev := s.m.evaluate(n, r, allotBetter)
	d := ev.delta
	idleAfter := n.FreeWhole
	if r.Fractional() {
		if n.FreeMilli[ev.gpu] == milliPerGPU {
			idleAfter--
		}
	} else {
		idleAfter -= r.GPUs
	}
	g := float64(max(n.GPUs(), 1))
	capMilli := float64(max(n.GPUs(), 1) * milliPerGPU)
	used := 1 - float64(n.FreeMilliTotal()-r.TotalMilli())/capMilli
	cpuUsed := 1 - float64(n.CPUFree-r.CPU)/float64(max(n.CPUCap, 1))
	var sec float64
	switch xv {
	case 0:
		sec = used
	case 1:
		sec = 0
	case 2:
		sec = cpuUsed
	case 3:
		sec = max(used, cpuUsed)
	case 4:
		sec = (used + cpuUsed) / 2
	case 5:
		sec = 1 - float64(n.FreeWhole)/float64(max(n.GPUs(), 1))
	case 6:
		sec = (used + (1 - cpuUsed)) / 2
	case 8:
		sec = 1 - float64(idleAfter)/g
	case 9:
		sec = 1 - float64(n.FreeWhole)/8
	case 10:
		sec = 1 - float64(n.FreeWhole)/g + 0.01*used
	case 11:
		sec = 1 - float64(idleAfter)/8
	case 12:
		sec = 1 - float64(idleAfter)/g + 0.01*used
	case 7:
		sec = 0.5 + d/20000
	}
	return fgdScore(d) + 0.5*sec
}

// ChooseGPUs implements sched.GPUChooser.
func (s *Allot) ChooseGPUs(n *sched.NodeInfo, r *sched.Request, dst []int) []int {
	if !r.Fractional() {
		return n.PickGPUs(r, dst)
	}
	return append(dst[:0], s.m.evaluate(n, r, allotBetter).gpu)
}
