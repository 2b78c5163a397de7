package sched

// A preemption for one instance of whole GPUs releases victims cheapest
// first until some node has room, then spares all it can: on a busy fleet
// it releases and restores hundreds of victims for the one or two it
// keeps (the busy bench's first cycle: 3.3 M releases and as many restores
// for 13,217 victims), nearly all on nodes that the instance could not use
// even with every victim released there so far. On such a cold node a
// move changes nothing a trial reads: the node has no room for the
// instance before or after (its room counts zero, no filter passes it),
// and what its work uses elsewhere (power, the pool's free capacity,
// partition, quota and tenant use) is charged at once. So the node's own
// part of the move (its free capacity, its group's lists, its work) waits
// in a log; the log is applied, in order, when the node could hold the
// instance after all (it turns hot and stays so for the preemption), and
// at the end of the preemption what it leaves is applied to every node
// still cold: most of its moves were a release and a restore that cancel.
// The trials answer as they would with every move made at once, and the
// Plans are the same (TestColdNodesMatchEagerMoves).

// coldNodes is that log and what it knows of each node, for one
// preemption. Node entries are valid where stamp equals gen.
type coldNodes struct {
	on  bool
	a   *attempt
	gen uint64
	// By node: the preemption that touched it; whether the instance may
	// use it at all (Ready, its group and the job's filters allowing);
	// whether it is hot; the whole GPUs, CPU and memory its logged moves
	// free (GPUs as an upper bound: a GPU a fraction shared counts once per
	// fraction); its first and last logged move in ops (-1 for none).
	stamp        []uint64
	usable, hot  []bool
	gpus         []int
	cpu, mem     []int64
	first, final []int32
	ops          []coldMove
}

// eagerMoves turns the log off, for the test that compares the two.
var eagerMoves = false

// coldMove is the node part of one instance's move, held back.
type coldMove struct {
	rj   *running
	k    int32 // the instance, an index into rj.nodes
	sign int8  // account's: -1 releases, +1 restores
	next int32 // the node's next logged move, -1 for none
}

// coldBegin starts a preemption for a: moves are logged on cold nodes
// when a is one instance of whole GPUs (room counts one slot of it).
func (st *state) coldBegin(a *attempt) {
	c := &st.cold
	c.on = a.count == 1 && a.req.GPUs > 0 && !a.req.Fractional() && !eagerMoves
	if !c.on {
		return
	}
	if c.stamp == nil {
		n := len(st.nodes)
		c.stamp, c.usable, c.hot, c.gpus = make([]uint64, n), make([]bool, n), make([]bool, n), make([]int, n)
		c.cpu, c.mem, c.first, c.final = make([]int64, n), make([]int64, n), make([]int32, n), make([]int32, n)
	}
	c.a, c.ops = a, c.ops[:0]
	c.gen++
}

// touch readies node i's entry for this preemption: a node that may hold
// the instance as it stands is hot from the start.
func (st *state) touch(i int) {
	c := &st.cold
	if c.stamp[i] == c.gen {
		return
	}
	c.stamp[i] = c.gen
	c.usable[i] = st.roomCounts(c.a, i)
	c.gpus[i], c.cpu[i], c.mem[i], c.first[i], c.final[i] = 0, 0, 0, -1, -1
	c.hot[i] = c.usable[i] && st.coldFits(i)
}

// coldFits reports whether node i could hold the instance once its logged
// moves are applied.
func (st *state) coldFits(i int) bool {
	c, n, r := &st.cold, st.nodes[i], &st.cold.a.req
	return n.FreeWhole+c.gpus[i] >= r.GPUs && n.CPUFree+c.cpu[i] >= r.CPU && n.MemFree+c.mem[i] >= r.Memory
}

// moveCold is moveVictim while moves are logged on cold nodes.
func (st *state) moveCold(rj *running, release bool) {
	c, r := &st.cold, &st.room
	sign := int64(1)
	if release {
		sign = -1
	}
	st.stamp++
	stamp := st.stamp
	for _, i := range rj.nodes {
		if r.domainHeld && st.groups[st.groupOf[i]].domain == r.domain {
			r.domainHeld = false
		}
		st.touch(i)
		if c.hot[i] && r.mark[i] != stamp {
			r.mark[i] = stamp
			st.countRoom(st.nodes[i], -1)
		}
	}
	st.counts++
	for k, i := range rj.nodes {
		st.accountUse(rj, k, sign)
		if c.hot[i] {
			st.accountNode(rj, k, sign)
			continue
		}
		st.logMove(rj, k, sign)
	}
	rj.evicted = release
	st.stamp++
	stamp = st.stamp
	for _, i := range rj.nodes {
		if c.hot[i] && r.mark[i] != stamp {
			r.mark[i] = stamp
			st.countRoom(st.nodes[i], +1)
		}
	}
}

// logMove holds back the node part of rj's k-th instance's move on its
// cold node, and applies the node's log when the node could now hold the
// instance: it is hot from then on. A cold node counted no room, so a node
// turning hot only adds its room (moveCold's last loop).
func (st *state) logMove(rj *running, k int, sign int64) {
	c := &st.cold
	i := rj.nodes[k]
	o := int32(len(c.ops))
	c.ops = append(c.ops, coldMove{rj: rj, k: int32(k), sign: int8(sign), next: -1})
	if c.final[i] >= 0 {
		c.ops[c.final[i]].next = o
	} else {
		c.first[i] = o
	}
	c.final[i] = o
	c.gpus[i] -= int(sign) * len(rj.gpus[k])
	c.cpu[i] -= sign * rj.req.CPU
	c.mem[i] -= sign * rj.req.Memory
	if !c.usable[i] || !st.coldFits(i) {
		return
	}
	for o := c.first[i]; o >= 0; o = c.ops[o].next {
		m := &c.ops[o]
		st.accountNode(m.rj, int(m.k), int64(m.sign))
	}
	c.first[i], c.final[i] = -1, -1
	c.hot[i] = true
}

// coldEnd ends the preemption's logging and applies to each node still
// cold what its log leaves: the instances of victims that end released.
// A victim released and restored again leaves its node as it found it, so
// that pair is not applied at all; only the order of the node's work list
// and of its group's lists can differ from moving at once, and nothing
// reads them in order (byNode is summed or sorted before use, a group's
// open nodes are a candidate set the Chooser ranks by score, then Rank).
func (st *state) coldEnd() {
	c := &st.cold
	if !c.on {
		return
	}
	for o := range c.ops {
		m := &c.ops[o]
		i := m.rj.nodes[m.k]
		if c.hot[i] || c.first[i] < 0 {
			continue // applied when it turned hot, or already done here
		}
		for x := c.first[i]; x >= 0; x = c.ops[x].next {
			if v := &c.ops[x]; v.sign < 0 && !laterMove(c.ops, x) { // its last move releases it
				st.accountNode(v.rj, int(v.k), -1)
			}
		}
		c.first[i] = -1
	}
	clear(c.ops) // no pointers kept past the preemption
	c.ops, c.on, c.a = c.ops[:0], false, nil
}

// laterMove reports whether the node's log has a move of the same instance
// after ops[x].
func laterMove(ops []coldMove, x int32) bool {
	for y := ops[x].next; y >= 0; y = ops[y].next {
		if ops[y].rj == ops[x].rj && ops[y].k == ops[x].k {
			return true
		}
	}
	return false
}
