package score

import (
	"slices"

	"github.com/allot-dev/allot/internal/sched"
)

// Look-ahead sizes: how many futures the value averages and how many pods
// each may place. They bound cost and were not fitted: round 3 chose them
// for its look-ahead candidate (package documentation) and round 4 kept
// them untouched. Fewer futures make the value noisier; the depth is
// reached only by nodes that hold more than 64 of the target's pods.
const (
	lookFutures = 8
	lookDepth   = 64
)

// lookahead measures what a node's free GPU capacity is expected to strand
// once GPU pods of the target workload have filled it, including what its
// free CPU cannot feed. A rollout places pods drawn from the target (among
// the shapes that still fit, by GPUs and by CPU, in proportion to their
// shares) until none fits, and counts the GPU milli left; the value is the
// mean over lookFutures rollouts. Every rollout reads one fixed stream of
// uniforms, so the value is a function of the node's state (its model, free
// CPU and the multiset of its GPUs' free milli) and two nodes in one state
// share it. The draws are fixed, not random: the same calls give the same
// scores.
type lookahead struct {
	w    Workload // the target's GPU shapes
	idx  []int    // w[i] is the target workload's idx[i]
	u    []float64
	memo map[lookKey]float64
	// sizes and sizeOf are w's GPU milli sizes (targetSizes).
	sizes  []int64
	sizeOf []int
	// free, work, after, fit and tally are scratch.
	free, work, after []int64
	fit               []int
	tally             []sizeTally
}

// lookKey is a node state; nodes of more than len(free) GPUs are not
// memoised.
type lookKey struct {
	model string
	cpu   int64
	n     int
	free  [8]int16
}

// lookMemoCap bounds the memo: when full it is cleared, since states of a
// filling cluster seldom recur once passed.
const lookMemoCap = 1 << 18

func newLookahead(w Workload) *lookahead {
	var gpu Workload
	var idx []int
	for i, t := range w {
		if t.GPUs > 0 {
			gpu, idx = append(gpu, t), append(idx, i)
		}
	}
	if len(gpu) == 0 {
		return nil
	}
	// A fixed stream of uniforms: a small linear congruential generator,
	// so the stream is the same on every platform and Go version.
	u := make([]float64, lookFutures*lookDepth)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range u {
		x = x*6364136223846793005 + 1442695040888963407
		u[i] = float64(x>>11) / (1 << 53)
	}
	l := &lookahead{w: gpu, idx: idx, u: u, memo: map[lookKey]float64{}}
	l.sizes, l.sizeOf = targetSizes(gpu)
	l.tally = make([]sizeTally, len(l.sizes))
	return l
}

// value returns the GPU milli a node of GPU model model, with free CPU cpu
// and GPUs with free milli free (not modified), is expected to strand,
// plus FGD's
// next-pod measure over the target's GPU shapes that may use the model:
// the milli the next pod of each could not use. accept says, per target of
// the full workload m.w, whether it may use the node's model.
func (l *lookahead) value(model string, accept []bool, cpu int64, free []int64) float64 {
	k := lookKey{model: model, cpu: cpu, n: len(free)}
	s := append(l.free[:0], free...)
	slices.Sort(s)
	l.free = s
	memo := len(s) <= len(k.free)
	if memo {
		for i, f := range s {
			k.free[i] = int16(f)
		}
		if v, ok := l.memo[k]; ok {
			return v
		}
	}
	v := l.rollout(accept, cpu, s) + l.nextPod(accept, cpu, s)
	if memo {
		if len(l.memo) >= lookMemoCap {
			clear(l.memo)
		}
		l.memo[k] = v
	}
	return v
}

// nextPod is FGD's measure restricted to the GPU targets that may use the
// node's model: for each, the free milli its next pod could not use (all
// of it when the pod does not fit).
func (l *lookahead) nextPod(accept []bool, cpu int64, free []int64) float64 {
	var total int64
	for _, f := range free {
		total += f
	}
	tallySizes(l.sizes, free, l.tally)
	var out float64
	for i := range l.w {
		t := &l.w[i]
		if !accept[l.idx[i]] {
			continue
		}
		if c := l.tally[l.sizeOf[i]]; c.fit < t.GPUs || cpu < t.CPU {
			out += t.P * float64(total)
		} else {
			out += t.P * float64(c.small)
		}
	}
	return out
}

// rollout is the mean GPU milli left over lookFutures fillings of the
// node by pods drawn from l.w. A fraction goes to the fullest GPU it fits,
// a whole-GPU pod to idle GPUs.
func (l *lookahead) rollout(accept []bool, cpu int64, free []int64) float64 {
	work := append(l.work[:0], free...)
	l.work = work
	var left int64
	for f := range lookFutures {
		copy(work, free)
		c := cpu
		for d := range lookDepth {
			fit, sum := l.fit[:0], 0.0
			for i := range l.w {
				if accept[l.idx[i]] && c >= l.w[i].CPU && fits(&l.w[i], work) {
					fit = append(fit, i)
					sum += l.w[i].P
				}
			}
			l.fit = fit
			if len(fit) == 0 {
				break
			}
			x, pick := l.u[f*lookDepth+d]*sum, fit[len(fit)-1]
			for _, i := range fit {
				if x -= l.w[i].P; x < 0 {
					pick = i
					break
				}
			}
			place(&l.w[pick], work)
			c -= l.w[pick].CPU
		}
		for _, m := range work {
			left += m
		}
	}
	return float64(left) / lookFutures
}

// fits reports whether t fits GPUs with free milli free.
func fits(t *Target, free []int64) bool {
	n := 0
	for _, f := range free {
		if f >= t.Milli {
			if n++; n >= t.GPUs {
				return true
			}
		}
	}
	return false
}

// place takes t's GPUs out of free: a fraction from the fullest GPU it
// fits, whole GPUs from the first idle ones.
func place(t *Target, free []int64) {
	if t.GPUs == 1 && t.Milli < milliPerGPU {
		best := -1
		for i, f := range free {
			if f >= t.Milli && (best < 0 || f < free[best]) {
				best = i
			}
		}
		free[best] -= t.Milli
		return
	}
	left := t.GPUs
	for i, f := range free {
		if left > 0 && f >= t.Milli {
			free[i], left = f-t.Milli, left-1
		}
	}
}

// delta returns R(n) − R(n′) for placing r on n: the look-ahead's change
// when r takes its CPU and GPUs (a fraction on GPU gpu).
func (l *lookahead) delta(n *sched.NodeInfo, accept []bool, r *sched.Request, gpu int) float64 {
	before := l.value(n.GPUModel, accept, n.CPUFree, n.FreeMilli)
	after := append(l.after[:0], n.FreeMilli...)
	l.after = after
	switch {
	case r.GPUs == 0:
	case r.Fractional():
		after[gpu] -= r.Milli
	default:
		left := r.GPUs
		for i, f := range after {
			if left > 0 && f == milliPerGPU {
				after[i], left = 0, left-1
			}
		}
	}
	return before - l.value(n.GPUModel, accept, n.CPUFree-r.CPU, after)
}
