package sched

import (
	"fmt"
	"sort"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// victim is a running job that a's job may evict, and why.
type victim struct {
	rj     *running
	reason Reason
	cost   float64 // GPU-seconds since its last checkpoint
}

// preempt looks for the cheapest set of victims whose eviction lets a run.
// On success it releases them and returns them; the caller then places a.
// protectedUntil is set when victims exist but are all protected.
func (st *state) preempt(a *attempt) (victims []victim, protectedUntil time.Time) {
	if st.cfg.DisablePreemption || a.class == model.ClassSpot {
		return nil, time.Time{}
	}
	cands, until := st.victims(a)
	if len(cands) == 0 {
		return nil, until
	}
	// Evicting more never hurts feasibility, so find the shortest prefix of
	// the cheapest-first list that lets the job fit. released is how much
	// of the list is released now: each trial moves it to its own length.
	released := 0
	releaseTo := func(k int) {
		for ; released < k; released++ {
			st.release(cands[released].rj)
		}
		for ; released > k; released-- {
			st.restore(cands[released-1].rj)
		}
	}
	fits := func(k int) bool {
		releaseTo(k)
		return st.placeable(a)
	}
	if !fits(len(cands)) {
		releaseTo(0)
		return nil, until
	}
	k := sort.Search(len(cands), func(k int) bool { return k > 0 && fits(k) })
	releaseTo(k)
	chosen := cands[:k]
	// ...then spare every victim, costliest first, that the job can do without.
	for i := len(chosen) - 1; i >= 0; i-- {
		st.restore(chosen[i].rj)
		if st.placeable(a) {
			chosen[i].rj = nil
			continue
		}
		st.release(chosen[i].rj)
	}
	for _, c := range chosen {
		if c.rj != nil {
			victims = append(victims, c)
		}
	}
	return victims, time.Time{}
}

// restore undoes release while trying victim sets out.
func (st *state) restore(rj *running) {
	st.account(rj, +1)
	rj.evicted = false
}

// victims lists the running jobs a may evict, cheapest first (victimLess),
// and the earliest time a protected one becomes evictable.
func (st *state) victims(a *attempt) ([]victim, time.Time) {
	var out []victim
	var until time.Time
	if st.groupPass == nil {
		st.groupPass = make([]uint64, len(st.groups))
	}
	st.stamp++
	stamp := st.stamp
	var v verdict
	for gi, g := range st.groups {
		if st.groupStage(a, g, &v) >= stageBorrow {
			st.groupPass[gi] = stamp
		}
	}
	// Work of a's class or above is evictable only to reclaim a guarantee
	// or to clear a reservation of a's tenant; when a's partition reclaims
	// nothing, only lower classes and work on reserved nodes are read.
	reclaim := st.mayReclaim(a)
	for c, l := range st.byClass {
		if model.Class(c) >= a.class && !reclaim {
			continue
		}
		for _, rj := range l {
			if !rj.evicted && rj.job != a.job {
				st.considerVictim(a, rj, stamp, &out, &until)
			}
		}
	}
	if !reclaim {
		for _, rj := range st.onReserved {
			if rj.class >= a.class && !rj.evicted && rj.job != a.job {
				st.considerVictim(a, rj, stamp, &out, &until)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return victimLess(out[i].rj, out[j].rj) })
	return out, until
}

// considerVictim adds rj to out when a may evict it now, and lowers until
// when a may evict it later.
func (st *state) considerVictim(a *attempt, rj *running, stamp uint64, out *[]victim, until *time.Time) {
	{
		reason := st.evictable(a, rj)
		if reason == ReasonNone {
			return
		}
		if !st.relevant(a, rj, stamp) {
			return
		}
		if t := st.protectedUntil(rj); t.After(st.now) {
			if until.IsZero() || t.Before(*until) {
				*until = t
			}
			return
		}
		*out = append(*out, victim{rj: rj, reason: reason, cost: rj.cost})
	}
}

// mayReclaim reports whether a's partition is below its guarantee, with
// a's job, in some pool: only then may a evict work of its own class or
// above that is not on a reservation (evictable's ReclaimGuarantee).
func (st *state) mayReclaim(a *attempt) bool {
	p := a.tenant.partition
	if p == nil {
		return false
	}
	for k, g := range p.guar {
		if p.used[k]+a.total <= g {
			return true
		}
	}
	return false
}

// victimLess orders running work cheapest to evict first: the fewest
// GPU-seconds lost (fixed for the cycle, so computed once per job), then
// the lower priority, then the later start, then the job ID, which makes
// the order total.
func victimLess(x, y *running) bool {
	if x.cost != y.cost {
		return x.cost < y.cost
	}
	if cx, cy := x.job.Spec.Priority, y.job.Spec.Priority; cx != cy {
		return cx.Less(cy)
	}
	if !x.job.Status.StartedAt.Equal(y.job.Status.StartedAt) {
		return x.job.Status.StartedAt.After(y.job.Status.StartedAt)
	}
	return x.job.ID < y.job.ID
}

// evictable says why a may evict rj, or ReasonNone. Guarantees hold
// against every class: a higher class evicts spot work anywhere, other work
// only inside its own partition or where the victim's partition borrows.
func (st *state) evictable(a *attempt, rj *running) Reason {
	if rj.onReserved { // the node loops only for work that touches a reservation
		if st.inOwnReservation(rj) {
			return ReasonNone // an owner wholly inside its reservations is never preempted
		}
		if st.onReservationOf(rj, a.tenant.name) && rj.tenant != a.tenant {
			return ReservationOwner
		}
	}
	p, q, k := a.tenant.partition, rj.tenant.partition, rj.pool
	borrowing := q == nil || q.used[k] > q.guar[k]
	if c := rj.class; c < a.class && (c == model.ClassSpot || borrowing || p == q) {
		return HigherClass
	}
	// Reclaim: a's partition is below its guarantee in the victim's pool and
	// stays within it with the job, and the victim's partition borrows there.
	if p == nil || p == q || !borrowing || p.used[k]+a.total > p.guar[k] {
		return ReasonNone
	}
	return ReclaimGuarantee
}

// relevant reports whether evicting rj frees capacity a could use: at least
// one of its nodes is in a group whose filters admit a (victims marked
// those groups with stamp) and a may use it.
func (st *state) relevant(a *attempt, rj *running, stamp uint64) bool {
	for _, i := range rj.nodes {
		if st.groupPass[st.groupOf[i]] == stamp && st.reservationAllows(a, i) {
			return true
		}
	}
	return false
}

// inOwnReservation reports whether every instance of rj runs on a node of
// a reservation its own tenant holds. Only such work is never preempted:
// it uses nothing but capacity set aside for its owner. A gang with one
// instance outside holds shared capacity too, and being all or nothing it
// is evicted whole when that capacity is owed to someone.
func (st *state) inOwnReservation(rj *running) bool {
	for _, i := range rj.nodes {
		if r := st.resOf[i]; r < 0 || st.res[r].Owner != rj.tenant.name {
			return false
		}
	}
	return true
}

func (st *state) onReservationOf(rj *running, tenant string) bool {
	for _, i := range rj.nodes {
		if r := st.resOf[i]; r >= 0 && st.res[r].Owner == tenant {
			return true
		}
	}
	return false
}

// protectedUntil is when a job may be preempted: Config.MinRunTime after
// its current attempt started. A resumed job starts a new attempt, so
// preemption cannot loop between two jobs.
func (st *state) protectedUntil(rj *running) time.Time {
	if st.cfg.MinRunTime <= 0 {
		return time.Time{}
	}
	return rj.job.Status.StartedAt.Add(st.cfg.MinRunTime)
}

// lostGPUSeconds is the work a job would lose if evicted now: its GPUs
// times the time since its last checkpoint (or its start). A job bound in
// this cycle loses nothing.
func (st *state) lostGPUSeconds(rj *running) float64 {
	if rj.fresh {
		return 0
	}
	since := rj.job.Status.StartedAt
	if c := rj.job.Status.LastCheckpoint; c.After(since) {
		since = c
	}
	d := st.now.Sub(since).Seconds()
	if d < 0 {
		d = 0
	}
	return d * float64(rj.req.TotalMilli()*int64(len(rj.nodes))) / model.MilliPerGPU
}

func preemptionDetail(v victim, a *attempt) string {
	return fmt.Sprintf("%s (%s) needs %s; %.0f GPU-seconds since the last checkpoint are lost",
		a.job.ID, a.job.Spec.Priority, gpusText(a.total), v.cost)
}
