package sched

import "github.com/allot-dev/allot/internal/model"

// A preemption for one instance of whole GPUs (cold.go) releases victims
// cheapest first until some node has room, then spares, costliest first,
// every victim the job can do without. When the node that first has room
// holds it on its own victims alone, that search ends with a subset of
// that node's victims, and the hundreds released and restored elsewhere
// change nothing. oneNode finds that node by counting, node by node, what
// the victims read so far would free there, moving none, and then moves
// only that node's victims. It answers exactly as the whole search does,
// or not at all (the search then runs as before, on the state it found):
//
//   - The search's shortest prefix is the one whose last victim first gives
//     some node room. Before it no node has room (the counts are exact:
//     GPU by GPU, as releasing would leave the node), and with it the job
//     fits: it fits with the
//     node's own victims released alone, and releasing more never turns a
//     fit into a misfit (trials are monotone).
//   - Sparing restores victims costliest first and keeps each restored
//     while the job still fits. Victims on other nodes are all spared: what
//     stays released always includes the node's kept victims, with which
//     alone the job fits. A victim of the node is kept exactly when
//     restoring it takes the node's room away: no other node has room with
//     fewer victims than gave the first one room.
//
// So oneNode gives up, changing nothing the search reads, when a trial
// could read more than the node's own room: the job already has room
// somewhere (what stops it is a quota, a partition or power), a victim
// frees the last room on two nodes at once, a node's use depends on what
// others use (held and kept nodes), or the job does not fit with the
// node's victims released, or stops fitting while the node still has
// room: the filters beyond the node then decide, and other nodes' victims
// may matter.
// TestOneNodeMatchesTheSearch compares the two on busy worlds.
type oneNode struct {
	gen    uint64
	stamp  []uint64 // by node: gen when counted in this preemption
	usable []bool
	// By node: the whole GPUs, CPU and memory free once the victims read
	// are gone; freed is the milli-GPU they free on each GPU, the node's
	// GPUs from off.
	whole    []int
	cpu, mem []int64
	off      []int
	freed    []int64
	// Scratch: the node's victims, cheapest first, and whether each is
	// released.
	list     []victim
	released []bool
}

// noOneNode turns oneNode off, and oneNodeAnswered (when set) hears of
// each answer, for the test that compares it with the whole search.
var (
	noOneNode       = false
	oneNodeAnswered func()
)

// preemptOnOneNode is preemptTrials' search when one node's victims decide
// it (see oneNode): the victims, and whether it answered. It starts where
// preemptTrials has read the stream and released nothing; when it does not
// answer, every victim is back where it was.
func (st *state) preemptOnOneNode(a *attempt) ([]victim, bool) {
	if noOneNode || !st.cold.on || st.roomFor(a) {
		return nil, false
	}
	o, vs := &st.one, &st.victims
	if o.stamp == nil {
		n := len(st.nodes)
		o.stamp, o.usable, o.whole = make([]uint64, n), make([]bool, n), make([]int, n)
		o.cpu, o.mem, o.off = make([]int64, n), make([]int64, n), make([]int, n+1)
		for i, node := range st.nodes {
			o.off[i+1] = o.off[i] + node.GPUs()
		}
		o.freed = make([]int64, o.off[n])
	}
	o.gen++
	r := &a.req
	node, last := -1, -1 // the first node with room, and the victim that gave it
	for at := 0; node < 0; at++ {
		if at == len(vs.out) && !st.nextVictim() {
			return nil, false // the whole stream gives no node room
		}
		rj := vs.out[at].rj
		for k, i := range rj.nodes {
			if o.stamp[i] != o.gen {
				if st.holdOf[i] >= 0 || st.keptOf[i] >= 0 {
					return nil, false
				}
				n := st.nodes[i]
				o.stamp[i], o.whole[i], o.cpu[i], o.mem[i] = o.gen, n.FreeWhole, n.CPUFree, n.MemFree
				clear(o.freed[o.off[i]:o.off[i+1]])
				o.usable[i] = n.Ready && st.room.groupOK[st.groupOf[i]] && st.mayUse(a, i)
			}
			if !o.usable[i] {
				continue
			}
			n := st.nodes[i]
			for _, g := range rj.gpus[k] { // as NodeInfo.Unbind counts a GPU freed whole
				f := &o.freed[o.off[i]+g]
				*f += rj.req.Milli
				if n.FreeMilli[g]+*f == model.MilliPerGPU {
					o.whole[i]++
				}
			}
			o.cpu[i] += rj.req.CPU
			o.mem[i] += rj.req.Memory
			if o.whole[i] >= r.GPUs && o.cpu[i] >= r.CPU && o.mem[i] >= r.Memory {
				if node >= 0 && node != i {
					return nil, false // two nodes at once
				}
				node, last = i, at
			}
		}
	}
	// The node's victims among those read, cheapest first, released.
	list := o.list[:0]
	for _, v := range vs.out[:last+1] {
		for _, i := range v.rj.nodes {
			if i == node {
				list = append(list, v)
				break
			}
		}
	}
	o.list = list
	released := o.released[:0]
	for _, v := range list {
		st.moveVictim(v.rj, true)
		released = append(released, true)
	}
	o.released = released
	fits := func() bool { return st.roomFor(a) && st.placeable(a) }
	giveUp := func() ([]victim, bool) {
		for i := len(list) - 1; i >= 0; i-- {
			if released[i] {
				st.moveVictim(list[i].rj, false)
			}
		}
		clear(list)
		return nil, false
	}
	if !st.nodeHasRoom(a, node) || !fits() {
		return giveUp()
	}
	// Spare, costliest first, what the job can do without.
	for i := len(list) - 1; i >= 0; i-- {
		st.moveVictim(list[i].rj, false)
		released[i] = false
		if fits() {
			continue
		}
		if st.nodeHasRoom(a, node) {
			return giveUp() // it stopped fitting for a reason beyond the node
		}
		st.moveVictim(list[i].rj, true)
		released[i] = true
	}
	var out []victim
	for i, v := range list {
		if released[i] {
			out = append(out, v)
		}
	}
	clear(list)
	if oneNodeAnswered != nil {
		oneNodeAnswered()
	}
	return out, true
}

// nodeHasRoom reports whether node i alone has room for one instance of a:
// the room's count for the node (countRoom).
func (st *state) nodeHasRoom(a *attempt, i int) bool {
	n := st.nodes[i]
	return st.room.groupOK[st.groupOf[i]] && n.Ready && st.mayUse(a, i) && slots(n, &a.req, 1) > 0
}
