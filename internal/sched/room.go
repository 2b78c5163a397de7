package sched

import "math/bits"

// room bounds, while preempt tries victim sets out for one job, how many of
// the job's instances could fit in each gang domain: the slots of the Ready
// nodes the job may use (reservations allowing) in the groups its static
// filters admit, with power caps, quotas and partitions left out. A victim
// set that leaves no domain room for the whole job (for a single instance:
// no room anywhere) cannot let it be placed, so that trial is answered
// without running the filters. The bound is counted once per preemption and
// kept in step as trials release and restore victims: only their nodes
// change.
type room struct {
	a       *attempt
	groupOK []bool // by group: the job's static filters admit it
	slots   []int  // by domain
	gslots  []int  // by group
	total   int
	// Scratch of roomCouldHold: slots by group and domain, milli-GPU by
	// series and pool.
	bound, dbound                   []int
	ownSeries, ownPool, freedByPool []int64
	pass                            []bool     // by group: a's filters, quota and partition could let it in
	after                           []NodeInfo // the nodes rest runs on, without it
	afterMilli                      []int64    // their FreeMilli
	afterOf                         []int      // by node: its copy in after
	mark                            []uint64   // by node: the stamp of the move that counted it

	// What the last successful trial found, checked first by the next:
	// the node a single instance fits on, the domain a gang fits in.
	node, domain int
	// domainHeld is set while the gang's slots in domain, counted when a
	// trial last found it, still hold: no victim with an instance in the
	// domain moved since (moveVictim). When the room is simple, the count
	// of placeGang's trial is the count of domainHolds.
	domainHeld bool
	// simple is set when a gang's slots in a domain are counted against
	// power caps independently of other domains and of the order of its
	// nodes, and the Chooser spends exactly the slots counted (no group
	// the job may use is unevenPower, and the Scorer picks no GPUs).
	simple bool
}

// startRoom counts the room for a on the current state.
func (st *state) startRoom(a *attempt) {
	r := &st.room
	r.a = a
	if r.groupOK == nil {
		r.groupOK = make([]bool, len(st.groups))
		r.slots = make([]int, len(st.domains))
		r.gslots = make([]int, len(st.groups))
		r.mark = make([]uint64, len(st.nodes))
	}
	clear(r.slots)
	clear(r.gslots)
	r.total, r.node, r.domain, r.domainHeld = 0, -1, -1, false
	_, picks := st.chooser.Scorer.(GPUChooser)
	r.simple = !picks
	spec := &a.job.Spec
	for gi, g := range st.groups {
		ok := spec.Placement.AllowsRegion(g.region.name) && st.capable(a, g) &&
			(spec.Placement.Residency == "" || spec.Placement.Residency == g.residency) &&
			(spec.Placement.Interconnect == "" || spec.Placement.Interconnect == g.fabric)
		r.groupOK[gi] = ok
		if !ok {
			continue
		}
		if g.unevenPower {
			r.simple = false
		}
		if a.req.GPUs == 0 {
			for _, n := range g.nodes {
				st.countRoom(n, +1)
			}
			continue
		}
		for w, word := range g.notFull { // a full node has no room for GPU work
			for word != 0 {
				n := g.nodes[w*64+bits.TrailingZeros64(word)]
				word &= word - 1
				st.countRoom(n, +1)
			}
		}
	}
}

// roomCounts reports whether the room counts node i for a: its group's
// static filters admit a, it is Ready, and a may use it.
func (st *state) roomCounts(a *attempt, i int) bool {
	return st.room.groupOK[st.groupOf[i]] && st.nodes[i].Ready && st.mayUse(a, i)
}

// countRoom adds (sign +1) or removes (-1) what node n contributes to the room.
func (st *state) countRoom(n *NodeInfo, sign int) {
	r := &st.room
	if !st.roomCounts(r.a, n.Index) {
		return
	}
	if s := slots(n, &r.a.req, r.a.count); s > 0 {
		gi := st.groupOf[n.Index]
		r.slots[st.groups[gi].domain] += sign * s
		r.gslots[gi] += sign * s
		r.total += sign * s
	}
}

// roomFor reports whether the room could hold the whole job: a necessary
// condition for placeable, never a sufficient one.
func (st *state) roomFor(a *attempt) bool {
	r := &st.room
	if a.count == 1 {
		return r.total > 0
	}
	for _, s := range r.slots {
		if s >= a.count {
			return true
		}
	}
	return false
}

// roomCouldHold reports whether releasing the victims of rest as well
// could let a be placed. It bounds the room they would leave: the slots of
// every node they run on as it would be without them, in the groups whose
// quota and partition filters could let a in once they all left (their
// quota and partition use less what a's own tenant and partition hold
// among them, the pool's lendable capacity grown by all they free: what
// other partitions keep idle for themselves only grows as they leave).
func (st *state) roomCouldHold(a *attempt, rest []victim) bool {
	r := &st.room
	r.ownSeries = append(r.ownSeries[:0], make([]int64, len(st.series))...)
	r.ownPool = append(r.ownPool[:0], make([]int64, len(st.pools))...)
	r.freedByPool = append(r.freedByPool[:0], make([]int64, len(st.pools))...)
	p := a.tenant.partition
	for _, v := range rest {
		m := v.rj.req.TotalMilli()
		for _, i := range v.rj.nodes {
			g := st.groups[st.groupOf[i]]
			if v.rj.tenant == a.tenant {
				r.ownSeries[g.series] += m
			}
			if p != nil && v.rj.tenant.partition == p {
				r.ownPool[g.pool] += m
			}
			if st.nodes[i].Ready {
				r.freedByPool[g.pool] += m
			}
		}
	}
	// Only the groups whose filters, quota and partition could let a in
	// count; releasing never takes a slot away, so for one instance a slot
	// there now settles it.
	r.pass = append(r.pass[:0], make([]bool, len(st.groups))...)
	some := false
	for gi, g := range st.groups {
		if r.groupOK[gi] && st.groupCouldPass(a, g) {
			if a.count == 1 && r.gslots[gi] > 0 {
				return true
			}
			r.pass[gi], some = true, true
		}
	}
	if !some {
		return false
	}
	r.bound = append(r.bound[:0], r.gslots...)
	st.stamp++
	stamp := st.stamp
	r.after, r.afterMilli = r.after[:0], r.afterMilli[:0]
	if r.afterOf == nil {
		r.afterOf = make([]int, len(st.nodes))
	}
	for _, v := range rest {
		for k, i := range v.rj.nodes {
			n := st.nodes[i]
			if !r.pass[st.groupOf[i]] || !n.Ready || !st.mayUse(a, i) {
				continue
			}
			if r.mark[i] != stamp {
				// The node as it would be with all of rest gone: a copy
				// that gives back each of their instances on it.
				r.mark[i] = stamp
				r.afterOf[i] = len(r.after)
				c := *n
				at := len(r.afterMilli)
				r.afterMilli = append(r.afterMilli, n.FreeMilli...)
				c.FreeMilli = r.afterMilli[at:len(r.afterMilli):len(r.afterMilli)]
				r.after = append(r.after, c)
			}
			r.after[r.afterOf[i]].apply(&v.rj.req, v.rj.gpus[k], +1)
		}
	}
	for _, c := range r.after {
		n := st.nodes[c.Index]
		gi := st.groupOf[c.Index]
		r.bound[gi] += slots(&c, &a.req, a.count) - slots(n, &a.req, a.count)
	}
	r.dbound = append(r.dbound[:0], make([]int, len(st.domains))...)
	for gi, g := range st.groups {
		if !r.pass[gi] || r.bound[gi] <= 0 {
			continue
		}
		if a.count == 1 {
			return true
		}
		if r.dbound[g.domain] += r.bound[gi]; r.dbound[g.domain] >= a.count {
			return true
		}
	}
	return false
}

// groupCouldPass is groupStage(a, g) >= stageBorrow with the bounds of
// roomCouldHold: false only when a's quota or partition would still keep
// it out of g.
func (st *state) groupCouldPass(a *attempt, g *group) bool {
	r := &st.room
	if a.req.GPUs == 0 {
		return true
	}
	if t := a.tenant; t.quota != nil && t.quota[g.series] >= 0 &&
		t.quotaUsed[g.series]-r.ownSeries[g.series]+a.total > t.quota[g.series] {
		return false
	}
	p, k := a.tenant.partition, g.pool
	var used, guar int64
	if p != nil {
		used, guar = p.used[k]-r.ownPool[k], p.guar[k]
	}
	if used+a.total <= guar {
		return true
	}
	if p != nil {
		if limit := p.borrow[k]; limit >= 0 && used+a.total-guar > limit {
			return false
		}
	}
	prot := st.protected(k, p)
	return prot == 0 || st.poolFree[k]+r.freedByPool[k]-prot >= a.total
}

// moveVictim releases (release true) or restores rj during preempt's
// trials, keeping the room in step.
func (st *state) moveVictim(rj *running, release bool) {
	r := &st.room
	if st.cold.on {
		st.moveCold(rj, release)
		return
	}
	st.stamp++
	stamp := st.stamp
	for _, i := range rj.nodes {
		if r.domainHeld && st.groups[st.groupOf[i]].domain == r.domain {
			r.domainHeld = false
		}
		if r.mark[i] != stamp {
			r.mark[i] = stamp
			st.countRoom(st.nodes[i], -1)
		}
	}
	if release {
		st.release(rj)
	} else {
		st.restore(rj)
	}
	st.stamp++
	stamp = st.stamp
	for _, i := range rj.nodes {
		if r.mark[i] != stamp {
			r.mark[i] = stamp
			st.countRoom(st.nodes[i], +1)
		}
	}
}

// gangHolds reports whether the domain where the last successful trial
// placed a still has slots for the whole gang (domainHolds). Victims
// moved since with no instance in the domain changed none of its nodes,
// and, the room being simple, none of its power caps either: then only
// its groups' quota and partition filters need another look.
func (st *state) gangHolds(a *attempt) bool {
	r := &st.room
	if !r.simple || r.domain < 0 {
		return false
	}
	d := st.domains[r.domain]
	if r.domainHeld {
		var v verdict
		for _, g := range d.groups {
			if r.groupOK[st.groupOf[g.nodes[0].Index]] && st.groupStage(a, g, &v) < stageBorrow {
				r.domainHeld = false
				break
			}
		}
		if r.domainHeld {
			return true
		}
	}
	r.domainHeld = st.domainHolds(a, d)
	return r.domainHeld
}

// domainHolds reports whether the nodes of d that a's filters admit now
// have slots for every instance of a, counted as gangDomains counts them.
// When the room is simple that count does not depend on other domains, and
// placeGang places a gang wherever it holds, so a trial that finds it
// needs no full pass.
func (st *state) domainHolds(a *attempt, d *domain) bool {
	st.stamp++
	stamp := st.stamp
	var v verdict
	got := 0
	count := func(n *NodeInfo) bool {
		if !n.Ready || !st.mayUse(a, n.Index) {
			return false
		}
		s := slots(n, &a.req, a.count)
		if need := st.powerOf(n, a.req.TotalMilli()); need > 0 && s > 0 {
			if r := st.rackOf[n.Index]; r >= 0 && st.racks[r].capW > 0 {
				rk := &st.racks[r]
				if rk.stamp != stamp {
					rk.stamp, rk.left = stamp, rk.capW-rk.drawW
				}
				s = min(s, int(max(0, rk.left)/need))
				rk.left -= int64(s) * need
			}
		}
		got += s
		return got >= a.count
	}
	for _, g := range d.groups {
		if !st.room.groupOK[st.groupOf[g.nodes[0].Index]] || st.groupStage(a, g, &v) < stageBorrow {
			continue
		}
		if a.req.GPUs == 0 {
			for _, n := range g.nodes {
				if count(n) {
					return true
				}
			}
			continue
		}
		for w, word := range g.notFull {
			for word != 0 {
				n := g.nodes[w*64+bits.TrailingZeros64(word)]
				word &= word - 1
				if count(n) {
					return true
				}
			}
		}
	}
	return false
}
