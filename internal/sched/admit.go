package sched

import (
	"fmt"
	"slices"
	"strings"

	"github.com/allot-dev/allot/internal/model"
)

// attempt is one queued job being scheduled in this cycle.
type attempt struct {
	job    *model.Job
	tenant *tenantState
	req    Request
	count  int   // instances
	total  int64 // milli-GPU of the whole job
	class  model.Class
	res    int // index of the reservation the job asks for, -1 for none
	// only and exclude hold the nodes of placement.nodes and
	// placement.exclude_nodes, by index, once each: a filter like Ready
	// (excludes). avoid holds AvoidedNodes, the nodes where its attempts
	// failed: a preference only, placement goes elsewhere when another
	// node fits.
	// All are nil for nearly every job.
	only, exclude, avoid []int
	// grow marks an attempt for more instances of a running elastic job:
	// it may use only the groups of domain within, the job's (elastic.go).
	grow   bool
	within int
}

// newAttempt readies j of tenant t for this cycle; res is the index of
// the reservation it names (resIndex).
func (st *state) newAttempt(j *model.Job, t *tenantState, res int) *attempt {
	a := &attempt{job: j, tenant: t, req: RequestOf(j.Spec.Resources), count: j.Spec.Resources.InstanceCount,
		class: j.Spec.Priority.Class, res: res}
	if a.count < 1 {
		a.count = 1
	}
	a.total = int64(a.count) * a.req.TotalMilli()
	a.req.Image = st.imageOf(j)
	a.exclude = st.nodeIndices(j.Spec.Placement.ExcludeNodes, nil)
	if nodes := j.Spec.Placement.Nodes; len(nodes) > 0 {
		a.only = st.nodeIndices(nodes, nil)
		if len(a.only) == 0 {
			a.only = noNodes // names no node of the fleet: none allowed
		}
	}
	if len(j.Status.Attempts) > 0 {
		a.avoid = st.nodeIndices(AvoidedNodes(j), nil)
	}
	return a
}

// resIndex is the index of the reservation j names, -1 when it names none
// or one the state lacks.
func (st *state) resIndex(j *model.Job) int {
	if name := j.Spec.Placement.Reservation; name != "" {
		if i, ok := st.resByName[name]; ok {
			return i
		}
	}
	return -1
}

// noNodes is an allow-list that allows no node.
var noNodes = []int{-1}

// nodeIndices appends to out the index of each node of names the fleet
// has, once.
func (st *state) nodeIndices(names []string, out []int) []int {
	for _, name := range names {
		if i, ok := st.nodeByName[name]; ok && !slices.Contains(out, i) {
			out = append(out, i)
		}
	}
	return out
}

// excludes reports whether a's placement rules node i out: it is not one
// of placement.nodes, or one of placement.exclude_nodes.
func (a *attempt) excludes(i int) bool {
	return (len(a.only) > 0 && !slices.Contains(a.only, i)) || (len(a.exclude) > 0 && slices.Contains(a.exclude, i))
}

// excludeField names the placement fields that rule nodes out for a.
func excludeField(a *attempt) string {
	switch p := &a.job.Spec.Placement; {
	case len(p.Nodes) > 0 && len(p.ExcludeNodes) > 0:
		return "placement.nodes and exclude_nodes"
	case len(p.Nodes) > 0:
		return "placement.nodes"
	}
	return "placement.exclude_nodes"
}

// avoids reports whether an attempt of a's job failed on node i.
func (a *attempt) avoids(i int) bool { return len(a.avoid) > 0 && slices.Contains(a.avoid, i) }

// stage is how far a candidate got through the filters. A pending job's
// reason is the filter that stopped its furthest candidate.
type stage int

const (
	stageNone         stage = iota
	stageCapable            // region, GPU model and node size allow the job
	stageResidency          // the region's residency zone allows it
	stageInterconnect       // the cluster's fabric is the one asked for
	stageReady              // the node accepts work
	stageQuota              // the tenant's hard quota has room
	stageBorrow             // the partition may use this much of the pool
	stageReservation        // no other tenant's reservation holds the node
	stageFit                // free GPU, CPU and memory suffice
	stagePower              // rack and region power caps allow the draw
	stagePlaced             // everything holds (for a gang: per node)
)

// verdict collects what the filters saw, to explain a pending job.
type verdict struct {
	furthest     stage
	capableNodes int
	readyNodes   int
	reservedOut  int
	maxFree      int64 // most free milli-GPU for one instance on an allowed node
	quota        quotaKey
	quotaBlocked bool
	borrowPool   int
	regionsOut   []string
	excluded     int    // Ready nodes the job's placement rules out (excludes)
	powerNodes   int    // nodes with room that a power cap excluded
	powerWhy     string // the cap that excluded the last of them
}

func (v *verdict) reach(s stage) {
	if s > v.furthest {
		v.furthest = s
	}
}

// groupStage applies the filters that are the same for every node of g.
func (st *state) groupStage(a *attempt, g *group, v *verdict) stage {
	spec := &a.job.Spec
	if !spec.Placement.AllowsRegion(g.region.name) || !st.capable(a, g) || (a.grow && g.domain != a.within) {
		return stageNone
	}
	if r := spec.Placement.Residency; r != "" && r != g.residency {
		v.regionsOut = appendUnique(v.regionsOut, g.region.name)
		return stageCapable
	}
	if f := spec.Placement.Interconnect; f != "" && f != g.fabric {
		return stageResidency
	}
	if a.req.GPUs == 0 {
		return stageBorrow // CPU-only work is outside quotas and partitions
	}
	if t := a.tenant; t.quota != nil && t.quota[g.series] >= 0 && t.quotaUsed[g.series]+a.total > t.quota[g.series] {
		v.quota, v.quotaBlocked = quotaKey{t.idx, g.series}, true
		return stageReady
	}
	if !st.partitionAllows(a.tenant.partition, g.pool, a.total) {
		v.borrowPool = g.pool
		return stageQuota
	}
	return stageBorrow
}

// unready counts the nodes that are not Ready for a in the groups that pass
// a's group filters (region, residency, fabric): those the job excludes,
// those lost and those drained, and names the first few lost or drained.
// It is for the explanation of NoReadyNodes only, so it may walk nodes.
func (st *state) unready(a *attempt) (notReady, draining, excluded int, names []string) {
	var scratch verdict
	for _, g := range st.groups {
		if st.groupStage(a, g, &scratch) < stageReady {
			continue
		}
		for _, n := range g.nodes {
			switch {
			case a.excludes(n.Index):
				excluded++
				continue
			case n.Draining:
				draining++
			case !n.Ready:
				notReady++
			default:
				continue
			}
			if len(names) < unreadyNamed {
				names = append(names, n.Name)
			}
		}
	}
	return notReady, draining, excluded, names
}

// unreadyNamed is how many of the capable nodes that are not Ready the
// detail of NoReadyNodes names: those an operator looks at first.
const unreadyNamed = 3

// capable reports whether one instance could ever run on g's SKU.
func (st *state) capable(a *attempt, g *group) bool {
	r := &a.req
	if r.GPUs > g.sku.GPUs || r.CPU > g.sku.CPUMilli() || r.Memory > g.sku.MemoryMiB() {
		return false
	}
	if sku := a.job.Spec.Placement.SKU; sku != "" && sku != g.sku.Name {
		return false // pinned to one SKU (an instance)
	}
	return r.GPUs == 0 || r.AcceptsModel(g.sku.GPUModel)
}

// partitionAllows reports whether partition p may take milli more of pool k:
// within its guarantee always (reclaiming by preemption if need be), beyond
// it only up to its borrowing limit and only from capacity that others
// lend.
func (st *state) partitionAllows(p *partitionState, k int, milli int64) bool {
	var used, guar int64
	if p != nil {
		used, guar = p.used[k], p.guar[k]
	}
	if used+milli <= guar {
		return true
	}
	if st.overBorrowLimit(p, k, milli) {
		return false
	}
	// Capacity others keep for themselves is not lendable; whether the rest
	// has room is for placement (or preemption) to find out.
	prot := st.protected(k, p)
	return prot == 0 || st.poolFree[k]-prot >= milli
}

// overBorrowLimit reports whether taking milli more of pool k would put
// partition p past its borrowing limit there; no eviction can change that.
func (st *state) overBorrowLimit(p *partitionState, k int, milli int64) bool {
	if p == nil {
		return false
	}
	over := p.used[k] + milli - p.guar[k]
	return over > 0 && p.borrow[k] >= 0 && over > p.borrow[k]
}

// protected is the idle guaranteed capacity of pool k that partitions other
// than p do not lend.
func (st *state) protected(k int, p *partitionState) int64 {
	var sum int64
	for _, q := range st.partitionList {
		if q == p {
			continue
		}
		lend := q.lend[k]
		if lend < 0 {
			continue
		}
		if idle := q.guar[k] - lend - q.used[k]; idle > 0 {
			sum += idle
		}
	}
	return sum
}

// nodeStage applies the per-node filters after the group ones passed.
func (st *state) nodeStage(a *attempt, n *NodeInfo, v *verdict) stage {
	if !n.Ready {
		return stageInterconnect
	}
	if a.excludes(n.Index) || (a.grow && st.vacated[n.Index]) {
		v.excluded++
		return stageInterconnect
	}
	v.readyNodes++
	if !st.reservationAllows(a, n.Index) {
		v.reservedOut++
		return stageBorrow
	}
	return st.fitStage(a, n, v)
}

// fitStage applies the capacity and power filters to a Ready node a may use.
func (st *state) fitStage(a *attempt, n *NodeInfo, v *verdict) stage {
	if !n.FitsResources(&a.req) {
		if f := freeFor(n, &a.req); f > v.maxFree {
			v.maxFree = f
		}
		return stageReservation
	}
	if why := st.powerDenies(n, a.req.TotalMilli()); why != "" {
		v.powerNodes++
		v.powerWhy = why
		return stageFit
	}
	return stagePlaced
}

// mayUse reports whether a's job may use the Ready node i: the job does
// not exclude it and no reservation keeps it from the job.
func (st *state) mayUse(a *attempt, i int) bool {
	return !a.excludes(i) && !(a.grow && st.vacated[i]) && st.reservationAllows(a, i)
}

// reservationAllows reports whether a's job may use node i: a node of an
// active reservation is for its owner, and for spot work that the owner
// can evict; a node earmarked for a reservation ahead takes only work that
// may precede it (mayPrecede); a job that names a reservation runs only on
// its nodes.
func (st *state) reservationAllows(a *attempt, i int) bool {
	if h := st.holdOf[i]; h >= 0 && !st.mayUseHeld(a, h) {
		return false
	}
	if w := st.keptOf[i]; w >= 0 && st.yieldsTo(a, w, i) {
		return false
	}
	r := st.resOf[i]
	if a.job.Spec.Placement.Reservation != "" {
		return r >= 0 && r == a.res
	}
	if e := st.earOf[i]; e >= 0 {
		return st.mayPrecede(a, &st.res[e])
	}
	return r < 0 || st.res[r].Owner == a.tenant.name || a.class == model.ClassSpot
}

func (st *state) powerAllows(n *NodeInfo, milli int64) bool { return st.powerDenies(n, milli) == "" }

// powerDenies names the rack or region cap that drawing milli more on n
// would break, or returns "".
func (st *state) powerDenies(n *NodeInfo, milli int64) string {
	w := st.powerOf(n, milli)
	if w == 0 {
		return ""
	}
	if r := st.rackOf[n.Index]; r >= 0 {
		if rk := st.racks[r]; rk.capW > 0 && rk.drawW+w > rk.capW {
			return fmt.Sprintf("rack %s draws %.1f of its %.1f kW cap, the job needs %.1f kW more", n.Rack, kw(rk.drawW), kw(rk.capW), kw(w))
		}
	}
	if reg := st.regionOf[n.Index]; reg.capW > 0 && reg.drawW+w > reg.capW {
		return fmt.Sprintf("region %s draws %.1f of its %.1f kW headroom, the job needs %.1f kW more", n.Region, kw(reg.drawW), kw(reg.capW), kw(w))
	}
	return ""
}

func kw(w int64) float64 { return float64(w) / 1000 }

// freeFor is the capacity relevant to r that n has free: whole GPUs for
// whole-GPU work, the largest free fraction for a fraction.
func freeFor(n *NodeInfo, r *Request) int64 {
	if r.Fractional() {
		var best int64
		for _, f := range n.FreeMilli {
			best = max(best, f)
		}
		return best
	}
	return int64(n.FreeWhole) * model.MilliPerGPU
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// explain turns what the filters saw into a reason and a detail.
func (st *state) explain(a *attempt, v *verdict) (Reason, string) {
	if a.res < 0 {
		return st.explainFilters(a, v)
	}
	// A job that names a reservation runs only on its nodes; say first
	// when the reservation holds fewer than it should, and why.
	r := &st.res[a.res]
	short := ""
	if len(r.nodes) < r.Count {
		short = fmt.Sprintf("reservation %q holds %d of its %d nodes: of its %s nodes in %s, %d NotReady, %d held by other reservations",
			r.Name, len(r.nodes), r.Count, r.SKU, r.Region, r.notReady, r.heldByOthers)
	}
	if len(r.nodes) == 0 {
		if r.notReady > 0 {
			return NoReadyNodes, short
		}
		return InsufficientCapacity, short
	}
	reason, detail := st.explainFilters(a, v)
	if short != "" {
		detail += "; " + short
	}
	return reason, detail
}

// nodesText counts nodes of a kind: "1 ready capable node", "3 ready
// capable nodes" ("1 node" with no kind).
func nodesText(n int, kind string) string {
	if kind != "" {
		kind += " "
	}
	if n == 1 {
		return "1 " + kind + "node"
	}
	return fmt.Sprintf("%d %snodes", n, kind)
}

// allNodesText begins a sentence about every node of a kind: "the one
// capable node is", "all 4 capable nodes are".
func allNodesText(n int, kind string) string {
	if n == 1 {
		return "the one " + kind + " node is"
	}
	return fmt.Sprintf("all %d %s nodes are", n, kind)
}

// excludedText counts every node of a kind the job excludes: "the one
// capable node", "all 3 capable nodes".
func excludedText(n int, kind string) string {
	if n == 1 {
		return "the one " + kind + " node"
	}
	return fmt.Sprintf("all %d %s nodes", n, kind)
}

// unreadyText is the detail of NoReadyNodes: of the capable nodes, how
// many are lost (NotReady) and how many drained, naming only the kinds
// there are, then the first of those nodes by name ("…: n1, n2 and 3 more").
func unreadyText(capable, notReady, draining int, names []string) string {
	const lost, drained = "NotReady (their agents do not heartbeat)", "Draining (taken out of service for maintenance or a fault)"
	var s string
	switch {
	case draining == 0:
		s = allNodesText(capable, "capable") + " " + lost
	case notReady == 0:
		s = allNodesText(capable, "capable") + " " + drained
	default:
		s = fmt.Sprintf("all %d capable nodes are NotReady or Draining: %d NotReady, %d Draining (taken out of service for maintenance or a fault)",
			capable, notReady, draining)
	}
	if len(names) == 0 {
		return s
	}
	s += ": " + strings.Join(names, ", ")
	if more := notReady + draining - len(names); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// explainFilters says which filter stopped the furthest candidate.
func (st *state) explainFilters(a *attempt, v *verdict) (Reason, string) {
	spec := &a.job.Spec
	switch v.furthest {
	case stageNone:
		return SkuNotAvailable, fmt.Sprintf("no SKU in %s has %s", regionsText(spec.Placement.Regions), shapeText(a))
	case stageCapable:
		return ResidencyForbidden, fmt.Sprintf("capable nodes are only in %s, outside residency %q",
			strings.Join(v.regionsOut, ", "), spec.Placement.Residency)
	case stageResidency:
		return TopologyUnsatisfiable, fmt.Sprintf("no %s cluster in %s has %s",
			spec.Placement.Interconnect, regionsText(spec.Placement.Regions), shapeText(a))
	case stageInterconnect:
		notReady, draining, excluded, names := st.unready(a)
		if excluded == 0 {
			return NoReadyNodes, unreadyText(v.capableNodes, notReady, draining, names)
		}
		if notReady+draining == 0 {
			return NodesExcluded, fmt.Sprintf("%s rules out %s", excludeField(a), excludedText(excluded, "capable"))
		}
		return NoReadyNodes, unreadyText(v.capableNodes-excluded, notReady, draining, names) +
			fmt.Sprintf("; %s rules out the other %s", excludeField(a), nodesText(excluded, ""))
	case stageReady:
		k, sk := v.quota, st.series[v.quota.series]
		return QuotaExceeded, fmt.Sprintf("tenant %s: %s GPUs in %s: %s of %s used, job needs %s",
			a.tenant.name, sk.series, sk.region, gpusText(a.tenant.quotaUsed[k.series]), gpusText(st.quota[k]), gpusText(a.total))
	case stageQuota:
		k, pk, p := v.borrowPool, st.pools[v.borrowPool], a.tenant.partition
		name, used, guar := "(none)", int64(0), int64(0)
		if p != nil {
			name, used, guar = p.name, p.used[k], p.guar[k]
		}
		prot := st.protected(k, p)
		detail := fmt.Sprintf("partition %s: %s in %s: %s used of %s guaranteed; lendable idle %s; job needs %s",
			name, pk.gpuModel, pk.region, gpusText(used), gpusText(guar), gpusText(max(0, st.poolFree[k]-prot)), gpusText(a.total))
		if st.overBorrowLimit(p, k, a.total) {
			// No eviction helps: only the partition's own work ending, or
			// none of it left when the job needs more than the cap.
			detail += fmt.Sprintf("; the partition may borrow at most %s beyond its guarantee here", gpusText(p.borrow[k]))
			if a.total > guar+p.borrow[k] {
				detail += fmt.Sprintf(", so it never holds more than %s: the job cannot start while its guarantee and borrowing limit stay as they are", gpusText(guar+p.borrow[k]))
			} else {
				detail += ": the job waits for the partition's own work in the pool to end"
			}
		}
		if a.res >= 0 && prot > 0 {
			// The reservation's nodes are idle for it, but the pool's
			// guarantees that are not lent take them first: the tenancy
			// promises the pool twice (model.Promise).
			detail += fmt.Sprintf("; other partitions keep %s of the pool idle for their guarantees, not lent, and reservation %q waits for room beyond them",
				gpusText(prot), spec.Placement.Reservation)
		}
		return BorrowLimitReached, detail
	case stageBorrow:
		if a.res >= 0 {
			if hold := st.holdNote(a); hold != "" {
				return InsufficientCapacity, fmt.Sprintf("%s outside reservation %q or kept for a job that has waited longer",
					allNodesText(v.reservedOut, "ready capable"), spec.Placement.Reservation) + hold
			}
			return InsufficientCapacity, fmt.Sprintf("%s outside reservation %q", allNodesText(v.reservedOut, "ready capable"), spec.Placement.Reservation)
		}
		ear, hold := st.earmarkNote(a), st.holdNote(a)
		if kept := st.keptNote(a); kept != "" {
			return InsufficientCapacity, allNodesText(v.reservedOut, "ready capable") +
				" held by reservations of other tenants or kept for them or for other jobs" + ear + hold + kept
		}
		switch {
		case hold != "" && ear == "" && v.reservedOut <= len(st.held):
			return InsufficientCapacity, allNodesText(v.reservedOut, "ready capable") + " kept for jobs that have waited longer" + hold
		case hold != "":
			return InsufficientCapacity, allNodesText(v.reservedOut, "ready capable") +
				" held by reservations of other tenants or kept for them or for jobs that have waited longer" + ear + hold
		case ear != "":
			return InsufficientCapacity, allNodesText(v.reservedOut, "ready capable") + " held by reservations of other tenants or kept for them" + ear
		}
		return InsufficientCapacity, allNodesText(v.reservedOut, "ready capable") + " held by reservations of other tenants"
	case stageReservation:
		d := fmt.Sprintf("%s, most free on one node: %s, job needs %s per instance",
			nodesText(v.readyNodes, "ready capable"), gpusText(v.maxFree), gpusText(a.req.TotalMilli()))
		if a.count == 1 && v.maxFree >= a.req.TotalMilli() && (a.req.CPU > 0 || a.req.Memory > 0) {
			// The GPUs are there: what blocks is the host's CPU or memory.
			d += fmt.Sprintf("; the GPUs are free but not the CPU or memory it asks (%s)", shapeText(a))
		}
		if v.excluded > 0 {
			d += fmt.Sprintf("; %s rules out %d more", excludeField(a), v.excluded)
		}
		if v.reservedOut == 1 && a.res < 0 {
			d += "; 1 more is reserved for others" + st.earmarkNote(a)
		} else if v.reservedOut > 0 && a.res < 0 {
			d += fmt.Sprintf("; %d more are reserved for others", v.reservedOut) + st.earmarkNote(a)
		}
		d += st.holdNote(a) + st.keptNote(a)
		return InsufficientCapacity, d
	case stageFit:
		have := "have"
		if v.powerNodes == 1 {
			have = "has"
		}
		return PowerCapped, fmt.Sprintf("%s %s room but not the power: %s", nodesText(v.powerNodes, ""), have, v.powerWhy)
	}
	return InsufficientCapacity, "no placement found"
}

func regionsText(regions []string) string {
	if len(regions) == 0 {
		return "any region"
	}
	return "regions " + strings.Join(regions, ", ")
}

func shapeText(a *attempt) string {
	r := a.job.Spec.Resources
	models := "any GPU"
	if len(r.GPUModels) > 0 {
		models = strings.Join(r.GPUModels, "|")
	}
	gpu := fmt.Sprintf("%d×%s", r.GPUsPerInstance, models)
	if r.Fractional() {
		gpu = fmt.Sprintf("%d milli-GPU of %s", r.GPUMilli, models)
	}
	if r.CPUMilli > 0 { // what the job did not ask for is left out
		gpu += fmt.Sprintf(", %d mCPU", r.CPUMilli)
	}
	if r.MemoryMiB > 0 {
		gpu += fmt.Sprintf(", %d MiB", r.MemoryMiB)
	}
	return gpu + " per instance"
}

func gpusText(milli int64) string {
	if milli%model.MilliPerGPU == 0 {
		return fmt.Sprintf("%d GPUs", milli/model.MilliPerGPU)
	}
	return fmt.Sprintf("%.2f GPUs", float64(milli)/model.MilliPerGPU)
}
