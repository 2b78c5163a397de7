package score

import "github.com/allot-dev/allot/internal/sched"

// hostReserve is allot's node-class term: it keeps the nodes that can host
// a pod shape that fits only one class of node (GPUs, CPU and memory
// capacity), such as the 8-GPU 120-core pods only the 128-core G3 nodes
// hold. The target workload does not show such shapes (they are rare, so
// the 95 % coverage leaves them out), and the measure then sees a G3 node
// as a G2 node with spare CPU: allot's CPU and repeat terms fill it with
// CPU-heavy one-GPU pods, and the 8-GPU 120-core pods that arrive later
// find no G3 node left (see the package documentation).
//
// The shapes are learnt from the run: a GPU pod without a model limit that
// fits the capacity of one class only, among the classes of the nodes the
// scorer has seen, is limited to that class. For such a shape s, need_s is
// its share of the GPU milli placed so far (the pods seen are taken as a
// sample of those to come), hosts_s is s's milli times the nodes that could
// host it now, and τ_s = min(1, need_s · total / hosts_s), total being the
// free milli of every node: the share of the capacity left for s that s's
// pods would ask for if the pods to come were like those placed, and so
// the chance that a node taken from s is one a pod of s will miss, as for
// the GPU-model charge (reservation). A GPU pod that fits another class too
// and would leave a node unable to host s pays τ_s · its own milli in ΔF;
// pods of s, CPU-only pods and pods limited to GPU models pay nothing.
// Nothing is fitted: without a one-class shape among the pods placed there
// is no charge.
type hostReserve struct {
	ids     map[hostClass]int
	classes []hostClass
	lim     []hostShape
	nodes   []hostNode // by NodeInfo.Index
	total   int64      // free milli over the nodes read
	placed  int64      // GPU milli placed by GPU pods without a model limit
}

// hostClass is a node's capacity.
type hostClass struct {
	gpus     int
	cpu, mem int64
}

func (k hostClass) fits(q *sched.Request) bool {
	return q.GPUs <= k.gpus && q.CPU <= k.cpu && q.Memory <= k.mem
}

// hostShape is a shape that fits one class only.
type hostShape struct {
	q      sched.Request
	class  int
	placed int64 // its GPU milli placed so far
	hosts  int64 // its milli times the nodes that could host it now
}

// hostNode is what one node adds to the totals, as last read.
type hostNode struct {
	stamp uint64 // NodeInfo.Gen+1 when read at that generation; 0 to re-read
	read  bool
	free  int64
	hosts []bool // per hostShape: the node could host it
}

func newHostReserve() *hostReserve { return &hostReserve{ids: map[hostClass]int{}} }

func (r *hostReserve) class(n *sched.NodeInfo) int {
	k := hostClass{n.GPUs(), n.CPUCap, n.MemCap}
	id, ok := r.ids[k]
	if !ok {
		id = len(r.classes)
		r.ids[k] = id
		r.classes = append(r.classes, k)
	}
	return id
}

// only returns the one class whose capacity fits q, or -1.
func (r *hostReserve) only(q *sched.Request) int {
	id := -1
	for i, k := range r.classes {
		if k.fits(q) {
			if id >= 0 {
				return -1
			}
			id = i
		}
	}
	return id
}

// takes returns how many idle GPUs q takes on n: a fraction takes one
// when the GPU chosen for it (gpu) is idle.
func takes(n *sched.NodeInfo, q *sched.Request, gpu int) int {
	if !q.Fractional() {
		return q.GPUs
	}
	if gpu >= 0 && n.FreeMilli[gpu] == milliPerGPU {
		return 1
	}
	return 0
}

// hosts reports whether a node with the given free capacity could host s
// (free per GPU is only looked at for a fraction).
func hosts(idle int, cpu, mem int64, free []int64, s *sched.Request) bool {
	if cpu < s.CPU || mem < s.Memory {
		return false
	}
	if s.Fractional() {
		for _, f := range free {
			if f >= s.Milli {
				return true
			}
		}
		return idle > 0
	}
	return idle >= s.GPUs
}

// read returns n's entry, re-reading n when its generation moved.
func (r *hostReserve) read(n *sched.NodeInfo) *hostNode {
	for len(r.nodes) <= n.Index {
		r.nodes = append(r.nodes, hostNode{})
	}
	c := &r.nodes[n.Index]
	if c.read && c.stamp == n.Gen+1 && len(c.hosts) == len(r.lim) {
		return c
	}
	if c.read {
		r.total -= c.free
		for i, h := range c.hosts {
			if h {
				r.lim[i].hosts -= r.lim[i].q.TotalMilli()
			}
		}
	}
	k := r.class(n)
	c.read, c.stamp, c.free, c.hosts = true, n.Gen+1, n.FreeMilliTotal(), c.hosts[:0]
	r.total += c.free
	for i := range r.lim {
		s := &r.lim[i]
		h := s.class == k && hosts(n.FreeWhole, n.CPUFree, n.MemFree, n.FreeMilli, &s.q)
		c.hosts = append(c.hosts, h)
		if h {
			s.hosts += s.q.TotalMilli()
		}
	}
	return c
}

// charge returns the charge for placing q on n, a fraction on GPU gpu
// (see hostReserve). Every node scored is read, so that its class is known
// before a pod is judged to fit one class only: a pod is scored on every
// node it fits.
func (r *hostReserve) charge(n *sched.NodeInfo, q *sched.Request, gpu int) float64 {
	c := r.read(n)
	if len(r.lim) == 0 || q.GPUs == 0 || len(q.Models) > 0 {
		return 0
	}
	var out float64
	idle := n.FreeWhole - takes(n, q, gpu)
	for i, h := range c.hosts {
		s := &r.lim[i]
		if !h || s.hosts <= 0 || hosts(idle, n.CPUFree-q.CPU, n.MemFree-q.Memory, nil, &s.q) || r.only(q) >= 0 {
			continue
		}
		need := float64(s.placed) / float64(r.placed)
		out += min(1, need*float64(r.total)/float64(s.hosts)) * float64(q.TotalMilli())
	}
	return out
}

// place records q going to n, a fraction to GPU gpu: a GPU pod without a
// model limit counts in need, and teaches q's shape when it fits one class
// only; n is counted as it will be after q (and re-read when next scored).
func (r *hostReserve) place(n *sched.NodeInfo, q *sched.Request, gpu int) {
	if q.GPUs > 0 && len(q.Models) == 0 {
		r.placed += q.TotalMilli()
		if k := r.only(q); k >= 0 {
			i := 0
			for i < len(r.lim) && !(sameRequest(&r.lim[i].q, q) && r.lim[i].q.Memory == q.Memory) {
				i++
			}
			if i == len(r.lim) {
				r.lim = append(r.lim, hostShape{q: *q, class: k})
			}
			r.lim[i].placed += q.TotalMilli()
		}
	}
	if len(r.lim) == 0 {
		return
	}
	c := r.read(n)
	idle := n.FreeWhole - takes(n, q, gpu)
	for i, h := range c.hosts {
		if h && !hosts(idle, n.CPUFree-q.CPU, n.MemFree-q.Memory, nil, &r.lim[i].q) {
			c.hosts[i] = false
			r.lim[i].hosts -= r.lim[i].q.TotalMilli()
		}
	}
	c.free -= q.TotalMilli()
	r.total -= q.TotalMilli()
	c.stamp = 0
}
