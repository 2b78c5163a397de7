package sched_test

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// randomWorld is a small fleet with guarantees, borrowing and lending
// limits, a quota, reservations and power caps that bind, and two
// InfiniBand clusters of H100 in r1 (reservations choose between them), so
// that every rule of the core is exercised. The reservations' windows are redrawn as
// the run goes (see churnReservations).
func randomWorld() *World {
	return NewWorld().
		Region("r1", "us", model.FabricInfiniBand).Rack("r1-a", 0).
		Nodes("h-a", 3, h100, "la").Nodes("h-b", 3, h100, "lb").
		Cluster("r1-eth", model.FabricEthernet).Rack("r1-e", 1.2).Nodes("t4", 2, t4x4, "").
		Cluster("r1-ib2", model.FabricInfiniBand).Rack("r1-b", 0).Nodes("h-c", 2, h100, "lc").
		Region("r2", "eu", model.FabricInfiniBand).PowerHeadroom(12).Rack("r2-a", 14).Nodes("a", 3, a100, "l1").
		Partition("p1", "r1", "H100", 16).LendLimit(8).Tenant("t1", "p1").Tenant("t2", "p1").
		Partition("p2", "r1", "H100", 8).BorrowLimit(8).Tenant("t3", "p2").
		Tenant("t4", "").Tenant("t5", "").
		Quota("t4", "r1", "ND", 24).
		Reserve("res", "t3", a100, "r2", 1, time.Time{}, time.Time{}).
		Reserve("rh", "t5", h100, "r1", 2, Epoch.Add(time.Hour), Epoch.Add(9*time.Hour)).
		Reserve("rh3", "t3", h100, "r1", 1, Epoch.Add(30*time.Minute), time.Time{}).
		Reserve("rt", "t1", t4x4, "r1", 1, Epoch, Epoch.Add(5*time.Hour))
}

// TestRandomCycles runs many cycles over random arrivals, completions, node
// failures, cancellations and reservation windows, and checks after every
// cycle the invariants of CheckInvariants and Cycle.Check, and that a
// partition below its guarantee got back what borrowers held.
func TestRandomCycles(t *testing.T) {
	const cycles = 100_000
	w := randomWorld()
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := sched.Config{MinRunTime: 5 * time.Minute, ResizeInterval: 7 * time.Minute}
	s := sched.New(cfg)
	clock := Epoch
	next := 0
	tenants := []string{"t1", "t2", "t3", "t4", "t5"}
	var stats struct {
		binds, preemptions, pending, failures, reserved, gangs, loose int
		grew, shrank                                                  int
		precede                                                       int // bounded work of others bound on nodes kept ahead
		excluding                                                     int // binds of jobs that exclude nodes or name the only ones
		reasons                                                       map[sched.Reason]int
	}
	stats.reasons = map[sched.Reason]int{}
	suspects := map[string]string{}
	for c := 0; c < cycles; c++ {
		clock = clock.Add(time.Minute)
		w.Jobs = churn(w, rng, clock, &stats.failures)
		churnReservations(w, rng, clock)
		for queued(w.Jobs) < 24 && rng.IntN(3) > 0 {
			next++
			randomJob(w, rng, fmt.Sprintf("j%d", next), tenants[rng.IntN(len(tenants))], clock)
		}
		before := stateSet(w.Jobs)
		usedBefore := snapshotUsage(w)
		cyc := BeforeCycle(w, clock, cfg)
		p := s.Schedule(w.Snapshot(), clock)
		for _, r := range p.Resizes {
			if r.Grows() {
				stats.grew++
			} else {
				stats.shrank++
			}
		}
		stats.binds += len(p.Binds)
		stats.preemptions += len(p.Preemptions)
		stats.pending += len(p.Pending)
		for _, x := range p.Pending {
			stats.reasons[x.Reason]++
		}
		if got, want := len(p.Binds)+len(p.Pending), queued(w.Jobs); got != want {
			t.Fatalf("cycle %d: %d binds + pending for %d queued jobs", c, got, want)
		}
		if err := cyc.Check(p); err != nil {
			t.Fatalf("cycle %d: %v\nplan: %+v", c, err, p)
		}
		if err := p.Apply(w.Jobs, clock); err != nil {
			t.Fatalf("cycle %d: %v", c, err)
		}
		if err := CheckInvariants(w); err != nil {
			t.Fatalf("cycle %d: %v\nplan: %+v", c, err, p)
		}
		for _, b := range p.Binds {
			j := jobByID(w.Jobs, b.Job)
			if r, ok := cyc.Earmarked[b.Nodes[0].Node]; ok && j.Spec.Tenant != r.Owner && j.Spec.Priority.Class != model.ClassSpot {
				stats.precede++
			}
			if len(j.Spec.Placement.ExcludeNodes) > 0 || len(j.Spec.Placement.Nodes) > 0 {
				stats.excluding++
			}
			switch {
			case j.Spec.Placement.Reservation != "":
				stats.reserved++
			case len(b.Nodes) > 1 && j.Spec.Placement.Interconnect == "":
				stats.loose++
			case len(b.Nodes) > 1:
				stats.gangs++
			}
		}
		// The guarantee property is checked over two cycles: a job left
		// waiting with borrowed capacity it could reclaim may be one whose
		// partition was over its guarantee at its turn and dropped below
		// later in the same cycle; it must get the capacity in the next.
		late := starved(w, clock, before, usedBefore, cyc)
		for id, why := range late {
			if suspects[id] != "" {
				t.Fatalf("cycle %d: %s, and in the cycle before: %s\nplan: %+v", c, why, suspects[id], p)
			}
		}
		suspects = late
	}
	t.Logf("%d cycles: %d binds (%d in reservations, %d IB gangs, %d gangs without interconnect), %d preemptions, %d pending verdicts %v, %d node failures",
		cycles, stats.binds, stats.reserved, stats.gangs, stats.loose, stats.preemptions, stats.pending, stats.reasons, stats.failures)
	t.Logf("%d elastic jobs grew, %d shrank", stats.grew, stats.shrank)
	t.Logf("%d binds of others' bounded work on nodes kept for a reservation ahead, %d of jobs that exclude nodes or name the only ones", stats.precede, stats.excluding)
	if stats.binds == 0 || stats.preemptions == 0 || stats.failures == 0 || stats.reserved == 0 || stats.gangs == 0 || stats.loose == 0 || stats.precede == 0 ||
		stats.excluding == 0 || stats.grew == 0 || stats.shrank == 0 {
		t.Fatalf("the random world did not exercise the core: %+v", stats)
	}
	for _, r := range []sched.Reason{sched.PowerCapped, sched.BorrowLimitReached, sched.ReservationNotActive, sched.NoReadyNodes, sched.TopologyUnsatisfiable} {
		if stats.reasons[r] == 0 {
			t.Errorf("no job was left pending with %s: the random world does not exercise it", r)
		}
	}
}

// churnReservations now and then redraws a reservation's window (the
// first, open-ended one excepted): opening soon or later, closing after a
// while or never.
func churnReservations(w *World, rng *rand.Rand, now time.Time) {
	rs := w.Tenancy.Reservations
	for i := 1; i < len(rs); i++ {
		if rng.IntN(300) != 0 {
			continue
		}
		rs[i].Start = now.Add(time.Duration(rng.IntN(120)) * time.Minute)
		rs[i].End = time.Time{}
		if rng.IntN(4) > 0 {
			rs[i].End = rs[i].Start.Add(time.Duration(30+rng.IntN(600)) * time.Minute)
		}
	}
}

func jobByID(jobs []*model.Job, id string) *model.Job {
	for _, j := range jobs {
		if j.ID == id {
			return j
		}
	}
	return nil
}

// stateSet maps each job to its state before a cycle.
func stateSet(jobs []*model.Job) map[string]model.State {
	m := map[string]model.State{}
	for _, j := range jobs {
		m[j.ID] = j.Status.State
	}
	return m
}

func queued(jobs []*model.Job) int {
	n := 0
	for _, j := range jobs {
		if j.Status.State == model.StateQueued {
			n++
		}
	}
	return n
}

// churn completes and cancels jobs, checkpoints running ones, and fails and
// repairs nodes, requeueing the jobs of a failed node as a whole.
func churn(w *World, rng *rand.Rand, now time.Time, failures *int) []*model.Job {
	for i := range w.Fleet.Nodes {
		n := &w.Fleet.Nodes[i]
		switch {
		case n.Health == model.NodeReady && rng.IntN(500) == 0:
			n.Health = model.NodeNotReady
			*failures++
			for _, j := range w.Jobs {
				for _, a := range j.Status.Allocations {
					if a.Node == n.Name {
						j.Status.State, j.Status.Allocations = model.StateQueued, nil
						break
					}
				}
			}
		case n.Health == model.NodeNotReady && rng.IntN(20) == 0:
			n.Health = model.NodeReady
		}
	}
	kept := w.Jobs[:0]
	for _, j := range w.Jobs {
		switch j.Status.State {
		case model.StateRunning:
			if rng.IntN(12) == 0 {
				continue // completed
			}
			if rng.IntN(4) == 0 {
				j.Status.LastCheckpoint = now
			}
		case model.StateQueued:
			if rng.IntN(60) == 0 {
				continue // canceled
			}
		}
		kept = append(kept, j)
	}
	return kept
}

func randomJob(w *World, rng *rand.Rand, id, tenant string, now time.Time) {
	b := w.Job(id, tenant).Submitted(now)
	switch k := rng.IntN(10); {
	case k < 3:
		b.Milli(int64(100 * (1 + rng.IntN(9))))
	case k < 7:
		b.GPUs(1, []int{1, 2, 4, 8}[rng.IntN(4)])
	case k < 8:
		b.GPUs(2+rng.IntN(3), 8).Interconnect(model.FabricInfiniBand)
	default:
		b.GPUs(2+rng.IntN(2), []int{1, 2, 4, 8}[rng.IntN(4)]) // any fabric, one model, one cluster
	}
	if rng.IntN(3) == 0 {
		b.CPU(int64(1000*(1+rng.IntN(16))), int64(1024*(1+rng.IntN(64))))
	}
	switch rng.IntN(4) {
	case 0:
		b.Models("H100")
	case 1:
		b.Models("A100")
	}
	switch rng.IntN(10) {
	case 0, 1, 2:
		b.Class(model.ClassSpot)
	case 3:
		b.Class(model.ClassReserved)
	}
	// A fifth of the jobs are bounded by a retry.timeout, so that some end
	// before a reservation ahead starts and may use the nodes it keeps;
	// drawn from the ID, so that rng's draws stay those of the other rules.
	if h := fnv.New32a(); true {
		_, _ = h.Write([]byte(id))
		x := h.Sum32()
		if x%5 == 0 {
			b.Timeout(time.Duration(5+x/5%90)*time.Minute, time.Duration(x/450%3)*time.Minute)
		}
		// Half checkpoint, so that some may use nodes held for a job that
		// waited, and yield to it (hold.go).
		if x/1350%2 == 0 {
			b.Checkpoints(30 * time.Minute)
		}
		// One in eight excludes a node or two (placement.exclude_nodes).
		if x/2700%8 == 0 {
			nodes := w.Fleet.Nodes
			ex := []string{nodes[x/21600%uint32(len(nodes))].Name}
			if x/5%2 == 0 {
				ex = append(ex, nodes[x/7%uint32(len(nodes))].Name)
			}
			b.Exclude(ex...)
		}
		// One in forty-eight runs only on two or three named nodes
		// (placement.nodes).
		if x/3%48 == 0 {
			nodes := w.Fleet.Nodes
			only := []string{nodes[x/11%uint32(len(nodes))].Name, nodes[x/13%uint32(len(nodes))].Name}
			if x/17%2 == 0 {
				only = append(only, nodes[x/19%uint32(len(nodes))].Name)
			}
			b.OnlyOn(only...)
		}
	}
	// One in five jobs of whole GPUs is elastic, up to two or four steps
	// above its size; drawn from the ID, like the rules above.
	if h := fnv.New32a(); !b.Job.Spec.Resources.Fractional() {
		_, _ = h.Write([]byte(id + "/elastic"))
		if x := h.Sum32(); x%5 == 0 {
			step := 1 + int(x/5%2)
			b.Elastic(b.Job.Spec.Resources.InstanceCount+step*(2+2*int(x/10%2)), step)
		}
	}
	// Owners run a quarter of their jobs in one of their reservations.
	if rng.IntN(4) == 0 {
		var own []model.Reservation
		for _, r := range w.Tenancy.Reservations {
			if r.Owner == tenant {
				own = append(own, r)
			}
		}
		if len(own) > 0 {
			r := own[rng.IntN(len(own))]
			b.Reservation(r.Name).Models(w.Fleet.Catalog[r.SKU].GPUModel)
		}
	}
}

// usage is a partition's use of one pool before a cycle.
type usage map[string]int64

func snapshotUsage(w *World) usage {
	u := usage{}
	part := partitionOf(w)
	for _, j := range w.Jobs {
		for _, a := range j.Status.Allocations {
			if pool, ok := h100Pool(w, a.Node); ok && pool {
				u[part[j.Spec.Tenant]] += a.GPUMilli * int64(len(a.GPUs))
			}
		}
	}
	return u
}

func partitionOf(w *World) map[string]string {
	m := map[string]string{}
	for _, t := range w.Tenancy.Tenants {
		m[t.Name] = t.Partition
	}
	return m
}

// h100Pool reports whether a node is in r1's H100 pool, the pool the
// partitions are guaranteed.
func h100Pool(w *World, node string) (bool, bool) {
	for _, n := range w.Fleet.Nodes {
		if n.Name == node {
			return n.Region == "r1" && w.Fleet.Catalog[n.SKU].GPUModel == "H100", true
		}
	}
	return false, false
}

// starved lists the jobs a cycle left waiting although they could have
// reclaimed their partition's guarantee: the partition was and still is
// below its guarantee by at least the job's size, the job was queued since
// before the cycle, and a Ready H100 node holds enough free capacity plus
// what borrowers (partitions over their guarantee before and after the
// cycle) held when the cycle began and may lose (unprotected).
func starved(w *World, now time.Time, before map[string]model.State, usedBefore usage, cyc *Cycle) map[string]string {
	out := map[string]string{}
	part := partitionOf(w)
	guar := map[string]int64{}
	for _, p := range w.Tenancy.Partitions {
		guar[p.Name] = int64(p.Guarantees[0].GPUs) * model.MilliPerGPU
	}
	used := snapshotUsage(w)
	type gpu struct {
		node string
		i    int
	}
	pinned := map[gpu]bool{}      // GPUs holding work that may not be evicted
	cpuFree := map[string]int64{} // node -> CPU with borrowers gone
	memFree := map[string]int64{}
	for _, n := range w.Fleet.Nodes {
		if ok, _ := h100Pool(w, n.Name); ok && n.Health == model.NodeReady {
			sku := w.Fleet.Catalog[n.SKU]
			cpuFree[n.Name], memFree[n.Name] = sku.CPUMilli(), sku.MemoryMiB()
		}
	}
	for _, j := range w.Jobs {
		p := part[j.Spec.Tenant]
		borrower := (p == "" || min(used[p], usedBefore[p]) > guar[p]) && before[j.ID] == model.StateRunning
		guard := cyc.MinRunTime
		if j.Spec.Elastic != nil {
			guard = max(guard, cyc.ResizeInterval)
		}
		protected := now.Sub(j.Status.StartedAt) < guard || wholly(cyc, j)
		if borrower && !protected {
			continue
		}
		for _, a := range j.Status.Allocations {
			if _, ok := cpuFree[a.Node]; !ok {
				continue
			}
			for _, g := range a.GPUs {
				pinned[gpu{a.Node, g}] = true
			}
			cpuFree[a.Node] -= j.Spec.Resources.CPUMilli
			memFree[a.Node] -= j.Spec.Resources.MemoryMiB
		}
	}
	for _, j := range w.Jobs {
		p := part[j.Spec.Tenant]
		r := j.Spec.Resources
		if j.Status.State != model.StateQueued || before[j.ID] != model.StateQueued || p == "" || j.Spec.Priority.Class == model.ClassSpot ||
			r.InstanceCount != 1 || r.Fractional() || !r.AcceptsModel("H100") || j.Spec.Placement.Reservation != "" {
			continue
		}
		if need := r.TotalMilli(); used[p]+need > guar[p] || usedBefore[p]+need > guar[p] {
			continue
		}
		for node := range cpuFree {
			if !j.Spec.Placement.AllowsNode(node) {
				continue
			}
			if res, ok := cyc.Reserved[node]; ok && res.Owner != j.Spec.Tenant {
				continue
			}
			if res, ok := cyc.Earmarked[node]; ok && !cyc.Precedes(j, res) {
				continue // kept for a reservation ahead, which outranks guarantees
			}
			usable := 0
			for i := 0; i < 8; i++ {
				if !pinned[gpu{node, i}] {
					usable++
				}
			}
			if usable >= r.GPUsPerInstance && cpuFree[node] >= r.CPUMilli && memFree[node] >= r.MemoryMiB {
				out[j.ID] = fmt.Sprintf("partition %s uses %d of %d milli with %s (%d GPUs) queued, but %s has %d GPUs free or held by borrowers",
					p, used[p], guar[p], j.ID, r.GPUsPerInstance, node, usable)
				break
			}
		}
	}
	return out
}

// wholly reports whether every instance of j runs on a node that the cycle
// reserved for j's tenant: such work is never preempted.
func wholly(cyc *Cycle, j *model.Job) bool {
	for _, a := range j.Status.Allocations {
		if r, ok := cyc.Reserved[a.Node]; !ok || r.Owner != j.Spec.Tenant {
			return false
		}
	}
	return len(j.Status.Allocations) > 0
}
