package sched

import (
	"slices"
	"sort"

	"github.com/allot-dev/allot/internal/model"
)

// Preemption for a better priority value (Config.PriorityGap).
//
// Off by default, the core orders a tenant's queue by priority value but
// never evicts for it. With a positive gap, a queued job may evict running
// work that shares its tenant and class and whose value is at least the gap
// below its own. The rest of step 4 is unchanged: protected work
// (MinRunTime) waits, and the victims are the cheapest set in lost
// GPU-seconds since their last checkpoint. The tenant gives way only to
// itself, so its work wholly inside its own reservations, never evicted by
// anyone else, is evicted for a better value of its own.
//
// Such work is read from a list per tenant and class (ownWork), in victim
// order, kept beside the other victim lists. No work is read twice: work
// off reserved nodes is also in the bucket of its class and partition,
// which a job of that class and partition never reads (evictableOff gives
// none of it), and work on reserved nodes outside its own reservations is
// on the onReserved list instead of this one.
//
// A job's verdict in a cycle is kept for the later jobs of its shape
// (scheduleJob's failed), which holds here too: those are of its tenant
// and class, served after it, so of no better value, and may evict no
// more than it could.

// ownKey names one tenant's running work of one priority class.
type ownKey struct {
	tenant *tenantState
	class  model.Class
}

// betterPriority reports whether a may evict rj for its priority value.
func (st *state) betterPriority(a *attempt, rj *running) bool {
	gap := st.cfg.PriorityGap
	if gap <= 0 || rj.tenant != a.tenant || rj.class != a.class {
		return false
	}
	av, rv := a.job.Spec.Priority.Value, rj.job.Spec.Priority.Value
	// The difference in uint64, so that no pair of values overflows.
	return av > rv && uint64(av)-uint64(rv) >= uint64(gap)
}

// fileOwn files rj on its tenant's and class's list when preemption for a
// better value is on and no other victim list holds it (see above); with
// sorted set in victimLess order, else appended for begin's sorted pass.
func (st *state) fileOwn(rj *running, sorted bool) {
	if st.cfg.PriorityGap <= 0 || (rj.onReserved && !st.inOwnReservation(rj)) {
		return
	}
	if st.ownWork == nil {
		st.ownWork = map[ownKey]*[]*running{}
	}
	k := ownKey{rj.tenant, rj.class}
	l := st.ownWork[k]
	if l == nil {
		l = new([]*running)
		st.ownWork[k] = l
	}
	if sorted {
		at := sort.Search(len(*l), func(i int) bool { return victimLess(rj, (*l)[i]) })
		*l = slices.Insert(*l, at, rj)
	} else {
		*l = append(*l, rj)
	}
}

// unfileOwn takes rj, evicted for good, off its tenant's list.
func (st *state) unfileOwn(rj *running) {
	k := ownKey{rj.tenant, rj.class}
	l := st.ownWork[k]
	if l == nil {
		return
	}
	at := sort.Search(len(*l), func(i int) bool { return !victimLess((*l)[i], rj) })
	if at < len(*l) && (*l)[at] == rj {
		*l = slices.Delete(*l, at, at+1)
	}
}

// clearOwn empties every list before begin files the running work again.
func (st *state) clearOwn() {
	for _, l := range st.ownWork {
		clear(*l)
		*l = (*l)[:0]
	}
}

// ownVictims is the list of a's tenant and class, when a may evict for a
// better value and there is any.
func (st *state) ownVictims(a *attempt) []*running {
	if st.cfg.PriorityGap <= 0 {
		return nil
	}
	if l := st.ownWork[ownKey{a.tenant, a.class}]; l != nil {
		return *l
	}
	return nil
}
