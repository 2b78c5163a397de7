package sched

import (
	"fmt"
	"slices"
	"sort"

	"github.com/allot-dev/allot/internal/model"
)

// placement is where each instance of a job would go.
type placement struct {
	nodes []int
	gpus  [][]int
}

// candidates fills st.cands with the nodes that pass every filter except
// free capacity and power, and returns what the filters saw. With quick
// set, for a single instance, it looks at the nodes holding work with GPU
// capacity left and at most one idle node per group: idle nodes of one group have the same
// capacity, so every scorer rates them alike and the lowest rank wins the
// tie. The verdict is then incomplete; callers explain a failure from a
// full pass.
func (st *state) candidates(a *attempt, quick bool) verdict {
	var v verdict
	st.cands, st.candGroups = st.cands[:0], st.candGroups[:0]
	for _, g := range st.groups {
		s := st.groupStage(a, g, &v)
		if s >= stageCapable {
			v.capableNodes += len(g.nodes)
		}
		if s < stageBorrow {
			v.reach(s)
			continue
		}
		if !quick {
			if a.req.GPUs > 0 {
				st.scanNotFull(a, g, &v)
				continue
			}
			before := len(st.cands)
			for _, n := range g.nodes {
				st.consider(a, n, &v)
			}
			if len(st.cands) > before {
				st.candGroups = append(st.candGroups, g)
			}
			continue
		}
		for _, n := range g.open {
			st.consider(a, n, &v)
		}
		if a.req.GPUs == 0 {
			for _, n := range g.full {
				st.consider(a, n, &v)
			}
		}
		// A job whose image a node of the group holds looks on, past the
		// first idle node that fits, for one that holds it (images.go).
		image := a.req.Image != 0 && g.holdsImage(a.req.Image)
		found := false
		for p := g.idleFrom; p < len(g.nodes); p++ {
			n := g.nodes[p]
			if n.Pods > 0 {
				if p == g.idleFrom {
					g.idleFrom++
				}
				continue
			}
			if found && !n.HoldsImage(a.req.Image) {
				continue
			}
			// The first idle node that fits ends the pass, unless an
			// attempt of the job failed there: then one more is looked at.
			if st.consider(a, n, &v) == stagePlaced && !a.avoids(n.Index) {
				if !image || n.HoldsImage(a.req.Image) {
					break
				}
				found = true
			}
		}
	}
	return v
}

// consider runs the node filters and keeps n as a candidate if only free
// capacity or power may stand in its way.
func (st *state) consider(a *attempt, n *NodeInfo, v *verdict) stage {
	ns := st.nodeStage(a, n, v)
	v.reach(ns)
	if ns >= stageReservation {
		st.cands = append(st.cands, n)
	}
	return ns
}

// place finds a placement for every instance of a, or reports why none
// exists. It changes nothing.
func (st *state) place(a *attempt) (placement, Reason, string) {
	v := st.candidates(a, a.count == 1)
	if v.furthest < stagePlaced {
		if a.count == 1 {
			v = st.candidates(a, false)
		}
		r, d := st.explain(a, &v)
		st.blindable = a.count == 1 && cpuBlind(a, &v)
		return placement{}, r, d
	}
	if a.count == 1 {
		if p, ok := st.placeOne(a); ok {
			return p, ReasonNone, ""
		}
		return placement{}, InsufficientCapacity, "no placement found"
	}
	return st.placeGang(a, false)
}

// placeable reports whether place would find a placement for a, without
// explaining a failure or choosing nodes (preemption tries victim sets with
// it).
func (st *state) placeable(a *attempt) bool {
	if a.count == 1 {
		return st.anyPlaced(a)
	}
	if st.gangHolds(a) {
		return true
	}
	v := st.candidates(a, false)
	if v.furthest < stagePlaced {
		return false
	}
	_, r, _ := st.placeGang(a, true)
	return r == ReasonNone
}

// anyPlaced reports whether some node passes every filter for a single
// instance. placeOne then always finds a node: its Chooser asks the same of
// the same candidates (Ready, GPU model, free capacity, power), so it
// succeeds exactly when the quick candidate pass reaches stagePlaced. The
// pass stops at the first such node.
func (st *state) anyPlaced(a *attempt) bool {
	var v verdict
	ok := func(n *NodeInfo) bool {
		if n.Ready && st.mayUse(a, n.Index) && n.FitsResources(&a.req) && st.powerAllows(n, a.req.TotalMilli()) {
			st.room.node = n.Index
			return true
		}
		return false
	}
	// The node that passed last time usually still does: the trials of one
	// preemption differ by a victim or two.
	if w := st.room.node; w >= 0 && st.room.a == a && st.groupStage(a, st.groups[st.groupOf[w]], &v) >= stageBorrow && ok(st.nodes[w]) {
		return true
	}
	for _, g := range st.groups {
		if st.groupStage(a, g, &v) < stageBorrow {
			continue
		}
		for _, n := range g.open {
			if ok(n) {
				return true
			}
		}
		if a.req.GPUs == 0 {
			for _, n := range g.full {
				if ok(n) {
					return true
				}
			}
		}
		for p := g.idleFrom; p < len(g.nodes); p++ {
			n := g.nodes[p]
			if n.Pods > 0 {
				if p == g.idleFrom {
					g.idleFrom++
				}
				continue
			}
			if ok(n) {
				return true
			}
		}
	}
	return false
}

// powerFilter is the per-node filter the Chooser applies after capacity.
func (st *state) powerFilter(a *attempt) func(*NodeInfo) bool {
	m := a.req.TotalMilli()
	return func(n *NodeInfo) bool { return st.powerAllows(n, m) }
}

// placeOne places a single instance, preferring the node that holds the
// job's checkpoint, then nodes where no attempt of the job failed, then
// the job's data region.
func (st *state) placeOne(a *attempt) (placement, bool) {
	filter := st.powerFilter(a)
	if n := st.checkpointNode(a, 0); n != nil {
		if c, ok := st.chooser.Choose([]*NodeInfo{n}, &a.req, filter); ok {
			return placement{nodes: []int{c.Node.Index}, gpus: [][]int{c.GPUs}}, true
		}
	}
	if len(a.avoid) > 0 {
		if p, ok := st.placeAmong(a, st.unavoided(a, st.cands), filter); ok {
			return p, true
		}
	}
	return st.placeAmong(a, st.cands, filter)
}

// unavoided returns the nodes of cands where no attempt of a's job failed,
// in a scratch slice.
func (st *state) unavoided(a *attempt, cands []*NodeInfo) []*NodeInfo {
	kept := st.kept[:0]
	for _, n := range cands {
		if !a.avoids(n.Index) {
			kept = append(kept, n)
		}
	}
	st.kept = kept
	return kept
}

// placeAmong places a single instance on one of cands. An inference
// replica (label workload: inference) goes to a node off InfiniBand when one
// fits, whatever the scorer prefers: InfiniBand nodes are the training
// fleet's, where a gang needs whole nodes of one fabric, and a replica there
// (five one-GPU replicas on an idle H100 IB node, best packed by the
// scorer) splits a node a gang could have had. Only when no other node fits
// does a replica land on one; 'job why' says so. Within that, the job's
// data region first.
func (st *state) placeAmong(a *attempt, cands []*NodeInfo, filter func(*NodeInfo) bool) (placement, bool) {
	if a.job.Spec.Labels[model.LabelWorkload] == model.WorkloadInference {
		off := st.offIB[:0]
		for _, n := range cands {
			if n.Fabric != model.FabricInfiniBand {
				off = append(off, n)
			}
		}
		st.offIB = off
		if len(off) < len(cands) {
			if p, ok := st.placeInRegion(a, off, filter); ok {
				return p, true
			}
		}
	}
	return st.placeInRegion(a, cands, filter)
}

// placeInRegion places a single instance on one of cands, preferring the
// job's data region.
func (st *state) placeInRegion(a *attempt, cands []*NodeInfo, filter func(*NodeInfo) bool) (placement, bool) {
	if dr := a.job.Spec.Placement.DataRegion; dr != "" {
		local := st.local[:0]
		for _, n := range cands {
			if n.Region == dr {
				local = append(local, n)
			}
		}
		st.local = local
		if c, ok := st.chooser.Choose(local, &a.req, filter); ok {
			return placement{nodes: []int{c.Node.Index}, gpus: [][]int{c.GPUs}}, true
		}
	}
	c, ok := st.chooser.Choose(cands, &a.req, filter)
	if !ok {
		return placement{}, false
	}
	return placement{nodes: []int{c.Node.Index}, gpus: [][]int{c.GPUs}}, true
}

// checkpointNode is the node whose disk holds rank's part of the job's
// checkpoint (rank 0's: the checkpoint, when one path serves every rank)
// when the job may run there now, else nil. A requeued job resumes from a
// checkpoint on one node's disk only there (the server starts every rank
// afresh when one cannot reach its part), so placement prefers it to any
// score: the work a checkpoint saves outweighs a better packed node. One
// failed attempt there does not outweigh it (the fault may be the job's
// own); a second one does, and the job then avoids the node like any other
// where it failed (AvoidedNodes).
func (st *state) checkpointNode(a *attempt, rank int) *NodeInfo {
	if a.grow {
		return nil // its ranks run where they run; the new ones have no part
	}
	name := partNode(&a.job.Status, rank)
	if name == "" || failuresOn(a.job, name) >= checkpointFailures {
		return nil
	}
	i, ok := st.nodeByName[name]
	if !ok {
		return nil
	}
	var v verdict
	n := st.nodes[i]
	if st.groupStage(a, st.groups[st.groupOf[i]], &v) < stageBorrow || st.nodeStage(a, n, &v) < stagePlaced {
		return nil
	}
	return n
}

// partNode is the node whose disk holds rank's part of the checkpoint of
// s's job, "" when there is none or every host reaches it.
func partNode(s *model.JobStatus, rank int) string {
	switch {
	case len(s.CheckpointParts) == 0 && rank == 0:
		return s.CheckpointNode
	case rank < len(s.CheckpointParts):
		return s.CheckpointParts[rank].Node
	}
	return ""
}

// checkpointFailures is how many failed attempts on the node of a job's
// checkpoint make the job give up going back there.
const checkpointFailures = 2

// AvoidedNodes are the nodes queued job j's next attempt keeps off while
// another node fits, in the order its attempts failed there: every node of
// an attempt's FailedNode, but the node of its checkpoint while fewer than
// checkpointFailures attempts failed there (placement prefers that node).
func AvoidedNodes(j *model.Job) []string {
	var out []string
	for _, at := range j.Status.Attempts {
		n := at.FailedNode
		if n == "" || slices.Contains(out, n) ||
			(slices.Contains(j.Status.CheckpointNodes(), n) && failuresOn(j, n) < checkpointFailures) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// failuresOn counts the attempts of j that failed on node.
func failuresOn(j *model.Job, node string) int {
	n := 0
	for _, at := range j.Status.Attempts {
		if at.FailedNode == node {
			n++
		}
	}
	return n
}

// domain is a set of nodes a gang may span: the nodes of one GPU model in
// one cluster, so every instance sees the same accelerator and one fabric
// (the cluster's) whether or not the job names an interconnect.
type domain struct {
	id     int // in state.domains
	name   string
	groups []*group // the groups of its nodes
	leaves []*leaf
	slots  int
	stamp  uint64 // the gangDomains call that filled leaves and slots
}

type leaf struct {
	name  string
	nodes []*NodeInfo
	slots int
	stamp uint64 // the gangDomains call that filled nodes and slots
}

// placeGang places all instances of a gang on one domain, using the fewest
// leaf groups, or none of them. With trial set it only says whether it
// would, and returns no placement.
func (st *state) placeGang(a *attempt, trial bool) (placement, Reason, string) {
	domains := st.gangDomains(a)
	best, bestLeaves, bestSpare, bestAvoided := -1, 0, 0, 0
	most := 0
	for i, d := range domains {
		most = max(most, d.slots)
		if d.slots < a.count {
			continue
		}
		// Of leaves with as many slots, those holding fewer nodes where the
		// job failed come first.
		sort.SliceStable(d.leaves, func(x, y int) bool {
			lx, ly := d.leaves[x], d.leaves[y]
			if lx.slots != ly.slots || len(a.avoid) == 0 {
				return lx.slots > ly.slots
			}
			return avoidedIn(a, lx) < avoidedIn(a, ly)
		})
		k, got, avoided := 0, 0, 0
		for got < a.count {
			got += d.leaves[k].slots
			avoided += avoidedIn(a, d.leaves[k])
			k++
		}
		// The fewest leaves, then the least spare, then (a retry) the
		// fewest nodes where the job failed: a gang that failed in one
		// cluster goes to another as good.
		spare := got - a.count
		if best < 0 || k < bestLeaves || (k == bestLeaves && (spare < bestSpare || (spare == bestSpare && avoided < bestAvoided))) {
			best, bestLeaves, bestSpare, bestAvoided = i, k, spare, avoided
		}
	}
	if best < 0 {
		total := 0
		for _, d := range domains {
			total += d.slots
		}
		if total >= a.count {
			return placement{}, TopologyUnsatisfiable, fmt.Sprintf(
				"%d instances fit in all, but at most %d in one %s; job needs %d together",
				total, most, domainWord(a), a.count)
		}
		if total+st.powerCut >= a.count {
			return placement{}, PowerCapped, fmt.Sprintf("room for %d of %d instances of %s, but the power for %d: %s",
				total+st.powerCut, a.count, shapeText(a), total, st.powerCutText(a))
		}
		return placement{}, InsufficientCapacity, fmt.Sprintf(
			"room for %d of %d instances of %s", total, a.count, shapeText(a))
	}
	d := domains[best]
	var nodes []*NodeInfo
	for _, l := range d.leaves[:bestLeaves] {
		nodes = append(nodes, l.nodes...)
	}
	if trial && st.powerSlack(a, d.leaves[:bestLeaves]) {
		st.room.domain, st.room.domainHeld = d.id, st.room.simple
		return placement{}, ReasonNone, ""
	}
	// Place instance by instance with the scorer, holding each on the node
	// copy so the next sees it, then give everything back: the caller
	// commits the whole gang at once.
	p := placement{}
	filter := st.powerFilter(a)
	ok := true
	// Instances go to nodes where no attempt of the job failed while
	// those have room.
	var kept []*NodeInfo
	if len(a.avoid) > 0 {
		kept = st.unavoided(a, nodes)
	}
	for i := 0; i < a.count; i++ {
		var c Choice
		found := false
		// Each rank goes back to the node of its part of the job's
		// checkpoint when the gang's leaves hold it: every rank resumes, or
		// none does.
		if cp := st.checkpointNode(a, i); cp != nil && slices.Contains(nodes, cp) {
			c, found = st.chooser.Choose([]*NodeInfo{cp}, &a.req, filter)
		}
		if !found && len(kept) > 0 {
			c, found = st.chooser.Choose(kept, &a.req, filter)
		}
		if !found {
			c, found = st.chooser.Choose(nodes, &a.req, filter)
		}
		if !found {
			ok = false
			break
		}
		st.hold(c.Node, &a.req, c.GPUs, +1)
		p.nodes = append(p.nodes, c.Node.Index)
		p.gpus = append(p.gpus, c.GPUs)
	}
	for i := len(p.nodes) - 1; i >= 0; i-- {
		st.hold(st.nodes[p.nodes[i]], &a.req, p.gpus[i], -1)
	}
	if !ok {
		return placement{}, TopologyUnsatisfiable, fmt.Sprintf("%s: the gang did not fit its %d leaf groups", d.name, bestLeaves)
	}
	if trial {
		st.room.domain, st.room.domainHeld = d.id, st.room.simple
	}
	return p, ReasonNone, ""
}

func domainWord(a *attempt) string {
	if f := a.job.Spec.Placement.Interconnect; f != "" {
		return string(f) + " cluster on one GPU model"
	}
	return "cluster on one GPU model"
}

// gangDomains groups the candidates into domains and leaf groups and counts
// how many instances each could take, power caps included. Domains come in
// the order of the first group with a candidate, leaves in the order of
// their first node with room; the structures are the cycle's, reused from
// call to call.
func (st *state) gangDomains(a *attempt) []*domain {
	st.stamp++
	stamp := st.stamp
	order := st.domOrder[:0]
	for _, g := range st.candGroups {
		if d := st.domains[g.domain]; d.stamp != stamp {
			d.stamp, d.leaves, d.slots = stamp, d.leaves[:0], 0
			order = append(order, d)
		}
	}
	st.domOrder = order
	st.powerCut = 0
	for _, n := range st.cands {
		s := slots(n, &a.req, a.count)
		if need := st.powerOf(n, a.req.TotalMilli()); need > 0 && s > 0 {
			room := s
			if r := st.rackOf[n.Index]; r >= 0 && st.racks[r].capW > 0 {
				rk := &st.racks[r]
				if rk.stamp != stamp {
					rk.stamp, rk.left = stamp, rk.capW-rk.drawW
				}
				if s2 := min(s, int(max(0, rk.left)/need)); s2 < s {
					s, st.powerCutNode, st.powerCutRack = s2, n.Index, true
				}
				rk.left -= int64(s) * need
			}
			if reg := st.regionOf[n.Index]; reg.capW > 0 {
				if reg.stamp != stamp {
					reg.stamp, reg.left = stamp, reg.capW-reg.drawW
				}
				if s2 := min(s, int(max(0, reg.left)/need)); s2 < s {
					s, st.powerCutNode, st.powerCutRack = s2, n.Index, false
				}
				reg.left -= int64(s) * need
			}
			st.powerCut += room - s
		}
		if s == 0 {
			continue
		}
		d := st.domains[st.groups[st.groupOf[n.Index]].domain]
		l := st.leaves[st.leafOf[n.Index]]
		if l.stamp != stamp {
			l.stamp, l.nodes, l.slots = stamp, l.nodes[:0], 0
			d.leaves = append(d.leaves, l)
		}
		l.nodes = append(l.nodes, n)
		l.slots += s
		d.slots += s
	}
	return order
}

// avoidedIn counts the nodes of l where an attempt of a's job failed.
func avoidedIn(a *attempt, l *leaf) int {
	if len(a.avoid) == 0 {
		return 0
	}
	n := 0
	for _, x := range l.nodes {
		if a.avoids(x.Index) {
			n++
		}
	}
	return n
}

// powerCutText names the cap the last gangDomains call found breaking, as
// a gang's PowerCapped detail says it.
func (st *state) powerCutText(a *attempt) string {
	n := st.nodes[st.powerCutNode]
	need := st.powerOf(n, a.req.TotalMilli())
	if st.powerCutRack {
		rk := st.racks[st.rackOf[n.Index]]
		return fmt.Sprintf("rack %s draws %.1f of its %.1f kW cap, each instance needs %.1f kW", n.Rack, kw(rk.drawW), kw(rk.capW), kw(need))
	}
	reg := st.regionOf[n.Index]
	return fmt.Sprintf("region %s draws %.1f of its %.1f kW headroom, each instance needs %.1f kW", n.Region, kw(reg.drawW), kw(reg.capW), kw(need))
}

// slots is how many instances of r fit on n now, at most limit.
func slots(n *NodeInfo, r *Request, limit int) int {
	return slotsOf(n.CPUFree, n.MemFree, n.FreeWhole, n.FreeMilli, nil, r, limit)
}

// slotsOf is slots on a node with cpu and mem free, whole GPUs free, and
// freeMilli on each GPU, plus freed[g] on GPU g when freed is not nil (a
// count of what releasing work would leave, onedomain.go). Below
// FitsResources' bar for one instance it is 0.
func slotsOf(cpu, mem int64, whole int, freeMilli, freed []int64, r *Request, limit int) int {
	if cpu < r.CPU || mem < r.Memory {
		return 0
	}
	s := limit
	if r.CPU > 0 {
		s = min(s, int(cpu/r.CPU))
	}
	if r.Memory > 0 {
		s = min(s, int(mem/r.Memory))
	}
	switch {
	case r.GPUs == 0:
	case r.Fractional():
		g := 0
		for x, f := range freeMilli {
			if freed != nil {
				f += freed[x]
			}
			g += int(f / r.Milli)
		}
		s = min(s, g)
	default:
		s = min(s, whole/r.GPUs)
	}
	return s
}

// powerSlack reports whether the instance-by-instance placement of a on the
// nodes of leaves cannot fail, so a trial may skip it. The leaves hold at
// least a.count slots; each instance the Chooser places takes exactly one
// slot of one node (whole GPUs, CPU and memory shrink by one instance's
// worth; a fraction goes to a GPU it fits), and a node with a slot left
// passes the Chooser's fit test. Only a power cap could turn a node with a
// slot away, so the placement cannot fail when every capped rack and region
// has headroom for all the slots of these nodes at once. A Scorer that
// chooses GPUs itself might spend them otherwise, so it always gets the full
// placement.
func (st *state) powerSlack(a *attempt, leaves []*leaf) bool {
	if _, ok := st.chooser.Scorer.(GPUChooser); ok {
		return false
	}
	st.stamp++
	stamp := st.stamp
	for _, l := range leaves {
		for _, n := range l.nodes {
			need := st.powerOf(n, a.req.TotalMilli())
			if need == 0 {
				continue
			}
			w := int64(slots(n, &a.req, a.count)) * need
			if r := st.rackOf[n.Index]; r >= 0 && st.racks[r].capW > 0 {
				rk := &st.racks[r]
				if rk.stamp != stamp {
					rk.stamp, rk.left = stamp, rk.capW-rk.drawW
				}
				if rk.left -= w; rk.left < 0 {
					return false
				}
			}
			if reg := st.regionOf[n.Index]; reg.capW > 0 {
				if reg.stamp != stamp {
					reg.stamp, reg.left = stamp, reg.capW-reg.drawW
				}
				if reg.left -= w; reg.left < 0 {
					return false
				}
			}
		}
	}
	return true
}
