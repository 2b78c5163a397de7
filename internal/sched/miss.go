package sched

import (
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Verdicts shared across CPU and memory. A long queue's jobs differ in the
// CPU and memory they ask far more often than in anything else (the busy
// bench's 50,000 queued jobs have 30,276 shape keys, 2,929 without CPU and
// memory), and the shape key's cache (cycle's failed) answers only jobs
// that ask exactly alike. Two more answers need no exact match; both are
// kept by missKey, the shape key with CPU and memory replaced by the SKUs
// they fit, so that jobs of one missKey pass the same group filters:
//
//   - blind: a single instance that found no node for a reason that no
//     node's free CPU or memory took part in (cpuBlind: no node had its
//     GPUs free, or the filters stopped before free capacity) fails the
//     same way, with the same detail, whatever CPU and memory it asks;
//   - misses: a preemption that found no victims to make room. Which work
//     a job may evict, where, and what protects it are decided by its
//     class, tenant, GPUs and placement rules; and asking more never
//     helps (victims that make room for a job make room for one that asks
//     no more CPU and memory). So a job that asks at least the CPU and the
//     memory of one that missed misses too, and learns it without reading
//     the victims again.
//
// Both are dropped like the shape key's verdicts when a preemption frees
// capacity in their groups (dropMisses), and neither changes a decision:
// the busy bench's binds and preemptions are the same with and without
// them (its decisions_sha256), and miss_test.go holds worlds where
// sharing one more widely would.

// preemptMiss is a preemption that found no victims to make room: for a
// job asking cpu and mem, whose victims were protected until then (zero
// for none), with the nodes of those victims (protectedOn) for keep.
type preemptMiss struct {
	cpu, mem    int64
	until       time.Time
	protectedOn []int
	groups      []uint64  // the shape's groups (shapeGroups): a preemption there drops the miss
	submitted   time.Time // of the job that missed: it answers jobs submitted no earlier (failure.submitted)
}

// preemptOrMiss is preempt, answered from the cycle's misses when a job of
// a's shape asking no more CPU and memory found no victims: then victims is
// nil, until is that job's, st.protectedOn its protected nodes, and missed
// is true. universal reports that a miss holds whatever CPU and memory a
// job of a's missKey asks (a job that may not preempt misses too).
func (st *state) preemptOrMiss(a *attempt) (victims []victim, until time.Time, missed, universal bool) {
	if st.cfg.DisablePreemption || a.class == model.ClassSpot {
		return nil, time.Time{}, false, true
	}
	r := &a.job.Spec.Resources
	for _, m := range st.misses[string(st.missKey(r))] {
		if m.cpu <= r.CPUMilli && m.mem <= r.MemoryMiB && !a.job.Status.SubmittedAt.Before(m.submitted) {
			st.protectedOn = append(st.protectedOn[:0], m.protectedOn...)
			return nil, m.until, true, m.cpu == 0 && m.mem == 0
		}
	}
	st.missAll = false
	victims, until = st.preempt(a)
	return victims, until, false, len(victims) == 0 && st.missAll
}

// settle records the outcome of a job that failed blind (placeOrBlind)
// and missed whatever it asks (preemptOrMiss): every job of its missKey
// fails alike, and scheduleJob answers it before making an attempt. Such
// a job's keep would keep nothing the first one's did not (which nodes a
// job may use does not depend on its CPU and memory), so none is made.
func (st *state) settle(a *attempt, p Pending, groups []uint64) {
	if st.settled == nil {
		st.settled = map[string]failure{}
	}
	st.settled[string(st.missKey(&a.job.Spec.Resources))] = failure{Pending: p, groups: groups, submitted: a.job.Status.SubmittedAt}
}

// roomCouldNotHoldAny reports, once roomCouldHold found that releasing
// every victim of rest could not let a in, whether that holds for a job
// like a that asks no CPU and no memory, and so for every job of a's
// missKey: the room bound is a relaxation, and asking nothing of a node's
// CPU and memory relaxes it further. It counts the room anew for that job.
func (st *state) roomCouldNotHoldAny(a *attempt, rest []victim) bool {
	bare := *a
	bare.req.CPU, bare.req.Memory = 0, 0
	st.startRoom(&bare)
	return !st.roomCouldHold(&bare, rest)
}

// addMiss records that a's preemption found no victims to make room.
func (st *state) addMiss(a *attempt, until time.Time, groups []uint64) {
	if st.cfg.DisablePreemption || a.class == model.ClassSpot {
		return
	}
	if st.misses == nil {
		st.misses = map[string][]preemptMiss{}
	}
	r := &a.job.Spec.Resources
	k := string(st.missKey(r))
	m := preemptMiss{cpu: r.CPUMilli, mem: r.MemoryMiB, until: until, protectedOn: slices.Clone(st.protectedOn), groups: groups,
		submitted: a.job.Status.SubmittedAt}
	if st.missAll {
		m.cpu, m.mem = 0, 0 // it misses whatever CPU and memory it asks
	}
	st.misses[k] = append(st.misses[k], m)
}

// missKey is the shape key in st.keyBuf (scheduleJob's) with its CPU and
// memory (appendShapeKey's fifth and sixth numbers) replaced by the SKUs of
// the fleet whose nodes they fit (capable): jobs of one such key pass the
// same group filters and differ only where a node's free CPU or memory is
// tested.
func (st *state) missKey(r *model.Resources) []byte {
	k := append(st.missBuf[:0], st.keyBuf...)
	clear(k[4*8 : 6*8])
	for _, sz := range st.skuSizes {
		k = appendBit(k, r.CPUMilli <= sz.cpu && r.MemoryMiB <= sz.mem)
	}
	st.missBuf = k
	return k
}

// skuSize is the CPU and memory of a SKU of the fleet.
type skuSize struct{ cpu, mem int64 }

// listSKUSizes lists, once per state, the distinct CPU and memory sizes of
// the fleet's SKUs, in the order of the groups.
func (st *state) listSKUSizes() {
	if st.skuSizes != nil {
		return
	}
	st.skuSizes = []skuSize{}
	for _, g := range st.groups {
		if sz := (skuSize{g.sku.CPUMilli(), g.sku.MemoryMiB()}); !slices.Contains(st.skuSizes, sz) {
			st.skuSizes = append(st.skuSizes, sz)
		}
	}
}

// dropMisses forgets the misses of shapes whose groups a preemption freed
// capacity in (markFreed's set).
func (st *state) dropMisses(freed []uint64) {
	for k, ms := range st.misses {
		ms = slices.DeleteFunc(ms, func(m preemptMiss) bool { return intersects(m.groups, freed) })
		if len(ms) == 0 {
			delete(st.misses, k)
		} else {
			st.misses[k] = ms
		}
	}
	for _, m := range [...]map[string]failure{st.blind, st.settled} {
		for k, f := range m {
			if intersects(f.groups, freed) {
				delete(m, k)
			}
		}
	}
}

// clearMisses starts a cycle with no misses and no blind verdicts.
func (st *state) clearMisses() {
	clear(st.misses)
	clear(st.blind)
	clear(st.settled)
}

// placeOrBlind is place, answered from the cycle's blind verdicts for a
// single instance when a job of a's key (missKey) failed for a reason that
// no node's free CPU or memory took part in (cpuBlind): every filter then
// sees a as it saw that job, and the reason and detail are that job's.
// blind reports a failure of that kind.
func (st *state) placeOrBlind(a *attempt) (p placement, reason Reason, detail string, blind bool) {
	if a.count != 1 {
		p, reason, detail = st.place(a)
		return p, reason, detail, false
	}
	k := st.missKey(&a.job.Spec.Resources)
	if f, ok := st.blind[string(k)]; ok {
		return placement{}, f.Reason, f.Detail, true
	}
	st.blindable = false
	p, reason, detail = st.place(a)
	if reason != ReasonNone && st.blindable {
		if st.blind == nil {
			st.blind = map[string]failure{}
		}
		st.blind[string(k)] = failure{Pending: Pending{Reason: reason, Detail: detail}, groups: st.shapeGroups(a)}
		return p, reason, detail, true
	}
	return p, reason, detail, false
}

// cpuBlind reports whether v, the full verdict of a single instance that
// found no node, is one the CPU and memory it asks took no part in beyond
// the SKUs they fit (which missKey holds): no node had its GPUs free (so
// none was tested for CPU or memory, and the most free GPUs on one are what
// they are), or the filters stopped before free capacity. Verdicts whose
// detail names the job's shape (no SKU has it, no cluster of the fabric
// has it) are left out.
func cpuBlind(a *attempt, v *verdict) bool {
	switch v.furthest {
	case stageCapable, stageInterconnect, stageReady, stageQuota, stageBorrow:
		return true
	case stageReservation:
		return v.maxFree < a.req.TotalMilli()
	}
	return false
}
