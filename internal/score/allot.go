package score

import (
	"math"

	"github.com/allot-dev/allot/internal/sched"
)

// repeatStep is the grain of allot's repeat weight: the weight moves in
// steps of 1/repeatStep, and each step clears the fragmentation caches, so
// the grain bounds how often the cluster is measured afresh. It is a cost
// bound, not a fitted value: the weight it rounds is measured online.
const repeatStep = 20

// Allot is allot's default policy: FGD's integer score over a
// fragmentation measure that also counts what repeated pods of each target
// shape could not use (packing remainders and CPU), weighted by how often
// pods have been seen to join a pod of their own shape, plus what the
// workload's fractions are expected to leave of partly used GPUs, plus the
// free GPU milli the node's free CPU could not feed (charged to GPU pods
// only). A GPU pod that may use more than one GPU model is also charged for
// taking capacity of a model that the pods limited to it will need
// (reservation), and a GPU pod for leaving a node unable to host a shape
// seen to fit that node's class only (hostReserve). On a node whose free
// CPU could not feed its free GPU milli, a look-ahead (lookahead) takes the
// place of the fragmentation measure. A fraction goes first where it loses
// least of the packing plan (plan: the cutting-stock LP over the target's
// fractions): among nodes, the least loss wins before any score, and on
// the node the GPU with the least loss, then the exact ΔF. See the package
// documentation.
type Allot struct {
	m *fragModel
	// last is, per node index, the shape id + 1 of the last pod chosen
	// for the node; 0 before any.
	last []int
	// seen counts pods chosen for a node whose last pod is known, same
	// those of them with that pod's shape.
	seen, same int
	// res keeps GPU models' capacity for the pods limited to them; nil
	// when the target workload has no such pods.
	res *reservation
	// hosts keeps the nodes of a capacity class for the pods seen to fit
	// no other class.
	hosts *hostReserve
	// look is the rollout measure (rollout.go); nil when the target has
	// no GPU shape.
	look *lookahead
	// lookCache holds lookDelta by node index and request shape.
	lookCache [][]lookEntry
}

// lookEntry is a request shape's lookDelta on a node at one generation.
type lookEntry struct {
	stamp uint64 // NodeInfo.Gen+1 when delta is valid
	delta float64
}

// newAllot makes an Allot over m. Before any pod has been seen the repeat
// weight is Σ p_t², the chance that two pods drawn from the target
// workload have the same shape.
func newAllot(m *fragModel) *Allot {
	for _, t := range m.w {
		m.repeat += t.P * t.P
	}
	m.repeat = math.Round(repeatStep*m.repeat) / repeatStep
	m.left = expectedLeft(m.w)
	// The leftover term is weighted by the fractions' share of the GPU
	// pods; the CPU term by the GPU pods' share of the workload, at the
	// GPU pods' mean CPU per GPU milli. All are read off the target
	// workload.
	var cpu, milli, share, frac float64
	for _, t := range m.w {
		if t.GPUs > 0 {
			cpu += t.P * float64(t.CPU)
			milli += t.P * float64(int64(t.GPUs)*t.Milli)
			share += t.P
		}
		if t.Fraction() {
			frac += t.P
		}
	}
	if share > 0 {
		m.leftW = frac / share
	}
	if milli > 0 && cpu > 0 {
		m.cpuPerMilli, m.cpuW = cpu/milli, share
	}
	return &Allot{m: m, res: newReservation(m.w), hosts: newHostReserve(), look: newLookahead(m.w)}
}

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

// Score implements sched.Scorer: int(100·sigmoid((ΔF − charge)/1000)) as
// FGD, ΔF being the look-ahead's on a CPU-short node (lookDelta), the
// charge being the reservation's (0 unless some target is limited
// to GPU models) plus the host charge (0 until a pod that fits one node
// class only is placed), ties going to the lower node rank. The quantisation is
// kept on purpose: ranking nodes by the exact ΔF did markedly worse (see
// the package documentation). For a fraction, 101 times the plan's loss on
// the GPU it would take (whole milli) is subtracted, so that the loss
// orders nodes before the score, which spans 0 to 100.
func (s *Allot) Score(n *sched.NodeInfo, r *sched.Request) float64 {
	e := s.m.evaluate(n, r, allotBetter)
	d := e.delta
	if s.useLook(n) {
		d = s.lookDelta(n, r)
	}
	return fgdScore(d-s.res.charge(n, r)-s.hosts.charge(n, r, e.gpu)) - (maxScore+1)*e.loss
}

// lookDelta is ΔF on a node whose CPU is short: the rollout's change
// (lookahead.delta; a fraction on the GPU ChooseGPUs would pick) plus, for
// a GPU pod, the change of the CPU term, as in F. It is cached per node,
// generation and request shape.
func (s *Allot) lookDelta(n *sched.NodeInfo, r *sched.Request) float64 {
	if n.Index >= len(s.lookCache) {
		s.lookCache = append(s.lookCache, make([][]lookEntry, n.Index+1-len(s.lookCache))...)
	}
	id := s.m.shape(r)
	c := s.lookCache[n.Index]
	if id >= len(c) {
		c = append(c, make([]lookEntry, id+1-len(c))...)
		s.lookCache[n.Index] = c
	}
	if e := c[id]; e.stamp == n.Gen+1 {
		return e.delta
	}
	gpu := -1
	if r.Fractional() {
		gpu = s.m.evaluate(n, r, allotBetter).gpu
	}
	d := s.look.delta(n, s.m.accept(n), r, gpu)
	if r.GPUs > 0 {
		total := freeMilli(n)
		d += s.m.cpuStranded(n.CPUFree, total) - s.m.cpuStranded(n.CPUFree-r.CPU, total-int64(r.GPUs)*r.Milli)
	}
	c[id] = lookEntry{stamp: n.Gen + 1, delta: d}
	return d
}

// useLook reports whether n's CPU is short: its free CPU could not feed
// its free GPU milli at the target's GPU pods' mean rate. There FGD's
// next-pod measure, which asks only whether one pod of each shape fits
// the free CPU, misses what CPU will strand, and the rollout, which spends
// CPU as it places pods, measures it.
func (s *Allot) useLook(n *sched.NodeInfo) bool {
	if s.look == nil || s.m.cpuW == 0 {
		return false
	}
	return s.m.cpuStranded(n.CPUFree, freeMilli(n)) > 0
}

// freeMilli is n's free GPU milli over all its GPUs.
func freeMilli(n *sched.NodeInfo) int64 {
	var total int64
	for _, f := range n.FreeMilli {
		total += f
	}
	return total
}

// ChooseGPUs implements sched.GPUChooser. sched.Chooser calls it once for
// the node it chooses, so Allot takes the call as r going to n and learns
// from it (observe).
func (s *Allot) ChooseGPUs(n *sched.NodeInfo, r *sched.Request, dst []int) []int {
	if !r.Fractional() {
		s.observe(n, r, -1)
		return n.PickGPUs(r, dst)
	}
	gpu := s.m.evaluate(n, r, allotBetter).gpu
	s.observe(n, r, gpu)
	return append(dst[:0], gpu)
}

// observe records that a pod of r's shape goes to n (for the
// reservation's free capacity per model, at once) and, when n holds pods
// already, sets the repeat weight to the share of such pods so far
// that joined a pod of their own shape (the node's last one), rounded to
// 1/repeatStep. When the rounded weight moves, every cached measure is
// dropped, since F must be measured with one weight across nodes.
// A fraction goes to GPU gpu; gpu is -1 for other requests.
func (s *Allot) observe(n *sched.NodeInfo, r *sched.Request, gpu int) {
	s.res.placed(n, r)
	s.hosts.place(n, r, gpu)
	id := s.m.shape(r)
	if n.Index >= len(s.last) {
		s.last = append(s.last, make([]int, n.Index+1-len(s.last))...)
	}
	if n.Pods > 0 && s.last[n.Index] > 0 {
		s.seen++
		if s.last[n.Index] == id+1 {
			s.same++
		}
	}
	s.last[n.Index] = id + 1
	if s.seen == 0 {
		return
	}
	if w := math.Round(repeatStep*float64(s.same)/float64(s.seen)) / repeatStep; w != s.m.repeat {
		s.m.repeat = w
		s.m.flush()
	}
}
