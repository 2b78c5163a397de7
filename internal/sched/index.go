package sched

import (
	"math/bits"
	"slices"
	"time"
)

// The indexes below are built once per cycle from the Snapshot and kept in
// step as work is bound and released, so that a decision costs what could
// change it, not the size of the fleet.

// buildDomains numbers the gang domains (one GPU model in one cluster) and
// their leaf groups, so that grouping candidates is counting in slices.
func (st *state) buildDomains() {
	domainID := map[[2]string]int{}
	leafID := map[[2]string]int{}
	st.leafOf = make([]int, len(st.nodes))
	for _, g := range st.groups {
		n0 := g.nodes[0]
		key := [2]string{n0.Cluster, n0.GPUModel}
		id, ok := domainID[key]
		if !ok {
			id = len(st.domains)
			domainID[key] = id
			st.domains = append(st.domains, &domain{id: id, name: n0.Cluster + "/" + n0.GPUModel})
		}
		g.domain = id
		st.domains[id].groups = append(st.domains[id].groups, g)
		for _, n := range g.nodes {
			lk := [2]string{key[0] + "/" + key[1], n.Leaf}
			li, ok := leafID[lk]
			if !ok {
				li = len(st.leaves)
				leafID[lk] = li
				st.leaves = append(st.leaves, &leaf{name: n.Leaf})
			}
			st.leafOf[n.Index] = li
		}
	}
}

// indexReady counts each group's Ready nodes and lists those that
// reservations hold or earmark; it runs once reserve and earmark have
// assigned them.
func (st *state) indexReady() {
	for _, g := range st.groups {
		g.ready, g.notReady, g.reservedReady = 0, 0, g.reservedReady[:0]
		for _, n := range g.nodes {
			switch {
			case !n.Ready:
				g.notReady++
			default:
				g.ready++
				if st.resOf[n.Index] >= 0 || st.earOf[n.Index] >= 0 {
					g.reservedReady = append(g.reservedReady, n.Index)
				}
			}
		}
	}
}

// indexPower marks the groups whose gang slots are not simply counted
// against power caps (group.unevenPower): a capped rack is uneven when its
// nodes differ in draw per GPU or belong to more than one gang domain.
func (st *state) indexPower() {
	type draw struct {
		powerW int64
		gpus   int
		domain int
	}
	first := make([]draw, len(st.racks))
	seen := make([]bool, len(st.racks))
	mixed := make([]bool, len(st.racks))
	for _, n := range st.nodes {
		r := st.rackOf[n.Index]
		if r < 0 || st.racks[r].capW <= 0 {
			continue
		}
		d := draw{n.PowerW, n.GPUs(), st.groups[st.groupOf[n.Index]].domain}
		if !seen[r] {
			seen[r], first[r] = true, d
		} else if d != first[r] {
			mixed[r] = true
		}
	}
	for _, g := range st.groups {
		g.unevenPower = g.region.capW > 0
		for _, n := range g.nodes {
			if r := st.rackOf[n.Index]; r >= 0 && mixed[r] {
				g.unevenPower = true
			}
		}
	}
}

// readyAllowed splits g's Ready nodes into those a may use, those the job
// excludes, and those reservations keep from it (reservationAllows), counted
// without visiting every node.
func (st *state) readyAllowed(a *attempt, g *group) (allowed, excluded, out int) {
	excluded = st.readyExcluded(a, g)
	if a.job.Spec.Placement.Reservation != "" {
		in := 0
		for _, i := range g.reservedReady {
			if st.reservationAllows(a, i) && !a.excludes(i) {
				in++
			}
		}
		return in, excluded, g.ready - excluded - in
	}
	for _, i := range g.reservedReady {
		if !st.reservationAllows(a, i) && !a.excludes(i) {
			out++
		}
	}
	return g.ready - excluded - out, excluded, out
}

// readyExcluded counts the Ready nodes of g that a's placement rules out,
// from the job's lists of nodes rather than g's.
func (st *state) readyExcluded(a *attempt, g *group) int {
	in := func(i int) bool { return i >= 0 && st.groups[st.groupOf[i]] == g && st.nodes[i].Ready }
	if len(a.only) > 0 {
		kept := 0
		for _, i := range a.only {
			if in(i) && !slices.Contains(a.exclude, i) {
				kept++
			}
		}
		return g.ready - kept
	}
	n := 0
	for _, i := range a.exclude {
		if in(i) {
			n++
		}
	}
	return n
}

// setNotFull records whether the node at position pos of g has GPU
// capacity left or holds nothing (true) or is full (false).
func (g *group) setNotFull(pos int, on bool) {
	w, b := pos/64, uint(pos%64)
	if on {
		g.notFull[w] |= 1 << b
	} else {
		g.notFull[w] &^= 1 << b
	}
}

// scanNotFull is the full pass of candidates over g for work that needs
// GPUs. A full node has no GPU capacity left, so for such work it can only
// be counted (Ready, kept by a reservation) and fail the fit with nothing
// free: those parts come from the group's counts, and only the nodes that
// are not full are visited, in rank order, as the pass over every node
// would visit them.
func (st *state) scanNotFull(a *attempt, g *group, v *verdict) {
	allowed, excluded, out := st.readyAllowed(a, g)
	v.readyNodes += g.ready - excluded
	v.excluded += excluded
	v.reservedOut += out
	if g.notReady > 0 || excluded > 0 {
		v.reach(stageInterconnect)
	}
	if out > 0 {
		v.reach(stageBorrow)
	}
	if allowed == 0 {
		return
	}
	v.reach(stageReservation)
	st.candGroups = append(st.candGroups, g)
	for w, word := range g.notFull {
		for word != 0 {
			n := g.nodes[w*64+bits.TrailingZeros64(word)]
			word &= word - 1
			if !n.Ready || !st.mayUse(a, n.Index) {
				continue
			}
			ns := st.fitStage(a, n, v)
			v.reach(ns)
			if ns >= stageReservation {
				st.cands = append(st.cands, n)
			}
		}
	}
}

// failure is a cached verdict for a job shape (see appendShapeKey): it holds
// while capacity only shrinks in the groups the shape's static filters
// admit, and is dropped when a preemption frees capacity that could
// change it (markFreed).
type failure struct {
	Pending
	groups []uint64 // bit per group: groups the shape's static filters admit
	// submitted is when the job whose attempt it records was submitted:
	// a job may evict borrowers that started after its own submission
	// (reclaims), so the outcome answers only jobs submitted no earlier.
	// A tenant's queue serves a higher priority value first, which may
	// be the later submission.
	submitted time.Time
}

// shapeGroups marks the groups whose nodes a's region, model, size,
// residency and interconnect filters admit: the only groups whose state
// decides a's placement and preemption.
func (st *state) shapeGroups(a *attempt) []uint64 {
	set := make([]uint64, (len(st.groups)+63)/64)
	spec := &a.job.Spec
	for gi, g := range st.groups {
		if !spec.Placement.AllowsRegion(g.region.name) || !st.capable(a, g) {
			continue
		}
		if r := spec.Placement.Residency; r != "" && r != g.residency {
			continue
		}
		if f := spec.Placement.Interconnect; f != "" && f != g.fabric {
			continue
		}
		set[gi/64] |= 1 << uint(gi%64)
	}
	return set
}

// freedScratch returns an empty group set for markFreed.
func (st *state) freedScratch() []uint64 {
	if st.freed == nil {
		st.buildFreedIndex()
	}
	clear(st.freed)
	return st.freed
}

// markFreed adds to set the groups where releasing rj can change a
// verdict: those sharing a pool with one of its nodes (free capacity,
// partition use and lending), a quota series (the tenant's quota use), a
// power-capped rack or a power-capped region.
func (st *state) markFreed(rj *running, set []uint64) {
	for _, i := range rj.nodes {
		g := st.groups[st.groupOf[i]]
		orInto(set, st.poolGroups[g.pool])
		orInto(set, st.seriesGroups[g.series])
		if rk := st.rackOf[i]; rk >= 0 && st.racks[rk].capW > 0 {
			orInto(set, st.rackGroups[rk])
		}
		if reg := st.regionOf[i]; reg.capW > 0 {
			orInto(set, st.regionGroups[reg.name])
		}
	}
}

// buildFreedIndex lists the groups of every pool, series, rack and
// region, once per cycle, on the first preemption.
func (st *state) buildFreedIndex() {
	words := (len(st.groups) + 63) / 64
	newSet := func() []uint64 { return make([]uint64, words) }
	st.freed = newSet()
	st.poolGroups = make([][]uint64, len(st.pools))
	st.seriesGroups = make([][]uint64, len(st.series))
	st.rackGroups = make([][]uint64, len(st.racks))
	st.regionGroups = map[string][]uint64{}
	add := func(set *[]uint64, gi int) {
		if *set == nil {
			*set = newSet()
		}
		(*set)[gi/64] |= 1 << uint(gi%64)
	}
	for gi, g := range st.groups {
		add(&st.poolGroups[g.pool], gi)
		add(&st.seriesGroups[g.series], gi)
		rs := st.regionGroups[g.region.name]
		add(&rs, gi)
		st.regionGroups[g.region.name] = rs
		for _, n := range g.nodes {
			if rk := st.rackOf[n.Index]; rk >= 0 {
				add(&st.rackGroups[rk], gi)
			}
		}
	}
}

func orInto(dst, src []uint64) {
	for i, w := range src {
		dst[i] |= w
	}
}

func intersects(a, b []uint64) bool {
	for i, w := range a {
		if w&b[i] != 0 {
			return true
		}
	}
	return false
}
