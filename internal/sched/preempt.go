package sched

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
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
//
// When protection is what stands in the way of a gang, st.protectedOn
// becomes the nodes of the victims a would evict were none protected
// (found by a second search, then restored), so that the nodes a waits
// for are the ones it will take: its protected victims' nodes alone let
// the rest of the set go to newcomers. On the week a 2-node gang waited 12 minutes
// for two spot jobs' protection; the moment one ended, the node it freed
// was no longer kept, other work took it, and the gang waited for
// another pair, for as long as spot kept arriving (internal-ai's
// guarantee-violation minutes, BENCHMARKS.md).
func (st *state) preempt(a *attempt) (victims []victim, protectedUntil time.Time) {
	if st.cfg.DisablePreemption || a.class == model.ClassSpot {
		return nil, time.Time{}
	}
	st.coldBegin(a)
	defer st.coldEnd()
	victims, protectedUntil = st.preemptTrials(a)
	if len(victims) > 0 || protectedUntil.IsZero() || a.count == 1 {
		// One instance's victims share its node, which keep holds whole.
		return victims, protectedUntil
	}
	protected, missAll := slices.Clone(st.protectedOn), st.missAll
	st.unguarded = true
	would, _ := st.preemptTrials(a)
	st.unguarded = false
	st.protectedOn, st.missAll = append(st.protectedOn[:0], protected...), missAll
	if len(would) > 0 {
		st.protectedOn = st.protectedOn[:0]
		for _, v := range would {
			st.moveVictim(v.rj, false)
			st.protectedOn = append(st.protectedOn, v.rj.nodes...)
		}
	}
	return nil, protectedUntil
}

// preemptTrials is preempt's search, with cold nodes' moves held back.
func (st *state) preemptTrials(a *attempt) (victims []victim, protectedUntil time.Time) {
	vs := &st.victims
	st.startVictims(a)
	// Most jobs that get here find nobody they may evict, or too few to
	// make room: reading the lists in no order, without merging them,
	// answers those before the stream is read in order.
	found := st.scanVictims()
	if found == 0 {
		st.missAll = true // nobody to evict, whatever the job asks
		return nil, vs.until
	}
	bounded := false // the whole list is short and could make room
	if found <= roomShortList {
		st.startRoom(a)
		if !st.roomCouldHold(a, vs.scan) {
			st.missAll = st.roomCouldNotHoldAny(a, vs.scan)
			return nil, vs.until
		}
		bounded = true
	}
	if !st.nextVictim() {
		return nil, vs.until
	}
	// have reads the cheapest-first list down to its k-th victim, when
	// there are that many, and says how far it got.
	have := func(k int) int {
		for len(vs.out) < k && st.nextVictim() {
		}
		return min(k, len(vs.out))
	}
	// Evicting more never hurts feasibility, so find the shortest prefix of
	// the cheapest-first list that lets the job fit. released is how much
	// of the list is released now: each trial moves it to its own length.
	// A trial whose victims leave no room for the job fails without
	// running the filters (roomFor).
	if !bounded {
		st.startRoom(a)
	}
	released := 0
	releaseTo := func(k int) {
		for ; released < k; released++ {
			st.moveVictim(vs.out[released].rj, true)
		}
		for ; released > k; released-- {
			st.moveVictim(vs.out[released-1].rj, false)
		}
	}
	fits := func(k int) bool {
		releaseTo(k)
		return st.roomFor(a) && st.placeable(a)
	}
	// A short list is bounded before anything is released: when even all
	// of it could not let the job in, no trial is made (the first would
	// release it all, and fail).
	if have(roomShortList+1) <= roomShortList && !bounded && !st.roomCouldHold(a, vs.out) {
		return nil, vs.until
	}
	var k int
	if st.trialsMonotone(a) {
		// Releasing one more victim never turns a fit into a misfit, so the
		// shortest prefix is the first that fits: it is no shorter than
		// the first that leaves room, and found by doubling, then halving,
		// from there. Only the list down to it is read and released.
		// Most searches are answered by the victims of the first domain
		// that gets room, without it (onedomain.go).
		if victims, ok := st.preemptInOneDomain(a); ok {
			return victims, time.Time{}
		}
		for !st.roomFor(a) && have(released+1) > released {
			releaseTo(released + 1)
		}
		if !st.roomFor(a) {
			releaseTo(0)
			return nil, vs.until
		}
		lo, hi := max(0, released-1), -1 // the prefix of length lo does not fit (none of length 0 does)
		for step := 1; hi < 0; step *= 2 {
			switch k := have(lo + step); {
			case k > lo && fits(k):
				hi = k
			case vs.done && k == len(vs.out):
				releaseTo(0)
				return nil, vs.until
			default:
				lo = k
			}
		}
		for hi-lo > 1 {
			if m := lo + (hi-lo)/2; fits(m) {
				hi = m
			} else {
				lo = m
			}
		}
		k = hi
	} else {
		n := have(math.MaxInt)
		if !fits(n) {
			releaseTo(0)
			return nil, vs.until
		}
		k = sort.Search(n, func(k int) bool { return k > 0 && fits(k) })
	}
	releaseTo(k)
	chosen := vs.out[:k]
	// ...then spare every victim, costliest first, that the job can do without.
	fitsNow := func() bool { return st.roomFor(a) && st.placeable(a) }
	if st.trialsMonotone(a) && !spareOneByOne {
		st.spareInBlocks(chosen, fitsNow)
	} else {
		st.spareEach(chosen, fitsNow)
	}
	for _, c := range chosen {
		if c.rj != nil {
			victims = append(victims, c)
		}
	}
	return victims, time.Time{}
}

// spareOneByOne turns spareInBlocks off, for the test that compares the two.
var spareOneByOne = false

// spareInBlocks spares, costliest first, every released victim of chosen
// that the job can do without (fits tells), as restoring them one at a
// time and keeping each restored when the job still fits does
// (spareEach), and sets the spared ones' rj to nil.
// When trials are monotone, restoring a run of victims at once still fits
// exactly when each of them, restored in turn, would have: restoring more
// never turns a misfit into a fit, and the run restored whole is the state
// the last of those trials sees. So a run that fits is spared whole, with
// one trial, and the next run is twice as long. In one that does not, the
// longest part from its costliest end that fits is found by halving (the
// state before the run fits: every step leaves one that does), spared, and
// the victim after it kept; the next run is one victim. On the busy bench's
// first cycle (12,455 preemptions) this makes 105,021 trials and 3.68 M
// victim moves where one trial per victim made 2.88 M and 2.89 M.
func (st *state) spareInBlocks(chosen []victim, fits func() bool) {
	restored := 0 // of the run, from its costliest end
	// restoreTo moves the run starting at i to its first n restored.
	restoreTo := func(i, n int) {
		for ; restored < n; restored++ {
			st.moveVictim(chosen[i-restored].rj, false)
		}
		for ; restored > n; restored-- {
			st.moveVictim(chosen[i-restored+1].rj, true)
		}
	}
	run := 1
	for i := len(chosen) - 1; i >= 0; {
		run, restored = min(run, i+1), 0
		restoreTo(i, run)
		lo := run
		if !fits() {
			hi := run // lo restored fit, hi do not
			for lo = 0; hi-lo > 1; {
				m := lo + (hi-lo)/2
				restoreTo(i, m)
				if fits() {
					lo = m
				} else {
					hi = m
				}
			}
			restoreTo(i, lo)
		}
		for j := i; j > i-lo; j-- {
			chosen[j].rj = nil
		}
		if lo == run {
			i -= run
			run *= 2
			continue
		}
		i -= lo + 1 // the victim after the part that fits is kept
		run = 1
	}
}

// spareEach spares, costliest first, every released victim of chosen
// that the job can do without (fits tells), one trial each, and sets the
// spared ones' rj to nil.
func (st *state) spareEach(chosen []victim, fits func() bool) {
	for i := len(chosen) - 1; i >= 0; i-- {
		st.moveVictim(chosen[i].rj, false)
		if fits() {
			chosen[i].rj = nil
			continue
		}
		st.moveVictim(chosen[i].rj, true)
	}
}

// restore undoes release while trying victim sets out.
func (st *state) restore(rj *running) {
	st.account(rj, +1)
	rj.evicted = false
}

// victimStream reads, for one preemption, the running work a may evict,
// cheapest first (victimLess), and only as far down that order as preempt
// asks. It merges the lists of running work that indexRunning keeps in
// that order: the buckets of work off reserved nodes whose class,
// partition and pool let a evict them where a's filters admit the pool,
// and the work on reserved nodes; with them its own tenant's work (for a
// better value), for a job that names a reservation the owner's work
// wholly inside reservations (yieldsToNamed), and, for a holder, the work
// on its nodes that yields to it (heldWork). A job on two lists is read
// once (running.read). Who may be evicted is decided on the state before
// the preemption released anyone (evictable reads
// partitionState.usedBefore), as if the whole list were drawn up first.
type victimStream struct {
	a       *attempt
	reclaim bool
	stamp   uint64       // groupPass mark of the groups a's filters admit
	outRead uint64       // running.read mark of the jobs read into out
	lists   [][]*running // each in victimLess order
	heads   []int        // heap of the lists not read to the end, by their next entry
	pos     []int        // by list: the next to read
	rank    []int32      // by list: its next entry's rank, read once for the heap's comparisons
	out     []victim     // read so far, cheapest first
	scan    []victim     // read by scanVictims, in no order
	done    bool         // every list is read
	until   time.Time    // the earliest time protected work read so far becomes evictable
	poolOK  []bool       // by pool: some group of it passed a's group filters
}

// startVictims starts reading the victims of a.
func (st *state) startVictims(a *attempt) {
	vs := &st.victims
	vs.a, vs.out, vs.done, vs.until = a, vs.out[:0], false, time.Time{}
	st.protectedOn = st.protectedOn[:0]
	vs.lists = vs.lists[:0]
	if st.groupPass == nil {
		st.groupPass = make([]uint64, len(st.groups))
	}
	st.stamp++
	vs.stamp = st.stamp
	st.stamp++
	vs.outRead = st.stamp
	vs.poolOK = append(vs.poolOK[:0], make([]bool, len(st.pools))...)
	var v verdict
	for gi, g := range st.groups {
		// A pool whose free capacity others keep for themselves (their idle
		// guarantees) may still take a once it evicts work there: whether
		// the victims free enough is for the trials (roomCouldHold, then
		// placeable) to find out. a's own borrowing limit stays.
		if s := st.groupStage(a, g, &v); s >= stageBorrow || (s == stageQuota && st.mayFreeLendable(a, g.pool)) {
			st.groupPass[gi] = vs.stamp
			vs.poolOK[g.pool] = true
		}
	}
	for _, p := range st.partitionList {
		p.usedBefore = append(p.usedBefore[:0], p.used...)
	}
	// Work of a's class or above is evictable only to reclaim a guarantee
	// or to clear a reservation of a's tenant; when a's partition reclaims
	// nothing, only lower classes and work on reserved nodes are read.
	vs.reclaim = st.mayReclaim(a)
	for _, b := range st.runBuckets {
		if len(b.work) == 0 || (!vs.poolOK[b.pool] && !b.spread) || (b.class >= a.class && !vs.reclaim) {
			continue
		}
		// Whether a may evict work off reserved nodes depends on its
		// bucket alone (evictable).
		if st.evictableOff(a, b.class, b.partition, b.pool) == ReasonNone {
			continue
		}
		vs.lists = append(vs.lists, b.work)
	}
	if len(st.onReserved) > 0 {
		vs.lists = append(vs.lists, st.onReserved)
	}
	if a.res >= 0 && len(st.ownReserved) > 0 {
		vs.lists = append(vs.lists, st.ownReserved)
	}
	if own := st.ownVictims(a); len(own) > 0 {
		vs.lists = append(vs.lists, own)
	}
	if h := st.holderIndex(a.job); h >= 0 {
		if held := st.heldWork(h); len(held) > 0 {
			vs.lists = append(vs.lists, held)
		}
	}
	vs.pos = append(vs.pos[:0], make([]int, len(vs.lists))...)
	vs.rank = vs.rank[:0]
	vs.heads = vs.heads[:0]
	for i, l := range vs.lists {
		vs.heads = append(vs.heads, i)
		vs.rank = append(vs.rank, l[0].rank)
	}
	for i := len(vs.heads)/2 - 1; i >= 0; i-- {
		vs.down(i)
	}
}

func (vs *victimStream) head(h int) *running {
	l := vs.heads[h]
	return vs.lists[l][vs.pos[l]]
}

// less reports whether the next entry of the list at heap position h is
// cheaper than that at position k: victimLess, by the ranks kept beside
// the heap where both have one.
func (vs *victimStream) less(h, k int) bool {
	if x, y := vs.rank[vs.heads[h]], vs.rank[vs.heads[k]]; x > 0 && y > 0 {
		return x < y
	}
	return victimLess(vs.head(h), vs.head(k))
}

// down restores the heap order below position i of heads.
func (vs *victimStream) down(i int) {
	n := len(vs.heads)
	for {
		m, l, r := i, 2*i+1, 2*i+2
		if l < n && vs.less(l, m) {
			m = l
		}
		if r < n && vs.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		vs.heads[i], vs.heads[m] = vs.heads[m], vs.heads[i]
		i = m
	}
}

// nextVictim reads the list on to the next victim and appends it to
// victims.out, or reports that none is left.
func (st *state) nextVictim() bool {
	vs := &st.victims
	a := vs.a
	for len(vs.heads) > 0 {
		rj := vs.head(0)
		if l := vs.heads[0]; vs.pos[l]+1 < len(vs.lists[l]) {
			vs.pos[l]++
			vs.rank[l] = vs.lists[l][vs.pos[l]].rank
		} else {
			last := len(vs.heads) - 1
			vs.heads[0] = vs.heads[last]
			vs.heads = vs.heads[:last]
		}
		vs.down(0)
		if rj.evicted || rj.job == a.job || rj.read == vs.outRead {
			continue
		}
		rj.read = vs.outRead
		if rj.onReserved && !vs.readsReserved(rj) {
			continue
		}
		if st.considerVictim(a, rj, vs.stamp, &vs.out, &vs.until) {
			return true
		}
	}
	vs.done = true
	return false
}

// scanVictims reads the lists startVictims chose in no order, into
// victims.scan, as far as the victim after the roomShortList-th, and
// returns how many it read. When there are no more, it set victims.until
// as reading the stream in order to its end would. The stream itself is
// left unread.
func (st *state) scanVictims() int {
	vs := &st.victims
	a := vs.a
	var until time.Time
	vs.scan = vs.scan[:0]
	st.stamp++
	read := st.stamp
	for _, l := range vs.lists {
		for _, rj := range l {
			if rj.evicted || rj.job == a.job || rj.read == read || (rj.onReserved && !vs.readsReserved(rj)) {
				continue
			}
			rj.read = read
			if st.considerVictim(a, rj, vs.stamp, &vs.scan, &until) && len(vs.scan) > roomShortList {
				return len(vs.scan)
			}
		}
	}
	vs.until = until
	return len(vs.scan)
}

// readsReserved reports whether the victim list includes rj, running on a
// reserved node: work of a lower class always, work of a's class or above
// when a's partition reclaims nothing (evictable then looks for a
// reservation of a's tenant).
func (vs *victimStream) readsReserved(rj *running) bool {
	inClass := rj.class >= model.ClassSpot && rj.class <= model.ClassReserved
	if vs.reclaim {
		return inClass
	}
	return (inClass && rj.class < vs.a.class) || rj.class >= vs.a.class
}

// considerVictim adds rj to out and reports true when a may evict it now,
// and lowers until when a may evict it later.
func (st *state) considerVictim(a *attempt, rj *running, stamp uint64, out *[]victim, until *time.Time) bool {
	if rj.resized {
		return false // its next attempt is in the plan already
	}
	reason := st.evictable(a, rj)
	if reason == ReasonNone {
		return false
	}
	if !st.relevant(a, rj, stamp) {
		return false
	}
	if t := rj.guarded; !t.IsZero() && !st.unguarded && !st.reclaims(a, rj, reason) {
		if until.IsZero() || t.Before(*until) {
			*until = t
		}
		st.protectedOn = append(st.protectedOn, rj.nodes...)
		return false
	}
	*out = append(*out, victim{rj: rj, reason: reason, cost: rj.cost})
	return true
}

// reclaims reports whether a, evicting rj for reason, takes back its
// partition's guarantee from work that is not protected (MinRunTime)
// from it: a's partition holds less than its guarantee in rj's pool, rj
// runs outside its own tenant's reservations, and rj is spot work, or
// borrows there (ReclaimGuarantee) and started after a was submitted.
// Spot work runs on capacity others are owed, sold as reclaimable at any
// time (spot instances of the public clouds get 30 seconds' notice), and
// a guarantee kept waiting for it is not kept. Borrowing work that
// started while a waited took capacity a was owed, knowingly; borrowing
// work that was there first keeps its protection: the Philly replay's
// jobs queued 24 % longer on average (3,118 s against 2,516 s,
// TestReplayFloors) when it lost it too, thrown away as soon as it
// started. No loop follows: a's work, within its partition's guarantee,
// is not evicted for spot or borrowing work.
func (st *state) reclaims(a *attempt, rj *running, reason Reason) bool {
	p, k := a.tenant.partition, rj.pool
	if p == nil || p == rj.tenant.partition || p.usedBefore[k] >= p.guar[k] || (rj.onReserved && st.inOwnReservation(rj)) {
		return false
	}
	return rj.class == model.ClassSpot ||
		(reason == ReclaimGuarantee && rj.job.Status.StartedAt.After(a.job.Status.SubmittedAt))
}

// mayFreeLendable reports whether evictions could give a, which is beyond
// its partition's guarantee in pool k and kept out by what others keep
// there, room it may borrow: a's borrowing limit leaves room, and the pool's
// free capacity with all the work of a lower class (the only work a may
// evict there, evictableOff) covers what others keep and a. A job naming a
// reservation, a holder, and one that may evict its own tenant's work for
// a better value have more victims than that: for them only the limit
// counts.
func (st *state) mayFreeLendable(a *attempt, k int) bool {
	if st.overBorrowLimit(a.tenant.partition, k, a.total) {
		return false
	}
	if a.res >= 0 || st.cfg.PriorityGap > 0 || st.holderIndex(a.job) >= 0 {
		return true
	}
	free := st.poolFree[k]
	for c := model.ClassSpot; c < a.class; c++ {
		free += st.classMilli[k][c]
	}
	return free-st.protected(k, a.tenant.partition) >= a.total
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
	if x.rank > 0 && y.rank > 0 {
		return x.rank < y.rank // begin sorted them by victimCmp
	}
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

// victimCmp is victimLess as a comparison: negative when x is cheaper.
func victimCmp(x, y *running) int {
	switch {
	case x.cost < y.cost:
		return -1
	case x.cost > y.cost:
		return 1
	}
	if cx, cy := x.job.Spec.Priority, y.job.Spec.Priority; cx != cy {
		if cx.Less(cy) {
			return -1
		}
		return 1
	}
	if sx, sy := x.job.Status.StartedAt, y.job.Status.StartedAt; !sx.Equal(sy) {
		if sx.After(sy) {
			return -1
		}
		return 1
	}
	return strings.Compare(x.job.ID, y.job.ID)
}

// evictable says why a may evict rj, or ReasonNone, on the partitions' use
// before the current preemption (startVictims). Guarantees hold
// against every class: a higher class evicts spot work anywhere, other work
// only inside its own partition or where the victim's partition borrows.
func (st *state) evictable(a *attempt, rj *running) Reason {
	if st.betterPriority(a, rj) {
		return BetterPriority // its own tenant's, wherever it runs (priority.go)
	}
	if st.heldVictim(a, rj) {
		return HeldNodes // started on a's held nodes after its hold began (hold.go)
	}
	if rj.onReserved { // the node loops only for work that touches a reservation
		if st.yieldsToNamed(a, rj) {
			return ReservationOwner
		}
		if st.inOwnReservation(rj) {
			return ReasonNone // otherwise an owner wholly inside its reservations stays
		}
		if st.onReservationOf(rj, a.tenant.name) && rj.tenant != a.tenant {
			return ReservationOwner
		}
	}
	if rj.cpuOnGPU {
		if a.total == 0 {
			return ReasonNone // only work that needs the GPUs evicts it
		}
		return GPUWorkFirst
	}
	return st.evictableOff(a, rj.class, rj.tenant.partition, rj.pool)
}

// evictableOff is evictable for work of class c of partition q (nil for
// none) in pool k, with no instance on a reserved node.
func (st *state) evictableOff(a *attempt, c model.Class, q *partitionState, k int) Reason {
	p := a.tenant.partition
	borrowing := q == nil || q.usedBefore[k] > q.guar[k]
	if c < a.class && (c == model.ClassSpot || borrowing || p == q) {
		return HigherClass
	}
	// Reclaim: a's partition is below its guarantee in the victim's pool and
	// stays within it with the job, and the victim's partition borrows there.
	if p == nil || p == q || !borrowing || p.usedBefore[k]+a.total > p.guar[k] {
		return ReasonNone
	}
	return ReclaimGuarantee
}

// relevant reports whether evicting rj frees capacity a could use: at least
// one of its nodes is in a group whose filters admit a (victims marked
// those groups with stamp) and a may use it.
func (st *state) relevant(a *attempt, rj *running, stamp uint64) bool {
	for _, i := range rj.nodes {
		if st.groupPass[st.groupOf[i]] == stamp && st.mayUse(a, i) {
			return true
		}
	}
	return false
}

// inOwnReservation reports whether every instance of rj runs on a node of
// a reservation its own tenant holds. Only its own tenant's work that
// names the reservation may evict such work (yieldsToNamed): it uses
// nothing but capacity set aside for its owner. A gang with one instance
// outside holds shared capacity too, and being all or nothing it is
// evicted whole when that capacity is owed to someone.
func (st *state) inOwnReservation(rj *running) bool {
	for _, i := range rj.nodes {
		if r := st.resOf[i]; r < 0 || st.res[r].Owner != rj.tenant.name {
			return false
		}
	}
	return true
}

// yieldsToNamed reports whether rj is the owner's own work that does not
// name the reservation a's job names, of a's class or below, with an
// instance on that reservation's nodes. The owner's other work may use its
// reservation, but the work that names it comes first there: else a batch
// job the owner started on an earmarked node the day before would keep
// the reservation's own work out for as long as it runs.
func (st *state) yieldsToNamed(a *attempt, rj *running) bool {
	if a.res < 0 || rj.tenant != a.tenant || rj.class > a.class ||
		rj.job.Spec.Placement.Reservation == st.res[a.res].Name {
		return false
	}
	for _, i := range rj.nodes {
		if st.resOf[i] == a.res {
			return true
		}
	}
	return false
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
//
// An elastic job is protected for the resize interval too, if longer: a
// shrink is a resize, and no job is resized more often than that (an
// eviction would lose as much and leave nothing running).
func (st *state) protectedUntil(rj *running) time.Time {
	d := st.guard(rj.job)
	if d <= 0 {
		return time.Time{}
	}
	return rj.job.Status.StartedAt.Add(d)
}

// lostGPUSeconds is the work a job would lose if evicted now: its GPUs
// times the time since its last checkpoint (or its start). A job bound in
// this cycle loses nothing.
func (st *state) lostGPUSeconds(rj *running) float64 {
	if rj.fresh {
		return 0
	}
	d := st.now.Sub(rj.since).Seconds()
	if d < 0 {
		d = 0
	}
	return d * float64(rj.req.TotalMilli()*int64(len(rj.nodes))) / model.MilliPerGPU
}

// lastSaved is when j last saved its work: its last checkpoint, or its
// start when it has none since.
func lastSaved(j *model.Job) time.Time {
	since := j.Status.StartedAt
	if c := j.Status.LastCheckpoint; c.After(since) {
		since = c
	}
	return since
}

func preemptionDetail(v victim, a *attempt) string {
	if v.reason == GPUWorkFirst {
		return fmt.Sprintf("%s (%s) needs %s of the GPU node(s) this CPU-only work ran on (%s: GPU work first)",
			a.job.ID, a.job.Spec.Priority, gpusText(a.total), GPUWorkFirst)
	}
	return fmt.Sprintf("%s (%s) needs %s; %.0f GPU-seconds since the last checkpoint are lost",
		a.job.ID, a.job.Spec.Priority, gpusText(a.total), v.cost)
}

// roomShortList is the longest victim list that preempt bounds before
// trying it (roomCouldHold): a long one costs more to bound than the
// trials cost that find the prefix, when one exists.
const roomShortList = 256

// trialsMonotone reports whether, for a, releasing one
// more victim can never turn a placeable job into an unplaceable one, so
// preempt may take the first prefix that fits for the shortest.
//
// Releasing frees capacity and power and lowers quota and partition use,
// and each filter only gains from that, with three exceptions: a victim on
// a NotReady node gives back partition use without free capacity, which can
// lower what other partitions lend; a gang's slots are counted node after
// node against a power cap, so where a capped rack mixes nodes of different
// draw, or a region cap spans several groups, freeing one node can take
// power another would have used; and a Scorer that chooses GPUs itself may
// leave a gang short of slots it counted.
func (st *state) trialsMonotone(a *attempt) bool {
	return !st.workOnNotReady && (a.count == 1 || st.room.simple)
}
