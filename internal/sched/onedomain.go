package sched

import "github.com/allot-dev/allot/internal/model"

// A preemption whose trials are monotone releases victims cheapest first
// until some gang domain has room for the whole job (for one instance: some
// node has room), then spares, costliest first, every victim the job can
// do without. When the room that appears first decides it, that search ends
// with victims of the nodes that have room in that domain, and the hundreds
// released and restored elsewhere change nothing. oneDomain finds that
// domain by counting, node by node, the room the victims read so far would
// leave there, moving none, then moves only the victims of the domain's
// nodes with room, and spares among them. It answers exactly as the whole
// search does, or not at all (the search then runs as before, on the state
// it found):
//
//   - The search's shortest prefix is the one whose last victim first gives
//     some domain room for the job. Before it no domain has room (the
//     counts are exact: GPU by GPU, as releasing would leave each node), and
//     with it the job fits: it fits with the victims of the domain's nodes
//     with room released alone, and releasing more never turns a fit into a
//     misfit (trials are monotone).
//   - Sparing restores victims costliest first and keeps each restored
//     while the job still fits. Victims elsewhere are all spared: what stays
//     released always includes the domain's kept victims, with which alone
//     the job fits. A victim of those nodes is kept exactly when restoring
//     it takes the domain's room away: no other domain has room with fewer
//     victims than gave this one room, and a node without room in it then
//     has none with fewer victims either.
//
// So oneDomain gives up, leaving every victim as it found it, when a trial
// could read more than that room: the job already has room (what stops it
// is a quota, a partition or power), one victim gives two domains room at
// once, a node's use depends on what others use (held and kept nodes), or
// the job does not fit with the domain's victims released, or stops
// fitting while the domain still has room: the filters beyond the room
// then decide, and other victims may matter.
// TestOneDomainMatchesTheSearch compares the two on busy worlds.
type oneDomain struct {
	gen    uint64
	stamp  []uint64 // by node: gen when counted in this preemption
	usable []bool   // by node: the room counts it (countRoom)
	// By node: the whole GPUs, CPU and memory free, and the job's slots,
	// once the victims read are gone; freed is the milli-GPU they free on
	// each GPU, the node's GPUs from off.
	whole    []int
	cpu, mem []int64
	slots    []int
	off      []int
	freed    []int64
	// By domain: gen when counted, and its slots as slots holds them.
	dstamp []uint64
	dslots []int
	// Scratch: the victims moved, cheapest first.
	list []victim
}

// noOneDomain turns oneDomain off, and oneDomainAnswered (when set) hears
// of each answer, for the test that compares it with the whole search.
var (
	noOneDomain       = false
	oneDomainAnswered func()
)

// preemptInOneDomain is preemptTrials' search when the first domain with
// room decides it (see oneDomain): the victims, and whether it answered.
// It starts where preemptTrials has read the stream, nothing released; when
// it does not answer, every victim is where it was.
func (st *state) preemptInOneDomain(a *attempt) ([]victim, bool) {
	if noOneDomain || st.roomFor(a) {
		return nil, false
	}
	o, vs, r := &st.one, &st.victims, &st.room
	if o.stamp == nil {
		n := len(st.nodes)
		o.stamp, o.usable, o.whole, o.slots = make([]uint64, n), make([]bool, n), make([]int, n), make([]int, n)
		o.cpu, o.mem, o.off = make([]int64, n), make([]int64, n), make([]int, n+1)
		for i, node := range st.nodes {
			o.off[i+1] = o.off[i] + node.GPUs()
		}
		o.freed = make([]int64, o.off[n])
		o.dstamp, o.dslots = make([]uint64, len(st.domains)), make([]int, len(st.domains))
	}
	o.gen++
	need := max(a.count, 1) // the slots roomFor asks of one domain
	dom, last := -1, -1     // the first domain with room, and the victim that gave it
	for at := 0; dom < 0; at++ {
		if at == len(vs.out) && !st.nextVictim() {
			return nil, false // the whole stream gives no domain room
		}
		rj := vs.out[at].rj
		for k, i := range rj.nodes {
			if o.stamp[i] != o.gen {
				if st.holdOf[i] >= 0 || st.keptOf[i] >= 0 {
					return nil, false
				}
				st.countOne(a, i)
			}
			if !o.usable[i] {
				continue
			}
			n := st.nodes[i]
			for _, g := range rj.gpus[k] { // as NodeInfo.Unbind counts a GPU freed whole
				f := &o.freed[o.off[i]+g]
				before := n.FreeMilli[g] + *f
				*f += rj.req.Milli
				if before != model.MilliPerGPU && n.FreeMilli[g]+*f == model.MilliPerGPU {
					o.whole[i]++
				}
			}
			o.cpu[i] += rj.req.CPU
			o.mem[i] += rj.req.Memory
			s := slotsOf(o.cpu[i], o.mem[i], o.whole[i], n.FreeMilli, o.freed[o.off[i]:o.off[i+1]], &a.req, a.count)
			d := st.groups[st.groupOf[i]].domain
			o.dslots[d] += s - o.slots[i]
			o.slots[i] = s
			if o.dslots[d] >= need {
				if dom >= 0 && dom != d {
					return nil, false // two domains at once
				}
				dom, last = d, at
			}
		}
	}
	// The victims read with an instance on a node of the domain with room,
	// cheapest first, released.
	list := o.list[:0]
	for _, v := range vs.out[:last+1] {
		for _, i := range v.rj.nodes {
			if o.stamp[i] == o.gen && o.slots[i] > 0 && st.groups[st.groupOf[i]].domain == dom {
				list = append(list, v)
				break
			}
		}
	}
	o.list = list
	for _, v := range list {
		st.moveVictim(v.rj, true)
	}
	giveUp := func() ([]victim, bool) {
		for i := len(list) - 1; i >= 0; i-- {
			if list[i].rj != nil {
				st.moveVictim(list[i].rj, false)
			}
		}
		clear(list)
		return nil, false
	}
	if r.slots[dom] < need || !st.roomFor(a) || !st.placeable(a) {
		return giveUp()
	}
	// Spare what the job can do without, as the whole search would; a
	// trial that fails while the domain keeps its room failed on more than
	// the room.
	beyond := false
	fits := func() bool {
		if st.roomFor(a) && st.placeable(a) {
			return true
		}
		beyond = beyond || r.slots[dom] >= need
		return false
	}
	if spareOneByOne {
		st.spareEach(list, fits)
	} else {
		st.spareInBlocks(list, fits)
	}
	if beyond {
		return giveUp()
	}
	var out []victim
	for _, v := range list {
		if v.rj != nil {
			out = append(out, v)
		}
	}
	clear(list)
	if oneDomainAnswered != nil {
		oneDomainAnswered()
	}
	return out, true
}

// countOne starts node i's count for this preemption: as the room counts
// it now (countRoom), nothing released.
func (st *state) countOne(a *attempt, i int) {
	o, r, n := &st.one, &st.room, st.nodes[i]
	o.stamp[i], o.whole[i], o.cpu[i], o.mem[i] = o.gen, n.FreeWhole, n.CPUFree, n.MemFree
	clear(o.freed[o.off[i]:o.off[i+1]])
	o.usable[i] = st.roomCounts(a, i)
	o.slots[i] = 0
	if o.usable[i] {
		o.slots[i] = slots(n, &a.req, a.count)
	}
	if d := st.groups[st.groupOf[i]].domain; o.dstamp[d] != o.gen {
		o.dstamp[d], o.dslots[d] = o.gen, r.slots[d]
	}
}
