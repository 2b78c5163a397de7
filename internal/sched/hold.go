package sched

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Holding nodes for a job that has waited too long (Config.HoldAfter).
//
// The queue lets later work take whatever a job that does not fit leaves,
// so a job that needs much in one place (a gang of 8-GPU instances on one
// fabric, a whole node) can wait for ever while small jobs take each GPU
// as it frees up. Once a job has waited HoldAfter, a cycle keeps for it the
// nodes of one gang domain (one GPU model in one cluster) where the least
// running work stands between it and a start. Until it starts they take
// only its work, work of a higher class (which could evict it anyway),
// spot work (which it may evict) and work of another partition that fits
// that partition's unused guarantee (a hold never keeps a partition below
// its guarantee). The capacity they hold drains as their work ends, and
// the job starts once it fits. Slurm's backfill keeps a start time for the
// queue's top job, and Volcano's reservation plugin locks nodes for its
// most starved one, to the same end.
//
// One job at a time holds in each gang domain, and one in each
// reservation's nodes there: the queued job of the highest class, then the
// longest wait, then the lowest ID, among those that have waited
// HoldAfter, need GPUs, are not spot, and pass every filter but free
// capacity on some group (so a job over its quota or borrowing limit holds
// nothing). The nodes are chosen afresh every cycle from the Snapshot:
// Ready nodes that no reservation holds or earmarks (for a job that names
// a reservation, nodes the reservation holds), in the domain whose chosen
// nodes hold the least GPU milli of work that is not spot, nodes with less
// such work first, then by fleet order. Work that may not use held nodes
// stays off them, so from cycle to cycle that sum only falls and the
// choice moves only to nodes closer to a start.

// holdCandidates bounds how many waiting jobs a cycle tries: each try
// visits the nodes the job could use.
const holdCandidates = 16

// holdState is one job that keeps nodes in this cycle: held[first:first+n].
type holdState struct {
	job       *model.Job
	class     model.Class
	partition *partitionState // the holder's; nil for none
	res       int             // the reservation it names, -1 for none
	domain    int
	first, n  int
}

// chooseHolders chooses this cycle's holders among jobs and keeps their
// nodes; it runs once per cycle, after begin.
func (st *state) chooseHolders(jobs []*model.Job) {
	for _, i := range st.held {
		st.holdOf[i] = -1
	}
	st.held, st.holds = st.held[:0], st.holds[:0]
	if st.cfg.HoldAfter <= 0 {
		return
	}
	var waiting []*model.Job
	for _, j := range jobs {
		if st.mayHold(j) {
			waiting = append(waiting, j)
		}
	}
	slices.SortFunc(waiting, func(x, y *model.Job) int {
		return cmp.Or(cmp.Compare(y.Spec.Priority.Class, x.Spec.Priority.Class),
			waitingSince(x).Compare(waitingSince(y)), cmp.Compare(x.ID, y.ID))
	})
	tries := 0
	for _, j := range waiting {
		a := st.newAttempt(j, st.tenants[j.Spec.Tenant])
		if name := j.Spec.Placement.Reservation; name != "" &&
			(a.res < 0 || !st.res[a.res].active || st.res[a.res].Owner != a.tenant.name) {
			continue // waits for its reservation, not for capacity
		}
		if a.res >= 0 && slices.ContainsFunc(st.holds, func(x holdState) bool { return x.res == a.res }) {
			continue // its reservation has a holder
		}
		if tries++; tries > holdCandidates {
			return
		}
		nodes, d := st.holdNodes(a)
		if len(nodes) == 0 {
			continue
		}
		h := len(st.holds)
		st.holds = append(st.holds, holdState{job: j, class: a.class, partition: a.tenant.partition, res: a.res, domain: d,
			first: len(st.held), n: len(nodes)})
		for _, i := range nodes {
			st.holdOf[i] = h
			g := st.groups[st.groupOf[i]]
			g.reservedReady = append(g.reservedReady, i)
		}
		st.held = append(st.held, nodes...)
	}
}

// mayHold reports whether j may hold nodes: queued and waiting for
// capacity (not held back) for HoldAfter, needing GPUs, not spot, of a
// known tenant.
func (st *state) mayHold(j *model.Job) bool {
	s := &j.Spec
	switch {
	case j.Status.State != model.StateQueued, j.Status.Held, j.Status.NotBefore.After(st.now),
		s.Priority.Class == model.ClassSpot,
		s.Resources.GPUsPerInstance == 0 && s.Resources.GPUMilli == 0:
		return false
	}
	if t, ok := st.tenants[s.Tenant]; !ok || t == nil {
		return false
	}
	return st.now.Sub(waitingSince(j)) >= st.cfg.HoldAfter
}

// waitingSince is when j last began to wait: the end of its last attempt,
// or its submission.
func waitingSince(j *model.Job) time.Time {
	if n := len(j.Status.Attempts); n > 0 && !j.Status.Attempts[n-1].Ended.IsZero() {
		return j.Status.Attempts[n-1].Ended
	}
	return j.Status.SubmittedAt
}

// holdNodes returns the nodes a would hold, and their domain: in the gang
// domain without a holder of a's reservation (or of none) where the nodes
// that would take all its instances, empty, hold the least work that is
// not spot; none when no such domain could take it even empty.
func (st *state) holdNodes(a *attempt) ([]int, int) {
	type cand struct {
		node    int
		blocked int64 // milli-GPU of work that is not spot
		slots   int   // instances of a the node takes when empty
	}
	byDomain := map[int][]cand{}
	var order []int // domains in the order of their first group
	var v verdict
	for _, g := range st.groups {
		if st.groupStage(a, g, &v) < stageBorrow {
			continue
		}
		slots := emptySlots(&a.req, g.sku)
		if slots == 0 || slices.ContainsFunc(st.holds, func(x holdState) bool { return x.res == a.res && x.domain == g.domain }) {
			continue
		}
		for _, n := range g.nodes {
			i := n.Index
			if !n.Ready || st.resOf[i] != a.res || st.earOf[i] >= 0 || st.holdOf[i] >= 0 {
				continue // a job naming a reservation holds its nodes, others no reserved ones
			}
			if _, seen := byDomain[g.domain]; !seen {
				order = append(order, g.domain)
			}
			byDomain[g.domain] = append(byDomain[g.domain], cand{node: i, blocked: st.blockedMilli(i), slots: slots})
		}
	}
	var best []int
	var bestBlocked int64
	bestDomain := -1
	for _, d := range order {
		cands := byDomain[d]
		slices.SortFunc(cands, func(x, y cand) int { return cmp.Or(cmp.Compare(x.blocked, y.blocked), cmp.Compare(x.node, y.node)) })
		var nodes []int
		var blocked int64
		took := 0
		for _, c := range cands {
			if took >= a.count {
				break
			}
			nodes, blocked, took = append(nodes, c.node), blocked+c.blocked, took+c.slots
		}
		if took >= a.count && (best == nil || blocked < bestBlocked) {
			best, bestBlocked, bestDomain = nodes, blocked, d
		}
	}
	return best, bestDomain
}

// emptySlots is how many instances of r an idle node of sku takes.
func emptySlots(r *Request, sku model.SKU) int {
	s := sku.GPUs
	switch {
	case r.Fractional():
		s *= int(model.MilliPerGPU / r.Milli)
	case r.GPUs > 0:
		s /= r.GPUs
	}
	if r.CPU > 0 {
		s = min(s, int(sku.CPUMilli()/r.CPU))
	}
	if r.Memory > 0 {
		s = min(s, int(sku.MemoryMiB()/r.Memory))
	}
	return s
}

// blockedMilli is the milli-GPU that work other than spot holds on node i.
func (st *state) blockedMilli(i int) int64 {
	blocked := st.nodes[i].UsedMilli()
	for _, rj := range st.byNode[i] {
		if rj.class != model.ClassSpot {
			continue
		}
		for _, n := range rj.nodes {
			if n == i {
				blocked -= rj.req.TotalMilli()
			}
		}
	}
	return blocked
}

// mayUseHeld reports whether a's job may use a node that holds[h] keeps:
// the holder itself, work of a higher class, spot work, and work of
// another partition that fits inside that partition's unused guarantee (a
// hold never keeps a partition below its guarantee; inside the holder's
// own partition it decides who goes first).
func (st *state) mayUseHeld(a *attempt, h int) bool {
	x := &st.holds[h]
	return a.job == x.job || a.class > x.class || a.class == model.ClassSpot ||
		(a.tenant.partition != x.partition && st.withinGuarantee(a.tenant, a.job))
}

// holderIndex is j's index in holds, or -1.
func (st *state) holderIndex(j *model.Job) int {
	for h := range st.holds {
		if st.holds[h].job == j {
			return h
		}
	}
	return -1
}

// holdKey is what a job's shape key gains while jobs hold nodes: a holder
// may use nodes that jobs alike in every filter may not.
func (st *state) holdKey(a *attempt) string {
	if len(st.holds) > 0 && st.holderIndex(a.job) >= 0 {
		return "|holder"
	}
	return ""
}

// holdNote names, for a pending job's detail, the first holder whose nodes
// it could run on but may not use; "" when none keeps it out.
func (st *state) holdNote(a *attempt) string {
	for h := range st.holds {
		x := &st.holds[h]
		i := st.held[x.first]
		g := st.groups[st.groupOf[i]]
		if st.mayUseHeld(a, h) || st.resOf[i] != a.res || !a.job.Spec.Placement.AllowsRegion(g.region.name) || !st.capable(a, g) {
			continue
		}
		return fmt.Sprintf("; %d nodes of %s are kept for job %s, which has waited since %s",
			x.n, st.domains[g.domain].name, x.job.ID, waitingSince(x.job).UTC().Format(time.RFC3339))
	}
	return ""
}

// holderNote says, for holds[h]'s detail, what it holds.
func (st *state) holderNote(h int) string {
	x := &st.holds[h]
	g := st.groups[st.groupOf[st.held[x.first]]]
	return fmt.Sprintf("; %d nodes of %s are kept for it, as it has waited since %s: until it starts they take only it, higher classes, spot work and other partitions' guaranteed work",
		x.n, st.domains[g.domain].name, waitingSince(x.job).UTC().Format(time.RFC3339))
}
