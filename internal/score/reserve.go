package score

import "github.com/allot-dev/allot/internal/sched"

// reservation is allot's GPU-model term: it keeps a model's free capacity
// for the pods that can only use that model. FGD's measure pulls the other
// way: a target that may not use a node's model counts all of the node's
// free milli as fragment, so filling a node of a model few targets accept
// lowers F the most, and pods that could go anywhere fill the small models
// first; the pods limited to those models then find them full while the
// large model keeps idle GPUs (see the package documentation).
//
// need[m] is the share of the target workload's GPU milli that only model
// m can take (a target limited to k models counts 1/k on each). If the
// cluster's free capacity were filled by the target workload, the pods
// limited to m would ask for need[m] · total of it, total being the free
// milli over all models; tightness τ_m = min(1, need[m] · total / free[m])
// is the share of m's free milli they would take: the chance that milli of
// m taken by another pod is milli one of them will miss. A GPU pod that
// may use another model pays τ_m · its milli in ΔF; a pod limited to one
// model pays nothing (the capacity is kept for it, and all its candidate
// nodes share that model). The cap at 1 makes τ a probability; everything
// else is read off the target workload and the nodes.
//
// free[m] sums the free milli of the nodes of model m that the scorer has
// measured, each as last measured: Score re-reads a node whose generation
// moved, and ChooseGPUs counts the pod it places at once (the chosen node
// is re-read when next scored), so a node that fits no later pod is not
// left at its free capacity before its last pod. Nodes never scored are
// not counted.
type reservation struct {
	ids   map[string]int // GPU model → index into need and free
	need  []float64
	free  []int64
	total int64
	nodes []reserveNode // by NodeInfo.Index
}

// reserveNode is what one node adds to reservation.free.
type reserveNode struct {
	stamp uint64 // NodeInfo.Gen+1 when read at that generation; 0 to re-read
	model int    // index into free; -1 before the node is first read
	free  int64
}

// newReservation returns w's reservation, or nil when no GPU target of w
// is limited to certain models.
func newReservation(w Workload) *reservation {
	var all float64
	for _, t := range w {
		all += t.P * float64(int64(t.GPUs)*t.Milli)
	}
	r := &reservation{ids: map[string]int{}}
	for _, t := range w {
		if t.GPUs == 0 || len(t.Models) == 0 {
			continue
		}
		for _, x := range t.Models {
			id := r.model(x)
			r.need[id] += t.P * float64(int64(t.GPUs)*t.Milli) / all / float64(len(t.Models))
		}
	}
	if len(r.ids) == 0 {
		return nil
	}
	return r
}

// model returns the index of GPU model x, adding it when new.
func (r *reservation) model(x string) int {
	id, ok := r.ids[x]
	if !ok {
		id = len(r.need)
		r.ids[x] = id
		r.need, r.free = append(r.need, 0), append(r.free, 0)
	}
	return id
}

// count records free as n's free milli; stamp is the generation it holds
// for (0: re-read n when next scored).
func (r *reservation) count(n *sched.NodeInfo, free int64, stamp uint64) {
	for len(r.nodes) <= n.Index {
		r.nodes = append(r.nodes, reserveNode{model: -1})
	}
	c := &r.nodes[n.Index]
	if c.model >= 0 {
		r.free[c.model] -= c.free
		r.total -= c.free
	}
	c.stamp, c.model, c.free = stamp, r.model(n.GPUModel), free
	r.free[c.model] += free
	r.total += free
}

// charge returns the reservation's charge for placing q on n (see
// reservation), after re-reading n if its generation moved. 0 for a nil
// reservation.
func (r *reservation) charge(n *sched.NodeInfo, q *sched.Request) float64 {
	if r == nil {
		return 0
	}
	if n.Index >= len(r.nodes) || r.nodes[n.Index].stamp != n.Gen+1 {
		r.count(n, n.FreeMilliTotal(), n.Gen+1)
	}
	m := r.nodes[n.Index].model
	if q.GPUs == 0 || len(q.Models) == 1 || r.need[m] == 0 || r.free[m] <= 0 {
		return 0
	}
	tight := min(1, r.need[m]*float64(r.total)/float64(r.free[m]))
	return tight * float64(q.TotalMilli())
}

// placed counts q going to n before it is bound, so that a node no later
// pod fits is not left counted at its free capacity before q; n is re-read
// when next scored. Nil-safe.
func (r *reservation) placed(n *sched.NodeInfo, q *sched.Request) {
	if r != nil {
		r.count(n, n.FreeMilliTotal()-q.TotalMilli(), 0)
	}
}
