package sched

// BinPack is the core's default scorer: it prefers the node that is fullest
// after the placement, GPUs first and CPU second, so whole nodes and whole
// leaf groups stay free for gangs and fractions share GPUs already in use.
type BinPack struct{}

// Name returns "binpack".
func (BinPack) Name() string { return "binpack" }

// Score is the node's used share of GPU capacity after placing r, plus a
// hundredth of its used share of CPU.
func (BinPack) Score(n *NodeInfo, r *Request) float64 {
	var gpu float64
	if g := n.GPUs(); g > 0 {
		gpu = float64(n.UsedMilli()+r.TotalMilli()) / float64(int64(g)*1000)
	}
	var cpu float64
	if n.CPUCap > 0 {
		cpu = float64(n.CPUCap-n.CPUFree+r.CPU) / float64(n.CPUCap)
	}
	return gpu + cpu/100
}
