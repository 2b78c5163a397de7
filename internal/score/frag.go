package score

import (
	"math"
	"slices"

	"github.com/allot-dev/allot/internal/sched"
)

// fragModel measures a node's GPU fragmentation against a target workload
// and caches it by node generation, for fgd and allot. It serves one
// goroutine.
type fragModel struct {
	w     Workload
	nodes []nodeCache // by NodeInfo.Index

	// Request shapes are interned to small ints so that per-node caches are
	// slices; last* remember the previous request to skip the map lookup.
	shapes    map[shapeKey]int
	lastReq   sched.Request
	lastShape int
	scratch   []int64
	// repeat weighs the free milli that fits the next pod of a target but
	// that further pods of the same target could not use (see fragOf): 0
	// for FGD; for allot, the share of pods seen to join a pod of their own
	// shape on a node (Allot.observe).
	repeat float64
	// left[f] is the milli a GPU with f free milli is expected to strand
	// once fractions of the target workload have filled it (expectedLeft),
	// counted for partly used GPUs at weight leftW, the fractions' share
	// of the target's GPU pods. nil for FGD.
	left  []float64
	leftW float64
	// cpuPerMilli is the target's GPU pods' mean CPU (milli-cores) per
	// GPU milli; cpuW weighs the free GPU milli beyond what a node's free
	// CPU could feed at that rate (cpuStranded). cpuW is 0 for FGD; for
	// allot, the GPU pods' share of the target workload.
	cpuPerMilli, cpuW float64
	// plan, when set (allot), ranks a fraction's GPUs by the planned
	// capacity the placement loses first (plan.loss); nil for FGD.
	plan *plan

	// sizes are the target's distinct GPU milli per GPU, and sizeOf[i] is
	// target i's index in sizes (-1 for a CPU-only target): fragOf tallies
	// a node's GPUs once per size (into tally) rather than once per
	// target, since targets of one size differ only in CPU, GPU count and
	// models.
	sizes  []int64
	sizeOf []int
	tally  []sizeTally
}

// sizeTally is how one milli size m meets a node's free GPUs: the GPUs
// with at least m free, the copies of m they hold between them, and the
// free milli of the others.
type sizeTally struct {
	fit           int
	copies, small int64
}

// expectedLeft returns, for every free amount f (0..1000 milli) of one
// GPU, the milli left unused once the GPU has been filled by the one-GPU
// fractions of w, each next pod drawn among the fractions that still fit in
// proportion to their shares: left[f] = f when none fits, else the
// share-weighted mean of left[f − m] over the fitting sizes m. It has no
// parameter; it returns nil when w has no fraction.
func expectedLeft(w Workload) []float64 {
	share := map[int64]float64{}
	for _, t := range w {
		if t.Fraction() {
			share[t.Milli] += t.P
		}
	}
	if len(share) == 0 {
		return nil
	}
	sizes := make([]int64, 0, len(share))
	for m := range share {
		sizes = append(sizes, m)
	}
	slices.Sort(sizes) // a fixed summation order: the same table every run
	left := make([]float64, milliPerGPU+1)
	for f := range left {
		var q, e float64
		for _, m := range sizes {
			if p := share[m]; m <= int64(f) {
				q += p
				e += p * left[int64(f)-m]
			}
		}
		if q == 0 {
			left[f] = float64(f) // no fraction fits: all of it stays
		} else {
			left[f] = e / q
		}
	}
	return left
}

type shapeKey struct {
	gpus       int
	milli, cpu int64
	models     string
}

type nodeCache struct {
	stamp  uint64 // NodeInfo.Gen+1 when frag is valid; 0 never is
	frag   float64
	accept []bool // per target: may run on this node's GPUs at all
	byReq  []reqCache
}

// reqCache is a request shape's outcome on a node at one generation.
type reqCache struct {
	stamp uint64
	delta float64 // F(n) − F(n′) for the best GPU choice
	gpu   int     // for a fraction, the GPU chosen; -1 otherwise
	loss  float64 // for a fraction, plan.loss on that GPU; 0 without a plan
}

func newFragModel(w Workload) *fragModel {
	m := &fragModel{w: w, shapes: map[shapeKey]int{}, lastShape: -1}
	m.sizes, m.sizeOf = targetSizes(w)
	m.tally = make([]sizeTally, len(m.sizes))
	return m
}

// targetSizes returns w's distinct GPU milli per GPU and, per target, its
// index in them (-1 for a CPU-only target).
func targetSizes(w Workload) (sizes []int64, sizeOf []int) {
	sizeOf = make([]int, len(w))
	for i, t := range w {
		sizeOf[i] = -1
		if t.GPUs == 0 {
			continue
		}
		k := slices.Index(sizes, t.Milli)
		if k < 0 {
			k = len(sizes)
			sizes = append(sizes, t.Milli)
		}
		sizeOf[i] = k
	}
	return sizes, sizeOf
}

// tallySizes fills out[k] with how sizes[k] meets GPUs with free milli
// free.
func tallySizes(sizes, free []int64, out []sizeTally) {
	for k, size := range sizes {
		var c sizeTally
		for _, f := range free {
			if f >= size {
				c.fit++
				c.copies += f / size
			} else {
				c.small += f
			}
		}
		out[k] = c
	}
}

func sameRequest(a, b *sched.Request) bool {
	if a.GPUs != b.GPUs || a.Milli != b.Milli || a.CPU != b.CPU || len(a.Models) != len(b.Models) {
		return false
	}
	return len(a.Models) == 0 || &a.Models[0] == &b.Models[0] || slices.Equal(a.Models, b.Models)
}

func (m *fragModel) shape(r *sched.Request) int {
	if m.lastShape >= 0 && sameRequest(&m.lastReq, r) {
		return m.lastShape
	}
	k := shapeKey{gpus: r.GPUs, milli: r.Milli, cpu: r.CPU}
	for i, s := range r.Models {
		if i > 0 {
			k.models += "|"
		}
		k.models += s
	}
	id, ok := m.shapes[k]
	if !ok {
		id = len(m.shapes)
		m.shapes[k] = id
	}
	m.lastReq, m.lastShape = *r, id
	return id
}

// accept returns, per target, whether it may run on n's GPUs at all.
func (m *fragModel) accept(n *sched.NodeInfo) []bool {
	if n.Index >= len(m.nodes) {
		m.nodes = append(m.nodes, make([]nodeCache, n.Index+1-len(m.nodes))...)
	}
	c := &m.nodes[n.Index]
	if c.accept == nil {
		c.accept = make([]bool, len(m.w))
		for i, t := range m.w {
			c.accept[i] = n.GPUs() > 0 && (len(t.Models) == 0 || acceptsModel(t.Models, n.GPUModel))
		}
	}
	return c.accept
}

func (m *fragModel) node(n *sched.NodeInfo) *nodeCache {
	m.accept(n)
	c := &m.nodes[n.Index]
	if c.stamp != n.Gen+1 {
		c.stamp, c.frag = n.Gen+1, m.fragOf(c.accept, n.CPUFree, n.FreeMilli)
	}
	return c
}

// flush drops every cached measure (after the measure's weights change).
func (m *fragModel) flush() {
	for i := range m.nodes {
		m.nodes[i].stamp = 0
		for j := range m.nodes[i].byReq {
			m.nodes[i].byReq[j].stamp = 0
		}
	}
}

func acceptsModel(models []string, model string) bool {
	return slices.Contains(models, model)
}

// fragOf is F(n) = Σ_t p_t · f(n, t): for a target that asks for no GPU,
// may not use this model, or cannot fit (GPU or CPU), all idle GPU milli is
// fragment; for one that fits, the free milli of GPUs too small for it
// (FGD's measure) plus, weighted by m.repeat, the rest of the free milli
// that copies of the target could not fill: packing remainders (60 of an
// idle GPU for 470-milli shares), idle GPUs beyond a multiple of t.GPUs, and
// GPUs left over once the node's free CPU is spent on copies of t. When
// m.left is set (allot), m.leftW · Σ left[f] over the partly used GPUs is
// added: what the fractions to come are expected to leave of them.
func (m *fragModel) fragOf(accept []bool, cpu int64, free []int64) float64 {
	var total int64
	for _, f := range free {
		total += f
	}
	if total == 0 {
		return 0
	}
	tallySizes(m.sizes, free, m.tally)
	var out float64
	for i := range m.w {
		t := &m.w[i]
		if t.GPUs == 0 || !accept[i] || cpu < t.CPU {
			out += t.P * float64(total)
			continue
		}
		c := m.tally[m.sizeOf[i]]
		fit, small, copies := c.fit, c.small, c.copies
		if fit < t.GPUs {
			out += t.P * float64(total)
			continue
		}
		out += t.P * float64(small)
		if m.repeat == 0 {
			continue
		}
		// Copies of t the node could host side by side: whole-GPU
		// shapes need t.GPUs idle GPUs each, fractions pack per GPU, and
		// the node's free CPU bounds both.
		if t.Milli >= milliPerGPU {
			copies = int64(fit / t.GPUs)
		}
		if t.CPU > 0 {
			copies = min(copies, cpu/t.CPU)
		}
		stuck := total - small - copies*int64(t.GPUs)*t.Milli
		out += m.repeat * t.P * float64(stuck)
	}
	if m.left != nil {
		// Partly used GPUs: what fractions to come are expected to leave.
		var e float64
		for _, f := range free {
			if f > 0 && f < milliPerGPU {
				e += m.left[f]
			}
		}
		out += m.leftW * e
	}
	return out + m.cpuStranded(cpu, total)
}

// cpuStranded is allot's CPU term: cpuW times the free GPU milli that the
// node's free CPU could not feed if the GPU pods to come took CPU at the
// target workload's mean rate (cpuPerMilli). 0 when cpuW is 0 (FGD).
func (m *fragModel) cpuStranded(cpu, total int64) float64 {
	if m.cpuW == 0 {
		return 0
	}
	if fed := float64(cpu) / m.cpuPerMilli; float64(total) > fed {
		return m.cpuW * (float64(total) - fed)
	}
	return 0
}

// evaluate returns F(n) − F(n′) for placing r on n and, for a fraction, the
// GPU chosen: with a plan, among the GPUs whose placement loses least of
// it, the one with the best value under better; without, the best under
// better. better(a, b, i, j) reports whether GPU i with delta a beats GPU
// j with delta b.
func (m *fragModel) evaluate(n *sched.NodeInfo, r *sched.Request, better func(n *sched.NodeInfo, a, b float64, i, j int) bool) reqCache {
	c := m.node(n)
	id := m.shape(r)
	if id >= len(c.byReq) {
		c.byReq = append(c.byReq, make([]reqCache, id+1-len(c.byReq))...)
	}
	rc := &c.byReq[id]
	if rc.stamp == n.Gen+1 {
		return *rc
	}
	free := append(m.scratch[:0], n.FreeMilli...)
	m.scratch = free
	cpu := n.CPUFree - r.CPU
	out := reqCache{stamp: n.Gen + 1, gpu: -1}
	switch {
	case r.GPUs == 0:
		out.delta = c.frag - m.fragOf(c.accept, cpu, free)
		if m.cpuW != 0 {
			// The CPU term steers GPU pods only: a CPU-only pod is not
			// charged for the GPU milli its CPU would leave unfed
			// (charging it lost on every design variant with CPU-only
			// pods; see the package documentation).
			var total int64
			for _, f := range free {
				total += f
			}
			out.delta += m.cpuStranded(cpu, total) - m.cpuStranded(n.CPUFree, total)
		}
	case r.Fractional():
		out.delta = math.Inf(-1)
		for i, f := range n.FreeMilli {
			// GPUs with equal free milli leave equal nodes, and neither
			// better prefers the later of two equals: measure the first.
			if f < r.Milli || slices.Contains(n.FreeMilli[:i], f) {
				continue
			}
			free[i] -= r.Milli
			d := c.frag - m.fragOf(c.accept, cpu, free)
			free[i] += r.Milli
			var loss float64
			if m.plan != nil {
				loss = m.plan.loss(r.Milli, f)
			}
			if out.gpu < 0 || loss < out.loss || (loss == out.loss && better(n, d, out.delta, i, out.gpu)) {
				out.delta, out.gpu, out.loss = d, i, loss
			}
		}
	default:
		left := r.GPUs
		for i, f := range free {
			if left > 0 && f == milliPerGPU {
				free[i], left = 0, left-1
			}
		}
		out.delta = c.frag - m.fragOf(c.accept, cpu, free)
	}
	*rc = out
	return out
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
