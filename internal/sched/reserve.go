package sched

import (
	"slices"
	"sort"
	"strings"

	"github.com/allot-dev/allot/internal/model"
)

// reserve gives each active reservation, in the tenancy's order, Count of
// the Ready nodes of its SKU and region that no earlier reservation took.
// It prefers, in order:
//
//  1. nodes running the owner's work that names the reservation, so that
//     work stays inside it from one cycle to the next;
//  2. nodes that hold no other tenant's work: idle, or holding only the
//     owner's work. While the owner's work that names the reservation is
//     queued, idle nodes come first, then those whose owner's work loses
//     the least (that work yields to it, yieldsToNamed); otherwise they
//     tie, so that the reservation may cover the owner's work and leave
//     idle nodes to others;
//  3. for a reservation with a start (whose nodes took only spot work,
//     work bound to end before it and work that checkpoints and would be
//     past its protection and one checkpoint at the start, see earmark),
//     nodes whose other work is all such work, judged from when it
//     started: it gives way at once, where other work may still be
//     protected;
//  4. nodes whose other work (spot work included) loses the fewest
//     GPU-seconds since its last checkpoint if evicted;
//
// and after all of those, in the same order, the nodes that no queued work
// naming the reservation may use, while each such job names its nodes
// (placement.nodes or exclude_nodes: a host it keeps off), so that the
// reservation holds nodes its work can run on;
//
// and among equals the node of lower name, so the choice is deterministic
// and stable from cycle to cycle. It takes them from one cluster when one
// can give them all, else from as few as it can (inFewClusters), so that a
// gang as large as the reservation can run in it. A NotReady node is never
// reserved: the owner could not use it.
func (st *state) reserve() {
	var cands, picks []reserveCand
	for idx := range st.res {
		rs := &st.res[idx]
		if !rs.active {
			continue
		}
		cands = cands[:0]
		for _, g := range st.groups {
			if len(g.nodes) == 0 || g.nodes[0].SKU != rs.SKU || g.region.name != rs.Region {
				continue
			}
			for _, n := range g.nodes {
				switch {
				case st.resOf[n.Index] >= 0:
					rs.heldByOthers++
				case !n.Ready:
					rs.notReady++
				default:
					tier, cost := st.reserveCost(rs, n.Index)
					cands = append(cands, reserveCand{node: n.Index, tier: tier, cost: cost})
				}
			}
		}
		sort.Slice(cands, func(x, y int) bool {
			a, b := cands[x], cands[y]
			if a.tier != b.tier {
				return a.tier < b.tier
			}
			if a.cost != b.cost {
				return a.cost < b.cost
			}
			return st.nodes[a.node].Name < st.nodes[b.node].Name
		})
		picks = st.inFewClusters(cands, rs.Count, picks)
		for _, c := range picks {
			st.resOf[c.node] = idx
			rs.nodes = append(rs.nodes, c.node)
		}
	}
}

// reserveCost ranks node i for reservation rs (see reserve): tier 0 when it
// runs work naming rs, 1 when it holds no other tenant's work, 2 when rs
// has a start and other tenants' work on it is all spot or work that
// precedes it (precedesFrom, from its start), else 3, and 4
// more than that when the queued work naming rs may not use it (unwanted);
// with the GPU-seconds that work would lose (in tier 1, the owner's work
// that does not name rs, while work naming rs is queued; else nothing).
func (st *state) reserveCost(rs *reservationState, i int) (tier int, cost float64) {
	tier, cost = st.reserveTier(rs, i)
	if tier > 0 && st.unwanted(rs, i) {
		tier += 4
	}
	return tier, cost
}

// unwanted reports whether every queued job naming rs rules node i out by
// its node lists (none when one of them names no nodes).
func (st *state) unwanted(rs *reservationState, i int) bool {
	if rs.unsteered || len(rs.steered) == 0 {
		return false
	}
	name := st.nodes[i].Name
	for _, j := range rs.steered {
		if j.Spec.Placement.AllowsNode(name) {
			return false
		}
	}
	return true
}

// reserveTier is reserveCost without the unwanted rank.
func (st *state) reserveTier(rs *reservationState, i int) (tier int, cost float64) {
	// onlySpot: the other tenants' work is all spot, or precedes rs.
	named, foreign, onlySpot := false, false, true
	var own float64 // the owner's work that does not name rs
	work := st.byNode[i]
	if len(work) > 2 {
		// Summed in job order, so that the cost does not depend on the
		// order work was bound and released in (a Session's state and a
		// cycle's own must agree to the last bit); two terms commute.
		work = append(st.nodeWork[:0], work...)
		slices.SortFunc(work, func(x, y *running) int { return strings.Compare(x.job.ID, y.job.ID) })
		st.nodeWork = work
	}
	for k, rj := range work {
		if k > 0 && work[k-1] == rj {
			continue // another instance of the same job: it loses its work once
		}
		switch {
		case rj.tenant.name != rs.Owner:
			foreign = true
			onlySpot = onlySpot && (rj.job.Spec.Priority.Class == model.ClassSpot ||
				(!rs.Start.IsZero() && st.precedesFrom(rj.job, rj.tenant, st.groups[st.groupOf[i]].pool, rj.job.Status.StartedAt, rs.Start)))
			cost += rj.cost // counted at begin
		case rj.job.Spec.Placement.Reservation == rs.Name:
			named = true
		default:
			own += rj.cost
		}
	}
	switch {
	case named:
		return 0, cost
	case !foreign && rs.named:
		return 1, own
	case !foreign:
		return 1, 0
	case onlySpot && !rs.Start.IsZero():
		return 2, cost
	}
	return 3, cost
}
