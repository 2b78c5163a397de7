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
	// the cheapest-first list that lets the job fit...
	fits := func(k int) bool {
		for _, c := range cands[:k] {
			st.release(c.rj)
		}
		_, r, _ := st.place(a)
		for i := k - 1; i >= 0; i-- {
			st.restore(cands[i].rj)
		}
		return r == ReasonNone
	}
	if !fits(len(cands)) {
		return nil, until
	}
	k := sort.Search(len(cands), func(k int) bool { return k > 0 && fits(k) })
	chosen := cands[:k]
	for _, c := range chosen {
		st.release(c.rj)
	}
	// ...then spare every victim, costliest first, that the job can do without.
	for i := len(chosen) - 1; i >= 0; i-- {
		st.restore(chosen[i].rj)
		if _, r, _ := st.place(a); r == ReasonNone {
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

// victims lists the running jobs a may evict, cheapest first, and the
// earliest time a protected one becomes evictable.
func (st *state) victims(a *attempt) ([]victim, time.Time) {
	var out []victim
	var until time.Time
	for _, rj := range st.running {
		if rj.evicted || rj.job == a.job {
			continue
		}
		reason := st.evictable(a, rj)
		if reason == ReasonNone {
			continue
		}
		if !st.relevant(a, rj) {
			continue
		}
		if t := st.protectedUntil(rj); t.After(st.now) {
			if until.IsZero() || t.Before(until) {
				until = t
			}
			continue
		}
		out = append(out, victim{rj: rj, reason: reason, cost: st.lostGPUSeconds(rj)})
	}
	sort.SliceStable(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.cost != y.cost {
			return x.cost < y.cost
		}
		if cx, cy := x.rj.job.Spec.Priority, y.rj.job.Spec.Priority; cx != cy {
			return cx.Less(cy)
		}
		if !x.rj.job.Status.StartedAt.Equal(y.rj.job.Status.StartedAt) {
			return x.rj.job.Status.StartedAt.After(y.rj.job.Status.StartedAt)
		}
		return x.rj.job.ID < y.rj.job.ID
	})
	return out, until
}

// evictable says why a may evict rj, or ReasonNone. Guarantees hold
// against every class: a higher class evicts spot work anywhere, other work
// only inside its own partition or where the victim's partition borrows.
func (st *state) evictable(a *attempt, rj *running) Reason {
	if st.inOwnReservation(rj) {
		return ReasonNone // an owner wholly inside its reservations is never preempted
	}
	if st.onReservationOf(rj, a.tenant.name) && rj.tenant != a.tenant {
		return ReservationOwner
	}
	p, q, k := a.tenant.partition, rj.tenant.partition, rj.pool
	borrowing := q == nil || q.used[k] > q.guar[k]
	if c := rj.job.Spec.Priority.Class; c < a.class && (c == model.ClassSpot || borrowing || p == q) {
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
// one of its nodes passes a's static filters.
func (st *state) relevant(a *attempt, rj *running) bool {
	var v verdict
	for _, i := range rj.nodes {
		if st.groupStage(a, st.groups[st.groupOf[i]], &v) >= stageBorrow && st.reservationAllows(a, i) {
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
