package sched

import (
	"cmp"
	"fmt"
	"math"
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
// the job starts once it fits. Two kinds of backfill keep held GPUs from
// idling meanwhile. Work of the holder's class and partition that
// checkpoints may use them while other work still stands in the holder's
// way there; it yields: once evicting it lets the holder start, the holder
// does (reason HeldNodes, after MinRunTime like any preemption, losing at
// most a checkpoint interval of it), and once only yielding work is left
// no more comes in. And when every job on the held nodes has a
// retry.timeout, the hold has a shadow time, by which they surely end, and
// work that surely ends by then may use the nodes without yielding.
// Slurm's backfill keeps a start time for the queue's top job, and
// Volcano's reservation plugin locks nodes for its most starved one, to
// the same end.
//
// One job at a time holds in each gang domain, and one in each
// reservation's nodes there: the queued job of the highest class, then the
// longest wait, then the lowest ID, among those that have waited
// HoldAfter, need more than one GPU's worth (less fits the first GPU that
// frees up, and waits only for the queue order, which a hold must not
// overrule), are not spot, and pass every filter but free capacity on some
// group (so a job over its quota or borrowing limit holds nothing). The
// nodes are chosen afresh every cycle from the Snapshot: Ready nodes that
// no reservation holds or earmarks (for a job that names a reservation,
// nodes the reservation holds), in the domain whose chosen nodes are surely
// free soonest (by the timeouts of the work on them that is neither spot
// nor yields; never, when some of it has none), then hold the least GPU
// milli of such work; nodes go in the same order, then by fleet order.
// Work that may not use held nodes stays off them, work that yields does
// not count, and work backfilled by the shadow time ends by it, so from
// cycle to cycle the chosen nodes' drain time does not grow: the choice
// moves only to nodes free as soon or sooner, or, without timeouts,
// holding less work.

// HoldCandidates bounds how many waiting jobs a cycle tries: each try
// visits the nodes the job could use. A driver that shows the core only
// part of its queue (the trace replay) shows, to choose the same holders,
// at least this many of each tenant's first jobs in HoldOrder that
// MayHold.
const HoldCandidates = 16

// holdState is one job that keeps nodes in this cycle: held[first:first+n].
type holdState struct {
	job       *model.Job
	class     model.Class
	partition *partitionState // the holder's; nil for none
	res       int             // the reservation it names, -1 for none
	domain    int
	first, n  int
	// shadow is when the work on the held nodes that is not spot surely
	// ends (its retry.timeout and checkpoint grace; endsBy), in Unix
	// nanoseconds: the holder can start by then, and work that surely
	// ends by then may use the nodes meanwhile (backfill). 0 when some of
	// that work has no bound, or none is there. Work that yields to the
	// holder does not count.
	shadow int64
	// since is when the hold began: the holder's WaitingSince plus
	// HoldAfter. Work of its class and partition that checkpoints and
	// started since then yields to it (yields).
	since time.Time
	// blocked is the milli-GPU of work on the held nodes that neither is
	// spot nor yields: while there is some, work that would yield may use
	// the nodes (mayUseHeld); once there is none, the holder starts as soon
	// as what yields has run MinRunTime, and nothing new comes in between.
	blocked int64
}

// unbounded is a node's drain time when some work on it has no bound.
const unbounded = math.MaxInt64

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
	slices.SortFunc(waiting, HoldOrder)
	tries := 0
	for _, j := range waiting {
		a := st.newAttempt(j, st.tenants[j.Spec.Tenant], st.resIndex(j))
		if name := j.Spec.Placement.Reservation; name != "" &&
			(a.res < 0 || !st.res[a.res].active || st.res[a.res].Owner != a.tenant.name) {
			continue // waits for its reservation, not for capacity
		}
		if a.res >= 0 && slices.ContainsFunc(st.holds, func(x holdState) bool { return x.res == a.res }) {
			continue // its reservation has a holder
		}
		if tries++; tries > HoldCandidates {
			return
		}
		since := WaitingSince(j).Add(st.cfg.HoldAfter)
		nodes, d, drain, blocked := st.holdNodes(a, since)
		if len(nodes) == 0 {
			continue
		}
		h := len(st.holds)
		st.holds = append(st.holds, holdState{job: j, class: a.class, partition: a.tenant.partition, res: a.res, domain: d,
			first: len(st.held), n: len(nodes), since: since, blocked: blocked})
		if drain != unbounded {
			st.holds[h].shadow = drain
		}
		for _, i := range nodes {
			st.holdOf[i] = h
			g := st.groups[st.groupOf[i]]
			g.reservedReady = append(g.reservedReady, i)
		}
		st.held = append(st.held, nodes...)
	}
}

// mayHold reports whether j may hold nodes: MayHold, and of a known
// tenant.
func (st *state) mayHold(j *model.Job) bool {
	if t, ok := st.tenants[j.Spec.Tenant]; !ok || t == nil {
		return false
	}
	return MayHold(j, st.now, st.cfg.HoldAfter)
}

// MayHold reports whether j may hold nodes at now when jobs hold after
// holdAfter (Config.HoldAfter): queued and waiting for capacity (not held
// back) for holdAfter, needing more than one GPU's worth, not spot. A
// driver that shows the core part of its queue uses it to choose what to
// show (see HoldCandidates).
func MayHold(j *model.Job, now time.Time, holdAfter time.Duration) bool {
	s := &j.Spec
	switch {
	case holdAfter <= 0, j.Status.State != model.StateQueued, j.Status.Held, j.HeldUntil().After(now),
		s.Priority.Class == model.ClassSpot,
		s.Resources.TotalMilli() <= model.MilliPerGPU:
		return false
	}
	return now.Sub(WaitingSince(j)) >= holdAfter
}

// HoldOrder is the order in which waiting jobs are tried as holders: the
// highest class, then the longest wait (WaitingSince), then the lowest ID.
func HoldOrder(x, y *model.Job) int {
	return cmp.Or(cmp.Compare(y.Spec.Priority.Class, x.Spec.Priority.Class),
		WaitingSince(x).Compare(WaitingSince(y)), cmp.Compare(x.ID, y.ID))
}

// WaitingSince is when j last began to wait: the end of its last attempt,
// or its submission.
func WaitingSince(j *model.Job) time.Time {
	if n := len(j.Status.Attempts); n > 0 && !j.Status.Attempts[n-1].Ended.IsZero() {
		return j.Status.Attempts[n-1].Ended
	}
	return j.Status.SubmittedAt
}

// holdNodes returns the nodes a would hold, their domain, when the work on
// them that is not spot and would not yield to a, had its hold begun at
// since, surely ends (nodeDrain; 0 for none, unbounded when some has no
// bound), and the milli-GPU of that work: in the gang domain without a holder
// of a's reservation (or of none) where the nodes that would take all its
// instances, empty, are surely free soonest, then hold the least work that
// is not spot; none when no such domain could take it even empty. Work
// that backfills held nodes ends by the drain time of the nodes chosen,
// so it neither moves the choice to later nodes nor the drain time later.
func (st *state) holdNodes(a *attempt, since time.Time) ([]int, int, int64, int64) {
	type cand struct {
		node    int
		drain   int64 // nodeDrain
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
			if !n.Ready || a.excludes(i) || st.resOf[i] != a.res || st.earOf[i] >= 0 || st.holdOf[i] >= 0 {
				continue // a job naming a reservation holds its nodes, others no reserved ones
			}
			if _, seen := byDomain[g.domain]; !seen {
				order = append(order, g.domain)
			}
			drain, blocked := st.nodeDrain(i, a.class, a.tenant.partition, since)
			byDomain[g.domain] = append(byDomain[g.domain], cand{node: i, drain: drain, blocked: blocked, slots: slots})
		}
	}
	var best []int
	var bestDrain, bestBlocked int64
	bestDomain := -1
	for _, d := range order {
		cands := byDomain[d]
		slices.SortFunc(cands, func(x, y cand) int {
			return cmp.Or(cmp.Compare(x.drain, y.drain), cmp.Compare(x.blocked, y.blocked), cmp.Compare(x.node, y.node))
		})
		var nodes []int
		var drain, blocked int64
		took := 0
		for _, c := range cands {
			if took >= a.count {
				break
			}
			nodes, drain, blocked, took = append(nodes, c.node), max(drain, c.drain), blocked+c.blocked, took+c.slots
		}
		if took >= a.count && (best == nil || drain < bestDrain || (drain == bestDrain && blocked < bestBlocked)) {
			best, bestDrain, bestBlocked, bestDomain = nodes, drain, blocked, d
		}
	}
	return best, bestDomain, bestDrain, bestBlocked
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

// nodeDrain returns when the work on node i that is not spot and would not
// yield to a holder of class c in partition p whose hold began at since
// surely ends (endsBy), in Unix nanoseconds (0 when there is none,
// unbounded when some has no bound), and the milli-GPU it holds there.
func (st *state) nodeDrain(i int, c model.Class, p *partitionState, since time.Time) (drain, blocked int64) {
	for _, rj := range st.byNode[i] {
		if rj.class == model.ClassSpot || yields(rj, c, p, since) {
			continue
		}
		for _, n := range rj.nodes {
			if n == i {
				blocked += rj.req.TotalMilli()
			}
		}
		if end, ok := endsBy(rj.job, rj.job.Status.StartedAt); !ok {
			drain = unbounded
		} else if drain != unbounded {
			drain = max(drain, end.UnixNano())
		}
	}
	return drain, blocked
}

// mayUseHeld reports whether a's job may use a node that holds[h] keeps:
// the holder itself, work of a higher class, spot work, work of another
// partition that fits inside that partition's unused guarantee (a hold
// never keeps a partition below its guarantee; inside the holder's own
// partition it decides who goes first), and work that surely ends, started
// now, by the holder's shadow time (backfill: it cannot delay the holder).
func (st *state) mayUseHeld(a *attempt, h int) bool {
	x := &st.holds[h]
	if a.job == x.job || a.class > x.class || a.class == model.ClassSpot ||
		(a.tenant.partition != x.partition && st.withinGuarantee(a.tenant, a.job)) ||
		(a.class == x.class && a.tenant.partition == x.partition && checkpoints(a.job) && x.blocked > 0) {
		return true
	}
	end, ok := endsBy(a.job, st.now)
	return ok && x.shadow > 0 && end.UnixNano() <= x.shadow
}

// checkpoints reports whether j saves its work as it runs, so that an
// eviction loses at most one checkpoint interval of it.
func checkpoints(j *model.Job) bool { return j.Spec.Checkpoint.Interval > 0 }

// yields reports whether running work rj gives way to a holder of class c
// in partition p whose hold began at since: work of that class and
// partition that checkpoints and started since then. Such work may use
// held nodes (mayUseHeld) and the holder evicts it (reason HeldNodes) once
// that lets it start; work of a lower class it may evict anyway.
func yields(rj *running, c model.Class, p *partitionState, since time.Time) bool {
	return rj.class == c && rj.tenant.partition == p && checkpoints(rj.job) && !rj.job.Status.StartedAt.Before(since)
}

// heldVictim reports whether a, a holder, may evict rj from its held nodes.
func (st *state) heldVictim(a *attempt, rj *running) bool {
	h := st.holderIndex(a.job)
	if h < 0 {
		return false
	}
	x := &st.holds[h]
	return yields(rj, x.class, x.partition, x.since) && slices.ContainsFunc(rj.nodes, func(i int) bool { return st.holdOf[i] == h })
}

// heldWork is the running work that yields to holds[h] on its nodes, in
// victim order: a victim list of its holder (startVictims).
func (st *state) heldWork(h int) []*running {
	x := &st.holds[h]
	out := st.heldBuf[:0]
	for _, i := range st.held[x.first : x.first+x.n] {
		for _, rj := range st.byNode[i] {
			if yields(rj, x.class, x.partition, x.since) && !slices.Contains(out, rj) {
				out = append(out, rj)
			}
		}
	}
	slices.SortFunc(out, victimCmp)
	st.heldBuf = out
	return out
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

// holdKey appends to b what a job's shape key gains while jobs hold
// nodes: a holder may use nodes that jobs alike in every filter may not,
// and while a hold has a shadow time, so may jobs that surely end by it.
func (st *state) holdKey(b []byte, j *model.Job) []byte {
	if len(st.holds) == 0 {
		return b
	}
	if st.holderIndex(j) >= 0 {
		b = append(b, 'h')
	}
	if checkpoints(j) {
		b = append(b, 'c')
	}
	// Backfill onto held nodes asks only whether the job surely ends by
	// each holder's shadow time (mayUseHeld).
	end, ok := endsBy(j, st.now)
	for h := range st.holds {
		if x := &st.holds[h]; x.shadow > 0 {
			b = appendBit(b, ok && end.UnixNano() <= x.shadow)
		}
	}
	return b
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
		return fmt.Sprintf("; %s of %s %s kept for job %s, which has waited since %s%s",
			nodesText(x.n, ""), st.domains[g.domain].name, isAre(x.n), x.job.ID, WaitingSince(x.job).UTC().Format(time.RFC3339), x.backfillText())
	}
	return ""
}

// backfillText says what else may use a hold's nodes meanwhile: work of
// the holder's class and partition that checkpoints, while other work
// stands in the holder's way there, and, with a shadow time, work that
// surely ends by it.
func (x *holdState) backfillText() string {
	s := ""
	if x.blocked > 0 {
		s = "; work of its class that checkpoints may use them until " + x.job.ID + " can start, which then evicts it"
	}
	if x.shadow > 0 {
		s += "; work whose retry.timeout ends it by " + time.Unix(0, x.shadow).UTC().Format(time.RFC3339) + " may use them meanwhile"
	}
	return s
}

// holderNote says, for holds[h]'s detail, what it holds.
func (st *state) holderNote(h int) string {
	x := &st.holds[h]
	g := st.groups[st.groupOf[st.held[x.first]]]
	return fmt.Sprintf("; %s of %s %s kept for it, as it has waited since %s: until it starts they take only it, higher classes, spot work, other partitions' guaranteed work%s",
		nodesText(x.n, ""), st.domains[g.domain].name, isAre(x.n), WaitingSince(x.job).UTC().Format(time.RFC3339), x.backfillText())
}

// isAre is the verb for n things.
func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
