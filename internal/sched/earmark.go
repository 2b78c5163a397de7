package sched

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// earmark gives each reservation whose window lies ahead (a Start after
// now, within Config.EarmarkLead when set), in the tenancy's order, Count of the Ready nodes of its SKU and
// region that neither an active reservation holds nor an earlier one
// earmarks: the nodes it means to take at its start. Until then they take
// only work that leaves them by the start on its own or may be evicted
// then (mayPrecede: spot work, and work that will have checkpointed and be
// past its protection); reserve chooses afresh when the window opens.
//
// It prefers nodes whose work all may precede the reservation, then those
// whose other work holds the fewest milli-GPU, then the lower name, taken
// from as few clusters as it can (inFewClusters), as reserve does. Work
// that may not precede is kept off earmarked nodes, so they stay first
// from cycle to cycle and the choice is stable; it moves only to a node
// that frees up and sorts before, which holds nothing the rule forbids.
func (st *state) earmark() {
	st.earmarked = false
	// cost: the milli-GPU of work that may not precede the reservation.
	var cands, picks []reserveCand
	for idx := range st.res {
		rs := &st.res[idx]
		if rs.active || rs.Start.IsZero() || !rs.Start.After(st.now) {
			continue
		}
		if lead := st.cfg.EarmarkLead; lead > 0 && rs.Start.Sub(st.now) > lead {
			continue // too far ahead to keep nodes yet (Config.EarmarkLead)
		}
		cands = cands[:0]
		for _, g := range st.groups {
			if len(g.nodes) == 0 || g.nodes[0].SKU != rs.SKU || g.region.name != rs.Region {
				continue
			}
			for _, n := range g.nodes {
				if n.Ready && st.resOf[n.Index] < 0 && st.earOf[n.Index] < 0 {
					cands = append(cands, reserveCand{node: n.Index, cost: float64(st.staysPast(rs, n.Index))})
				}
			}
		}
		sort.Slice(cands, func(x, y int) bool {
			a, b := cands[x], cands[y]
			if a.cost != b.cost {
				return a.cost < b.cost
			}
			return st.nodes[a.node].Name < st.nodes[b.node].Name
		})
		picks = st.inFewClusters(cands, rs.Count, picks)
		for _, c := range picks {
			st.earOf[c.node] = idx
			rs.earmarks = append(rs.earmarks, c.node)
			st.earmarked = true
		}
	}
}

// staysPast is the milli-GPU that work on node i holds there and that may
// not precede rs: work of other tenants that is not spot and is not bound
// to end by rs's start. Sums of integers, so the order of the node's work
// does not matter.
func (st *state) staysPast(rs *reservationState, i int) int64 {
	var sum int64
	for _, rj := range st.byNode[i] {
		if rj.tenant.name == rs.Owner || rj.job.Spec.Priority.Class == model.ClassSpot {
			continue
		}
		if end, ok := endsBy(rj.job, rj.job.Status.StartedAt); ok && !end.After(rs.Start) {
			continue
		}
		sum += max(rj.req.TotalMilli(), 1) // CPU-only work stays too
	}
	return sum
}

// endsBy is when a job that starts (or started) at start is surely gone:
// its retry.timeout ends the attempt, and its checkpoint grace bounds the
// time its processes take to stop. A job without a timeout has no such
// bound (its Duration is an estimate, which nothing enforces).
func endsBy(j *model.Job, start time.Time) (time.Time, bool) {
	if j.Spec.Retry.Timeout <= 0 {
		return time.Time{}, false
	}
	return start.Add(j.Spec.Retry.Timeout + j.Spec.Checkpoint.GraceOrDefault()), true
}

// mayPrecede reports whether a's job may use a node that reservation rs
// earmarks: the owner's work (it is inside the reservation at its start),
// spot work (evicted when the owner needs the node), work whose
// retry.timeout ends it, started now, by rs's start, and work that gives
// the node back in time (precedesInTime).
func (st *state) mayPrecede(a *attempt, rs *reservationState) bool {
	if a.tenant.name == rs.Owner || a.class == model.ClassSpot {
		return true
	}
	return st.precedesInTime(a.job, a.tenant, rs.pool(st), rs.Start)
}

// pool is the pool of the nodes rs earmarks (its SKU's GPU model in its
// region); -1 when it earmarks none.
func (rs *reservationState) pool(st *state) int {
	if len(rs.earmarks) == 0 {
		return -1
	}
	return st.groups[st.groupOf[rs.earmarks[0]]].pool
}

// precedesInTime reports whether j of tenant t, started now, may use a
// node of pool k that a reservation starting at start earmarks: it leaves
// by the start on its own (endsBy), or it is work that checkpoints and
// would be evictable at the start having saved at least once (its
// protection, Config.MinRunTime or an elastic job's resize interval if
// longer, and one checkpoint interval end by then) of a partition that
// lends in the pool. Such work gives the node back at the start as to an
// active reservation, losing at most one interval, instead of the node
// standing idle until then; the capacity it held is then its partition's
// idle guarantee, which the owner may borrow only where the partition
// lends (under a static strategy none does, and the node stays kept).
func (st *state) precedesInTime(j *model.Job, t *tenantState, k int, start time.Time) bool {
	return st.precedesFrom(j, t, k, st.now, start)
}

// precedesFrom is precedesInTime for j started at at (reserve reads it of
// work already running, which the earmark let in by this rule).
func (st *state) precedesFrom(j *model.Job, t *tenantState, k int, at, start time.Time) bool {
	if end, ok := endsBy(j, at); ok && !end.After(start) {
		return true
	}
	every := j.Spec.Checkpoint.Interval
	if every <= 0 || at.Add(st.guard(j)+every).After(start) {
		return false
	}
	return t == nil || t.partition == nil || k < 0 || t.partition.lend[k] != 0
}

// guard is how long j is protected from preemption after it starts
// (protectedUntil).
func (st *state) guard(j *model.Job) time.Duration {
	d := max(st.cfg.MinRunTime, 0)
	if j.Spec.Elastic != nil {
		d = max(d, st.resizeInterval())
	}
	return d
}

// earmarkKey appends to b what a job's shape key gains while reservations
// earmark nodes: for each reservation that earmarks some, whether the job's
// timeout ends it, or it yields, by the reservation's start (mayPrecede's test of time;
// its owner and class are in the shape key already). Jobs alike in every
// other filter and in these answers may use the same earmarked nodes, so
// a job's exact end need not split them: keys stay few however varied the
// queue's timeouts are. t is the state of j's tenant, nil for one the
// tenancy does not define.
func (st *state) earmarkKey(b []byte, j *model.Job, t *tenantState) []byte {
	if !st.earmarked {
		return b
	}
	for i := range st.res {
		if rs := &st.res[i]; len(rs.earmarks) > 0 {
			b = appendBit(b, st.precedesInTime(j, t, rs.pool(st), rs.Start))
		}
	}
	return b
}

// appendBit appends one yes-or-no answer to a key.
func appendBit(b []byte, yes bool) []byte {
	if yes {
		return append(b, 'y')
	}
	return append(b, 'n')
}

// earmarkNote names the reservations ahead whose earmarked nodes a's job
// could run on but may not use, and how it could, for a pending job's
// detail; "" when none keeps it out.
func (st *state) earmarkNote(a *attempt) string {
	if !st.earmarked || a.res >= 0 {
		return ""
	}
	var names []string
	for i := range st.res {
		rs := &st.res[i]
		if len(rs.earmarks) == 0 || st.mayPrecede(a, rs) {
			continue
		}
		if g := st.groups[st.groupOf[rs.earmarks[0]]]; !a.job.Spec.Placement.AllowsRegion(g.region.name) || !st.capable(a, g) {
			continue
		}
		names = append(names, fmt.Sprintf("%q of %s (%d × %s in %s from %s)",
			rs.Name, rs.Owner, len(rs.earmarks), rs.SKU, rs.Region, rs.Start.UTC().Format(time.RFC3339)))
	}
	if len(names) == 0 {
		return ""
	}
	return "; nodes kept for reservation " + strings.Join(names, ", ") +
		": until the start they take only the owner's work, spot work, work whose retry.timeout ends it by then" +
		" and work that checkpoints whose protection and one checkpoint interval end by then"
}
