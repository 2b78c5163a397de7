package sched

import "github.com/allot-dev/allot/internal/model"

// KindSlots is the number of workload kinds NodeInfo.Kinds counts: CPU-only,
// fractional, then 1..KindSlots-2 whole GPUs (larger requests share the last).
const KindSlots = 10

// NodeInfo is a node as the core sees it inside one cycle: its capacity and
// what is free. The core works on its own copies; nothing outside a cycle
// sees them change.
type NodeInfo struct {
	Index     int // position in the cycle's node list
	Rank      int // tie-break order: among equal scores the lower rank wins
	Name      string
	SKU       string
	Series    string
	GPUModel  string
	Region    string
	Residency string
	Cluster   string
	Fabric    model.Fabric
	Leaf      string
	Rack      string
	Ready     bool // accepts new work
	Draining  bool // not Ready because an administrator drains it (model.NodeDraining)
	PowerW    int64

	FreeMilli []int64 // per GPU; model.MilliPerGPU when the GPU is idle
	FreeWhole int     // GPUs with nothing on them
	CPUCap    int64
	CPUFree   int64
	MemCap    int64
	MemFree   int64
	Pods      int            // instances bound here
	Kinds     [KindSlots]int // instances bound here by kind (see KindOf)

	// Gen changes whenever the node's free capacity changes, so scorers may
	// cache what they computed for a node and generation.
	Gen uint64

	// Images are the images the node holds, by the cycle's ids
	// (Request.Image), sorted; nil for none (images.go).
	Images []int32
}

// GPUs is the number of GPUs on the node.
func (n *NodeInfo) GPUs() int { return len(n.FreeMilli) }

// FreeMilliTotal is the sum of free milli-GPU over the node's GPUs.
func (n *NodeInfo) FreeMilliTotal() int64 {
	var t int64
	for _, f := range n.FreeMilli {
		t += f
	}
	return t
}

// UsedMilli is the milli-GPU bound on the node.
func (n *NodeInfo) UsedMilli() int64 { return int64(n.GPUs())*model.MilliPerGPU - n.FreeMilliTotal() }

// Request is the shape of one instance: what must fit on a single node.
type Request struct {
	GPUs   int   // GPUs the instance spans (1 for a fraction)
	Milli  int64 // per GPU: model.MilliPerGPU for whole GPUs, less for a fraction
	CPU    int64 // milli-cores
	Memory int64 // MiB
	Models []string
	// Image is the cycle's id of the image the instance runs from when a
	// node holds it (images.go); 0 for none: no node's images are looked
	// at.
	Image int32
}

// RequestOf is the per-instance request of a job's resources.
func RequestOf(r model.Resources) Request {
	q := Request{GPUs: r.GPUsPerInstance, Milli: model.MilliPerGPU, CPU: r.CPUMilli, Memory: r.MemoryMiB, Models: r.GPUModels}
	if r.Fractional() {
		q.Milli = r.GPUMilli
	}
	if q.GPUs == 0 {
		q.Milli = 0
	}
	return q
}

// Fractional reports whether the request takes part of one GPU.
func (r *Request) Fractional() bool { return r.GPUs == 1 && r.Milli < model.MilliPerGPU }

// TotalMilli is the milli-GPU the instance takes.
func (r *Request) TotalMilli() int64 { return int64(r.GPUs) * r.Milli }

// KindOf classifies a request for NodeInfo.Kinds: 0 CPU-only, 1 fractional,
// k+1 for k whole GPUs.
func KindOf(r *Request) int {
	switch {
	case r.GPUs == 0:
		return 0
	case r.Fractional():
		return 1
	case r.GPUs+1 >= KindSlots:
		return KindSlots - 1
	}
	return r.GPUs + 1
}

// AcceptsModel reports whether the request may use GPUs of model.
func (r *Request) AcceptsModel(model string) bool {
	if len(r.Models) == 0 {
		return true
	}
	for _, m := range r.Models {
		if m == model {
			return true
		}
	}
	return false
}

// FitsResources reports whether r fits the node's free GPU, CPU and memory,
// ignoring readiness, model and policy. It is the one capacity test of allot.
func (n *NodeInfo) FitsResources(r *Request) bool {
	if n.CPUFree < r.CPU || n.MemFree < r.Memory {
		return false
	}
	switch {
	case r.GPUs == 0:
		return true
	case r.Fractional():
		for _, f := range n.FreeMilli {
			if f >= r.Milli {
				return true
			}
		}
		return false
	}
	return n.FreeWhole >= r.GPUs
}

// Fits reports whether r can be bound to the node now: ready, right GPU
// model, and free capacity.
func (n *NodeInfo) Fits(r *Request) bool {
	return n.Ready && (r.GPUs == 0 || r.AcceptsModel(n.GPUModel)) && n.FitsResources(r)
}

// PickGPUs returns the GPUs an instance of r would take on n: the
// lowest-index idle GPUs for whole GPUs, the GPU with the least free milli
// that still fits (lowest index on ties) for a fraction. It returns nil when r
// does not fit. dst is reused when large enough.
func (n *NodeInfo) PickGPUs(r *Request, dst []int) []int {
	dst = dst[:0]
	if r.GPUs == 0 {
		return dst
	}
	if r.Fractional() {
		best := -1
		for i, f := range n.FreeMilli {
			if f >= r.Milli && (best < 0 || f < n.FreeMilli[best]) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		return append(dst, best)
	}
	for i, f := range n.FreeMilli {
		if f == model.MilliPerGPU {
			dst = append(dst, i)
			if len(dst) == r.GPUs {
				return dst
			}
		}
	}
	return nil
}

// Bind takes r's capacity on the given GPUs.
func (n *NodeInfo) Bind(r *Request, gpus []int) {
	n.apply(r, gpus, -1)
	n.Pods++
	n.Kinds[KindOf(r)]++
}

// Unbind returns r's capacity on the given GPUs.
func (n *NodeInfo) Unbind(r *Request, gpus []int) {
	n.apply(r, gpus, +1)
	n.Pods--
	n.Kinds[KindOf(r)]--
}

func (n *NodeInfo) apply(r *Request, gpus []int, sign int64) {
	n.CPUFree += sign * r.CPU
	n.MemFree += sign * r.Memory
	for _, g := range gpus {
		before := n.FreeMilli[g]
		n.FreeMilli[g] += sign * r.Milli
		after := n.FreeMilli[g]
		if before == model.MilliPerGPU && after != model.MilliPerGPU {
			n.FreeWhole--
		} else if before != model.MilliPerGPU && after == model.MilliPerGPU {
			n.FreeWhole++
		}
	}
	n.Gen++
}

// Clone returns a deep copy of n.
func (n *NodeInfo) Clone() *NodeInfo {
	c := *n
	c.FreeMilli = append([]int64(nil), n.FreeMilli...)
	return &c
}
