package sched

import (
	"fmt"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// Keeping the nodes of a job that waits for protected victims.
//
// A job that could start by evicting work still inside its MinRunTime
// protection waits (AwaitingPreemption) until the protection ends. Were
// the rest of the cycle free to place work it may evict on the nodes those
// victims hold, GPUs that free up there would go to newcomers, each
// protected in turn for MinRunTime: the job waits again, and again, for as
// long as such work keeps arriving (on the simulated week, spot batch kept
// a partition's 4-node gang from its guarantee for hours, and other work a
// reservation's gang from its opening for up to 44 minutes). So for the
// rest of the cycle the nodes of the victims it would take, were none
// protected, take no work the job could evict there that no guarantee
// covers: spot work, and work of a lower class (or of its tenant and
// class, a priority gap below it) of a partition that holds its guarantee
// in the node's pool already (or of none). The unprotected victims' nodes
// are kept too: a gang that waits for one protected victim would
// otherwise see the free GPUs beside the others taken and protected in
// turn. Work it could not evict, and work of a partition below its
// guarantee there, still uses them (kept nodes never keep a partition
// below its guarantee; a hold, hold.go, still takes only other
// partitions' work that the unused guarantee covers whole); other nodes
// are untouched. Kubernetes keeps a preemptor's nominated node the same
// way: pods of a lower priority are not bound there while it waits for
// its victims to go.
//
// A job naming a reservation keeps all of the reservation's nodes, the
// free ones too. Nodes are kept afresh every cycle, by the job of the
// queue's order that first finds protected victims on them.

// awaitState is one job of this cycle that waits for protected victims.
type awaitState struct {
	job       *model.Job
	tenant    *tenantState
	class     model.Class
	partition *partitionState // nil for none
	until     time.Time       // when the first of its victims' protection ends
}

// clearKept forgets the previous cycle's kept nodes.
func (st *state) clearKept() {
	for _, i := range st.keptNodes {
		st.keptOf[i] = -1
	}
	st.keptNodes, st.awaits = st.keptNodes[:0], st.awaits[:0]
}

// keep records that a waits until until for victims preempt found
// protected, and keeps the nodes of every victim it would take were none
// protected (st.protectedOn, preempt) and, for a job naming a
// reservation, the reservation's nodes, where no job before it keeps them.
func (st *state) keep(a *attempt, until time.Time) {
	if a.class == model.ClassSpot || len(st.protectedOn) == 0 {
		return
	}
	w := len(st.awaits)
	st.awaits = append(st.awaits, awaitState{job: a.job, tenant: a.tenant, class: a.class, partition: a.tenant.partition, until: until})
	nodes := st.protectedOn
	if a.res >= 0 {
		// A job naming a reservation needs its nodes, free ones too: spot
		// work started on one now would be protected past the victims.
		nodes = append(nodes, st.res[a.res].nodes...)
		st.protectedOn = nodes // keeps the grown buffer for the next attempt
	}
	for _, i := range nodes {
		if st.keptOf[i] >= 0 || !st.mayUse(a, i) {
			continue // kept already, or a node of a gang victim that a may not use
		}
		st.keptOf[i] = w
		st.keptNodes = append(st.keptNodes, i)
		if st.resOf[i] < 0 && st.earOf[i] < 0 && st.holdOf[i] < 0 && st.nodes[i].Ready {
			// Listed with the nodes reservations and holds keep, which a
			// group's counts of Ready nodes check one by one.
			g := st.groups[st.groupOf[i]]
			g.reservedReady = append(g.reservedReady, i)
		}
	}
}

// yieldsTo reports whether a's job, were it placed on node i, would be
// work that awaits[w] may evict there and that its partition's guarantee
// does not cover: spot work of a lower class; else, when its partition
// holds its guarantee in the node's pool already (or it has no
// partition), work of a lower class, or of its tenant and class a
// priority gap below it. Kept nodes never keep a partition below its
// guarantee, for a job larger than what the partition is owed too (it
// borrows the rest, as anywhere else): on the simulated week, a 1×4 job
// of a partition one GPU short waited on nodes kept for its own tenant's
// gang until it counted as a guarantee violation.
func (st *state) yieldsTo(a *attempt, w, i int) bool {
	x := &st.awaits[w]
	if a.job == x.job || (a.res >= 0 && st.resOf[i] == a.res) {
		return false // the node's own reservation's work comes first there
	}
	if a.class == model.ClassSpot && x.class > model.ClassSpot {
		return true
	}
	q, k := a.tenant.partition, st.groups[st.groupOf[i]].pool
	if q != nil && q.used[k] < q.guar[k] {
		return false
	}
	if a.class < x.class {
		return true
	}
	gap := st.cfg.PriorityGap
	av, xv := a.job.Spec.Priority.Value, x.job.Spec.Priority.Value
	return gap > 0 && a.tenant == x.tenant && a.class == x.class && xv > av && uint64(xv)-uint64(av) >= uint64(gap)
}

// keptNote names, for a pending job's detail, the first waiting job whose
// kept nodes it could run on but may not use; "" when none keeps it out.
func (st *state) keptNote(a *attempt) string {
	for _, i := range st.keptNodes {
		w := st.keptOf[i]
		g := st.groups[st.groupOf[i]]
		if !st.yieldsTo(a, w, i) || !a.job.Spec.Placement.AllowsRegion(g.region.name) || !st.capable(a, g) {
			continue
		}
		n := 0
		for _, j := range st.keptNodes {
			if st.keptOf[j] == w {
				n++
			}
		}
		x := &st.awaits[w]
		return fmt.Sprintf("; %s kept for job %s, which may evict this job there and waits for work protected until %s",
			nodesText(n, ""), x.job.ID, x.until.UTC().Format(time.RFC3339))
	}
	return ""
}
