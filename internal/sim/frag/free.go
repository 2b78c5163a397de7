package frag

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
)

// FreeReport says where one seed's free GPU capacity lies at one moment:
// the partly used GPUs grouped by the fractions they hold. Once the
// cluster has no idle GPU, the free milli is what placement lost to
// packing, and the groups say which fractions were put together.
type FreeReport struct {
	ArrivedPct float64 // arrived % at the attempt reported
	AllocPct   float64 // allocation % then
	FreeMilli  int64   // free GPU milli then, idle GPUs included
	IdleGPUs   int
	// FullAtPct is the arrived % at the first attempt after which no GPU
	// was idle, and FullFreeMilli the free milli then; 0 when the cluster
	// had not filled by the attempt reported.
	FullAtPct     float64
	FullFreeMilli int64
	Groups        []FreeGroup // most free milli first
}

// FreeGroup is the partly used GPUs that hold the same fractions.
type FreeGroup struct {
	Holds     []int64 // the fractions' milli, largest first
	GPUs      int
	FreeMilli int64
}

// holdings follows which fractions each GPU holds, for FreeReport.
type holdings struct {
	gpus  [][][]int64 // by node index and GPU: the fractions' milli
	idle  int         // GPUs with nothing on them
	full  bool        // idle has reached 0
	atPct float64     // the arrived % to report at
	done  bool        // rep is taken
	rep   FreeReport
}

func newHoldings(nodes []*sched.NodeInfo, atPct float64) *holdings {
	h := &holdings{gpus: make([][][]int64, len(nodes)), atPct: atPct}
	for i, n := range nodes {
		h.gpus[i] = make([][]int64, n.GPUs())
		h.idle += n.FreeWhole
	}
	return h
}

// bound records r going to node n's GPUs, before n is bound.
func (h *holdings) bound(n *sched.NodeInfo, r *sched.Request, gpus []int) {
	if r.Fractional() {
		g := gpus[0]
		h.gpus[n.Index][g] = append(h.gpus[n.Index][g], r.Milli)
		if n.FreeMilli[g] == model.MilliPerGPU {
			h.idle--
		}
		return
	}
	h.idle -= len(gpus)
}

// attempted is called after each attempt with arrived and allocation %
// and the free milli; it notes when the cluster fills and reports at the
// first attempt that brings arrived to atPct.
func (h *holdings) attempted(nodes []*sched.NodeInfo, arrivedPct, allocPct float64, free int64) {
	if h.done {
		return
	}
	if !h.full && h.idle == 0 {
		h.full = true
		h.rep.FullAtPct, h.rep.FullFreeMilli = arrivedPct, free
	}
	if arrivedPct < h.atPct {
		return
	}
	h.done = true
	h.rep.ArrivedPct, h.rep.AllocPct, h.rep.FreeMilli, h.rep.IdleGPUs = arrivedPct, allocPct, free, h.idle
	byHolds := map[string]int{}
	for i, n := range nodes {
		for g, f := range n.FreeMilli {
			held := h.gpus[i][g]
			if f == 0 || f == model.MilliPerGPU || len(held) == 0 {
				continue
			}
			holds := slices.Clone(held)
			slices.SortFunc(holds, func(a, b int64) int { return cmp.Compare(b, a) })
			k := fmt.Sprint(holds)
			j, ok := byHolds[k]
			if !ok {
				j = len(h.rep.Groups)
				byHolds[k] = j
				h.rep.Groups = append(h.rep.Groups, FreeGroup{Holds: holds})
			}
			h.rep.Groups[j].GPUs++
			h.rep.Groups[j].FreeMilli += f
		}
	}
	slices.SortStableFunc(h.rep.Groups, func(a, b FreeGroup) int {
		return cmp.Or(cmp.Compare(b.FreeMilli, a.FreeMilli), slices.Compare(b.Holds, a.Holds))
	})
}
