package sched_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// starvingGang is two 8×H100 nodes busy with sixteen 1-GPU jobs, and a
// gang of 2×8 GPUs queued at start. Every 10 minutes the oldest small job
// ends and a new one is submitted; step runs one cycle, applies its Plan
// and returns it.
type starvingGang struct {
	w     *World
	s     *sched.Scheduler
	clock time.Time
	small int // small jobs made so far
}

func newStarvingGang(holdAfter time.Duration) *starvingGang {
	g := &starvingGang{
		w: NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("h", 2, h100, "l1").
			Tenant("alice", "").Tenant("bob", ""),
		s:     sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime, HoldAfter: holdAfter}),
		clock: Epoch,
	}
	for i := range 16 {
		g.small++
		g.w.Job(fmt.Sprintf("s%02d", g.small), "bob").GPUs(1, 1).Submitted(Epoch).
			Running(Epoch.Add(time.Duration(i)*time.Minute), On(fmt.Sprintf("h-%d", i/8+1), i%8))
	}
	g.w.Job("gang", "alice").GPUs(2, 8).Submitted(Epoch)
	return g
}

func (g *starvingGang) step(t *testing.T) sched.Plan {
	t.Helper()
	g.clock = g.clock.Add(10 * time.Minute)
	var oldest *model.Job
	for _, j := range g.w.Jobs {
		if j.ID != "gang" && j.Status.State == model.StateRunning && (oldest == nil || j.Status.StartedAt.Before(oldest.Status.StartedAt)) {
			oldest = j
		}
	}
	if oldest != nil {
		oldest.Status.State, oldest.Status.EndedAt, oldest.Status.Allocations = model.StateSucceeded, g.clock, nil
	}
	g.small++
	g.w.Job(fmt.Sprintf("s%02d", g.small), "bob").GPUs(1, 1).Submitted(g.clock)
	if err := g.w.Validate(); err != nil {
		t.Fatal(err)
	}
	p := g.s.Schedule(g.w.Snapshot(), g.clock)
	if err := p.Apply(g.w.Jobs, g.clock); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHoldEndsGangStarvation: without HoldAfter, each GPU a small job
// frees goes to the next small job and the gang never starts; with it, the
// gang holds both nodes once it has waited, the small jobs that come later
// wait and are told why, and the gang starts when the last small job that
// was running on them ends.
func TestHoldEndsGangStarvation(t *testing.T) {
	g := newStarvingGang(0)
	for range 40 {
		if _, started := bindOf(g.step(t), "gang"); started {
			t.Fatalf("without HoldAfter the gang started at %s; the test no longer starves it", g.clock)
		}
	}

	g = newStarvingGang(30 * time.Minute)
	for k := 1; k <= 40; k++ {
		p := g.step(t)
		waited := g.clock.Sub(Epoch)
		if _, started := bindOf(p, "gang"); started {
			// Small jobs took the two GPUs freed before the gang had
			// waited 30 minutes; from then on nothing new lands on the
			// nodes, and the sixteen jobs there end one per step.
			if k != 18 {
				t.Fatalf("the gang started at step %d (waited %s), want step 18", k, waited)
			}
			return
		}
		gp, _ := pendingOf(p, "gang")
		held := strings.Contains(gp.Detail, "2 nodes of eastus-c/H100 are kept for it")
		if held != (waited >= 30*time.Minute) {
			t.Fatalf("step %d (waited %s): gang detail %q", k, waited, gp.Detail)
		}
		last := fmt.Sprintf("s%02d", g.small)
		if sp, pending := pendingOf(p, last); waited >= 30*time.Minute &&
			(!pending || !strings.Contains(sp.Detail, "kept for job gang, which has waited since "+Epoch.Format(time.RFC3339))) {
			t.Fatalf("step %d: new small job %s: pending %v, %q", k, last, pending, sp.Detail)
		}
	}
	t.Fatal("with HoldAfter the gang did not start in 40 steps")
}

// TestHoldWhoAndWhere: the holder keeps the node where the least work
// that is not spot stands in its way; spot work and work of a higher class
// may still use it, work of its own class may not and is told why; a job
// over its quota holds nothing.
func TestHoldWhoAndWhere(t *testing.T) {
	world := func() *World {
		w := NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("a", 1, h100, "l1").
			Cluster("eastus-c2", model.FabricInfiniBand).Nodes("b", 1, h100, "l2").
			Tenant("alice", "").Tenant("bob", "")
		w.Job("busy-a", "bob").GPUs(1, 6).Submitted(Epoch).Running(Epoch, On("a-1", 0, 1, 2, 3, 4, 5))
		w.Job("busy-b", "bob").GPUs(1, 2).Submitted(Epoch).Running(Epoch, On("b-1", 0, 1))
		w.Job("spot-b", "bob").GPUs(1, 1).Class(model.ClassSpot).Submitted(Epoch).Running(Epoch, On("b-1", 2))
		w.Job("wide", "alice").GPUs(1, 8).Submitted(Epoch)
		for _, id := range []string{"n1", "n2", "n3"} {
			w.Job(id, "bob").GPUs(1, 1).Submitted(now)
		}
		w.Job("spot", "bob").GPUs(1, 1).Class(model.ClassSpot).Submitted(now)
		w.Job("high", "bob").GPUs(1, 4).Class(model.ClassReserved).Submitted(now) // more than a-1 has free
		return w
	}
	plan := func(w *World) sched.Plan {
		t.Helper()
		if err := w.Validate(); err != nil {
			t.Fatal(err)
		}
		return sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime, HoldAfter: time.Hour}).Schedule(w.Snapshot(), now)
	}
	on := func(p sched.Plan, job string) string {
		b, ok := bindOf(p, job)
		if !ok {
			return "pending"
		}
		return b.Nodes[0].Node
	}

	p := plan(world())
	// b-1 holds 2 GPUs of work that is not spot, a-1 holds 6.
	if d, _ := pendingOf(p, "wide"); !strings.Contains(d.Detail, "1 node of eastus-c2/H100 is kept for it") {
		t.Fatalf("wide: %q", d.Detail)
	}
	for job, want := range map[string]string{"n1": "a-1", "n2": "a-1", "n3": "pending", "spot": "b-1", "high": "b-1"} {
		if got := on(p, job); got != want {
			t.Errorf("%s: %s, want %s", job, got, want)
		}
	}
	if d, _ := pendingOf(p, "n3"); d.Reason != sched.InsufficientCapacity || !strings.Contains(d.Detail, "1 node of eastus-c2/H100 is kept for job wide") {
		t.Errorf("n3: %s %q", d.Reason, d.Detail)
	}

	// A job naming a reservation that does not exist waits for it, not
	// for capacity: it holds nothing.
	w := world()
	w.Jobs[3].Spec.Placement.Reservation = "nowhere" // wide
	p = plan(w)
	if d, _ := pendingOf(p, "wide"); d.Reason != sched.ReservationNotActive || on(p, "n3") == "pending" {
		t.Fatalf("wide naming no reservation: %s %q; n3 %s", d.Reason, d.Detail, on(p, "n3"))
	}

	w = world().Quota("alice", "eastus", "ND", 4)
	p = plan(w)
	if d, _ := pendingOf(p, "wide"); d.Reason != sched.QuotaExceeded || strings.Contains(d.Detail, "kept") {
		t.Fatalf("wide over its quota: %s %q", d.Reason, d.Detail)
	}
	for _, job := range []string{"n1", "n2", "n3"} {
		if on(p, job) == "pending" {
			t.Errorf("%s pending with no job holding", job)
		}
	}
}

// TestHoldKeepsGuarantees: work of another partition that fits its unused
// guarantee may use the held nodes (a hold never keeps a partition below
// its guarantee); work of the holder's own partition waits for the holder.
func TestHoldKeepsGuarantees(t *testing.T) {
	w := NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("a", 1, h100, "l1").
		Cluster("eastus-c2", model.FabricInfiniBand).Nodes("b", 1, h100, "l2").
		Cluster("eastus-t4", model.FabricEthernet).Nodes("t", 2, t4x4, "").
		Partition("pa", "eastus", "T4", 8).Partition("pb", "eastus", "H100", 4). // pa borrows H100s: no reclaim
		Tenant("alice", "pa").Tenant("carol", "pa").Tenant("bob", "pb").Tenant("dave", "")
	w.Job("full-a", "dave").GPUs(1, 8).Submitted(Epoch).Running(Epoch, On("a-1", 0, 1, 2, 3, 4, 5, 6, 7))
	w.Job("busy-b", "dave").GPUs(1, 2).Submitted(Epoch).Running(Epoch, On("b-1", 0, 1))
	w.Job("wide", "alice").GPUs(1, 8).Submitted(Epoch)
	w.Job("bob-n", "bob").GPUs(1, 1).Models("H100").Submitted(now)
	w.Job("carol-n", "carol").GPUs(1, 1).Models("H100").Submitted(now)
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	p := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime, HoldAfter: time.Hour}).Schedule(w.Snapshot(), now)
	if d, _ := pendingOf(p, "wide"); !strings.Contains(d.Detail, "1 node of eastus-c2/H100 is kept for it") {
		t.Fatalf("wide: %q", d.Detail)
	}
	if b, ok := bindOf(p, "bob-n"); !ok || b.Nodes[0].Node != "b-1" {
		t.Errorf("bob-n, inside pb's guarantee: %+v %v, want bound on the held b-1", b, ok)
	}
	if d, ok := pendingOf(p, "carol-n"); !ok || !strings.Contains(d.Detail, "kept for job wide") {
		t.Errorf("carol-n, of the holder's partition: pending %v %q, want kept off b-1", ok, d.Detail)
	}
}

// TestHoldBackfill: when every job on the held nodes has a retry.timeout,
// the hold has a shadow time (when they surely end), and work that surely
// ends by then may use the held nodes meanwhile (it cannot delay the
// holder); work that may run longer, or has no timeout, may not.
func TestHoldBackfill(t *testing.T) {
	w := NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("a", 1, h100, "l1").
		Cluster("eastus-c2", model.FabricInfiniBand).Nodes("b", 1, h100, "l2").
		Tenant("alice", "").Tenant("bob", "")
	w.Job("full-a", "bob").GPUs(1, 8).Submitted(Epoch).Running(Epoch, On("a-1", 0, 1, 2, 3, 4, 5, 6, 7)) // no timeout
	w.Job("busy-b", "bob").GPUs(1, 2).Timeout(30*time.Hour, time.Minute).Submitted(Epoch).Running(Epoch, On("b-1", 0, 1))
	w.Job("wide", "alice").GPUs(1, 8).Submitted(Epoch)
	w.Job("short", "bob").GPUs(1, 1).Timeout(2*time.Hour, time.Minute).Submitted(now)
	w.Job("long", "bob").GPUs(1, 1).Timeout(10*time.Hour, time.Minute).Submitted(now)
	w.Job("open", "bob").GPUs(1, 1).Submitted(now)
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	p := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime, HoldAfter: time.Hour}).Schedule(w.Snapshot(), now)
	shadow := Epoch.Add(30*time.Hour + time.Minute).Format(time.RFC3339) // busy-b's timeout and grace
	if d, _ := pendingOf(p, "wide"); !strings.Contains(d.Detail, "1 node of eastus-c2/H100 is kept for it") ||
		!strings.Contains(d.Detail, "work whose retry.timeout ends it by "+shadow+" may use them meanwhile") {
		t.Fatalf("wide: %q", d.Detail)
	}
	if b, ok := bindOf(p, "short"); !ok || b.Nodes[0].Node != "b-1" {
		t.Errorf("short, which ends before the shadow time: %+v %v, want on b-1", b, ok)
	}
	for _, id := range []string{"long", "open"} {
		if d, ok := pendingOf(p, id); !ok || !strings.Contains(d.Detail, "kept for job wide") {
			t.Errorf("%s: pending %v %q, want kept off b-1", id, ok, d.Detail)
		}
	}
}

// TestHoldYields: work of the holder's class and partition that
// checkpoints may use the held nodes while other work still stands in the
// holder's way there, and the holder evicts it (reason HeldNodes) once
// that lets it start and the work has run MinRunTime; work that does not
// checkpoint is kept off, work that was there before the hold began is
// waited for, and once nothing but yielding work is left no more comes in.
func TestHoldYields(t *testing.T) {
	w := NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("a", 1, h100, "l1").
		Cluster("eastus-c2", model.FabricInfiniBand).Nodes("b", 1, h100, "l2").
		Tenant("alice", "").Tenant("bob", "")
	w.Job("full-a", "bob").GPUs(1, 8).Checkpoints(time.Hour).Submitted(Epoch).Running(Epoch, On("a-1", 0, 1, 2, 3, 4, 5, 6, 7))
	w.Job("busy-b", "bob").GPUs(1, 2).Checkpoints(time.Hour).Submitted(Epoch).Running(Epoch, On("b-1", 0, 1))
	w.Job("wide", "alice").GPUs(1, 8).Submitted(Epoch)
	w.Job("ckpt", "bob").GPUs(1, 1).Checkpoints(time.Hour).Submitted(now)
	w.Job("plain", "bob").GPUs(1, 1).Submitted(now)
	s := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime, HoldAfter: time.Hour})
	step := func(at time.Time) sched.Plan {
		t.Helper()
		if err := w.Validate(); err != nil {
			t.Fatal(err)
		}
		p := s.Schedule(w.Snapshot(), at)
		if err := p.Apply(w.Jobs, at); err != nil {
			t.Fatal(err)
		}
		return p
	}

	p := step(now)
	if b, ok := bindOf(p, "ckpt"); !ok || b.Nodes[0].Node != "b-1" {
		t.Fatalf("ckpt, which checkpoints: %+v %v, want on the held b-1", b, ok)
	}
	if d, ok := pendingOf(p, "plain"); !ok || !strings.Contains(d.Detail, "kept for job wide") {
		t.Errorf("plain, which does not checkpoint: pending %v %q, want kept off b-1", ok, d.Detail)
	}
	if len(p.Preemptions) != 0 {
		t.Fatalf("preempted %+v while busy-b, there before the hold, still runs", p.Preemptions)
	}

	// busy-b ends: only ckpt stands in wide's way, and it is protected
	// for MinRunTime; nothing new that would yield comes in meanwhile.
	at := now.Add(time.Minute)
	for _, j := range w.Jobs {
		if j.ID == "busy-b" {
			j.Status.State, j.Status.EndedAt, j.Status.Allocations = model.StateSucceeded, at, nil
		}
	}
	w.Job("late", "bob").GPUs(1, 1).Checkpoints(time.Hour).Submitted(at)
	p = step(at)
	if d, _ := pendingOf(p, "wide"); d.Reason != sched.AwaitingPreemption {
		t.Errorf("wide with ckpt protected: %s %q, want %s", d.Reason, d.Detail, sched.AwaitingPreemption)
	}
	if d, ok := pendingOf(p, "late"); !ok || !strings.Contains(d.Detail, "kept for job wide") {
		t.Errorf("late, once only yielding work is left: pending %v %q, want kept off b-1", ok, d.Detail)
	}

	p = step(now.Add(sched.DefaultMinRunTime))
	if len(p.Preemptions) != 1 || p.Preemptions[0].Job != "ckpt" || p.Preemptions[0].For != "wide" || p.Preemptions[0].Reason != sched.HeldNodes {
		t.Fatalf("preemptions %+v, want ckpt for wide, HeldNodes", p.Preemptions)
	}
	if b, ok := bindOf(p, "wide"); !ok || b.Nodes[0].Node != "b-1" {
		t.Fatalf("wide: %+v %v, want bound on b-1", b, ok)
	}
}

// TestOneGPUNeverHolds: a job that needs one GPU's worth or less fits the
// first GPU that frees up, so it waits only for the queue order, which a
// hold must not overrule: it never holds nodes, however long it waited.
func TestOneGPUNeverHolds(t *testing.T) {
	for _, tc := range []struct {
		job   string
		gpus  int
		milli int64
		holds bool
	}{{"one", 1, 0, false}, {"half", 1, 500, false}, {"two", 2, 0, true}} {
		w := NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("a", 1, h100, "l1").
			Tenant("alice", "").Tenant("bob", "")
		w.Job("full-a", "bob").GPUs(1, 8).Submitted(Epoch).Running(Epoch, On("a-1", 0, 1, 2, 3, 4, 5, 6, 7))
		b := w.Job(tc.job, "alice").GPUs(1, tc.gpus).Submitted(Epoch)
		if tc.milli > 0 {
			b.Milli(tc.milli)
		}
		if err := w.Validate(); err != nil {
			t.Fatal(err)
		}
		p := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime, HoldAfter: time.Hour}).Schedule(w.Snapshot(), now)
		d, _ := pendingOf(p, tc.job)
		if held := strings.Contains(d.Detail, "kept for it"); held != tc.holds {
			t.Errorf("%s, waiting a day: holds %v, want %v (%q)", tc.job, held, tc.holds, d.Detail)
		}
	}
}
