package sched_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// whole8 is all eight GPUs of an H100 node.
func whole8(node string) model.Allocation {
	return model.Allocation{Node: node, GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}}
}

func resizeOf(p sched.Plan, job string) (sched.Resize, bool) {
	for _, r := range p.Resizes {
		if r.Job == job {
			return r, true
		}
	}
	return sched.Resize{}, false
}

// TestElasticGrowsIntoIdleCapacity: a running elastic job grows, after the
// resize interval, into nodes no queued job takes, on its own cluster, up
// to its maximum, and not before the interval has passed.
func TestElasticGrowsIntoIdleCapacity(t *testing.T) {
	world := func(started time.Time, queued bool) *World {
		w := twoLeaves()
		w.Job("e", "alice").GPUs(1, 8).Elastic(3, 1).Interconnect(model.FabricInfiniBand).Running(started, whole8("h-l1-1"))
		if queued {
			w.Job("q", "bob").GPUs(2, 8).Interconnect(model.FabricInfiniBand).Submitted(now.Add(-time.Minute))
		}
		return w
	}
	t.Run("after the interval, up to the maximum", func(t *testing.T) {
		p := schedule(t, world(now.Add(-11*time.Minute), false))
		r, ok := resizeOf(p, "e")
		if !ok {
			t.Fatalf("e did not grow: %+v", p)
		}
		if r.From != 1 || r.To != 3 || r.Reason != sched.IdleCapacity || r.For != "" || len(p.Preemptions) != 0 {
			t.Fatalf("resize %+v, preemptions %v: want 1→3 on idle capacity, for nobody", r, p.Preemptions)
		}
		if r.Nodes[0].Node != "h-l1-1" {
			t.Errorf("instance 0 moved to %s", r.Nodes[0].Node)
		}
		for _, n := range r.Nodes[1:] {
			if !strings.HasPrefix(n.Node, "h-") {
				t.Errorf("grew onto %s, off its cluster", n.Node)
			}
		}
		if !strings.HasPrefix(r.Detail, "grew 1→3: 16 idle H100 in ") {
			t.Errorf("detail %q", r.Detail)
		}
	})
	t.Run("not before the interval", func(t *testing.T) {
		if p := schedule(t, world(now.Add(-5*time.Minute), false)); len(p.Resizes) != 0 {
			t.Fatalf("grew 5 minutes after its start: %+v", p.Resizes)
		}
	})
	t.Run("only into what queued jobs leave", func(t *testing.T) {
		p := schedule(t, world(now.Add(-time.Hour), true))
		expect(t, p, "q", sched.ReasonNone)
		r, ok := resizeOf(p, "e")
		if !ok || r.To != 2 {
			t.Fatalf("want e grown 1→2 on the one node q leaves, got %+v (ok %v)", r, ok)
		}
	})
	t.Run("leaving the headroom", func(t *testing.T) {
		w := world(now.Add(-time.Hour), false)
		snap := w.Snapshot()
		snap.Headroom = []sched.Headroom{{Region: "eastus", GPUModel: "H100", GPUs: 16}}
		core := sched.New(sched.Config{MinRunTime: sched.DefaultMinRunTime})
		p := core.Schedule(snap, now)
		r, ok := resizeOf(p, "e")
		if !ok || r.To != 2 {
			t.Fatalf("with 24 idle GPUs and 16 kept, want e grown 1→2, got %+v (ok %v)", r, ok)
		}
		// A driver that carries a Session gets the same from the Snapshot.
		inc, err := sched.NewIncremental(core, true).Plan(snap, now)
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := resizeOf(inc, "e"); !ok || r.To != 2 {
			t.Fatalf("incremental: want e grown 1→2, got %+v (ok %v)", r, ok)
		}
	})
}

// TestElasticShrinksBeforeEvicting: a job of a higher class takes the
// instances an elastic job holds above its minimum, the last added first,
// and nothing is evicted; a job at its minimum is evicted whole as any.
func TestElasticShrinksBeforeEvicting(t *testing.T) {
	world := func(size int) *World {
		w := twoLeaves()
		nodes := []string{"h-l1-1", "h-l1-2", "h-l2-1", "h-l2-2"}[:size]
		allocs := make([]model.Allocation, len(nodes))
		for i, n := range nodes {
			allocs[i] = whole8(n)
		}
		w.Job("e", "alice").GPUs(2, 8).Elastic(4, 1).Interconnect(model.FabricInfiniBand).
			Running(now.Add(-time.Hour), allocs...).Checkpointed(now.Add(-10 * time.Minute))
		w.Job("q", "bob").GPUs(1, 8).Class(model.ClassReserved).Submitted(now.Add(-time.Minute))
		return w
	}
	t.Run("above its minimum", func(t *testing.T) {
		w := world(4)
		p := schedule(t, w)
		expect(t, p, "q", sched.ReasonNone)
		if len(p.Preemptions) != 0 {
			t.Fatalf("evicted %v; want a shrink", p.Preemptions)
		}
		r, ok := resizeOf(p, "e")
		if !ok || r.From != 4 || r.To != 3 || r.For != "q" || r.Reason != sched.HigherClass {
			t.Fatalf("want e shrunk 4→3 for q (HigherClass), got %+v (ok %v)", r, ok)
		}
		if b, _ := bindOf(p, "q"); b.Nodes[0].Node != "h-l2-2" {
			t.Errorf("q bound on %s; want h-l2-2, the instance e added last", b.Nodes[0].Node)
		}
		// Every instance restarts: 10 minutes since the checkpoint × 32 GPUs.
		if want := 600.0 * 32; r.LostGPUSeconds != want {
			t.Errorf("lost %.0f GPU-seconds, want %.0f", r.LostGPUSeconds, want)
		}
		if err := p.Apply(w.Jobs, now); err != nil {
			t.Fatal(err)
		}
		if err := CheckInvariants(w); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("at its minimum", func(t *testing.T) {
		w := world(2)
		w.Job("b", "bob").GPUs(2, 8).Interconnect(model.FabricInfiniBand).Running(now.Add(-time.Hour), whole8("h-l2-1"), whole8("h-l2-2"))
		p := schedule(t, w)
		expect(t, p, "q", sched.ReasonNone)
		if len(p.Resizes) != 0 || len(p.Preemptions) != 1 {
			t.Fatalf("want one eviction and no resize, got %+v and %+v", p.Preemptions, p.Resizes)
		}
	})
}

// TestSessionUndoesResizes: a Session's cycle leaves the Session as it
// was until the driver reports the plan, growth and shrinks included, so
// the same cycle twice gives the same plan.
func TestSessionUndoesResizes(t *testing.T) {
	for _, queued := range []bool{false, true} {
		w := twoLeaves()
		w.Job("e", "alice").GPUs(1, 8).Elastic(4, 1).Running(now.Add(-time.Hour), whole8("h-l1-1"))
		w.Job("f", "bob").GPUs(1, 8).Elastic(3, 1).Running(now.Add(-time.Hour), whole8("h-l2-1"), whole8("h-l2-2"))
		if queued { // takes the idle node and one of f's
			w.Job("q", "bob").GPUs(2, 8).Class(model.ClassReserved).Submitted(now.Add(-time.Minute))
		}
		ss := sched.New(sched.Config{}).NewSession(&w.Fleet, &w.Tenancy)
		for _, j := range w.Jobs {
			if err := ss.Hold(j); err != nil {
				t.Fatal(err)
			}
		}
		first := ss.Schedule(queuedJobs(w.Jobs), now)
		if len(first.Resizes) == 0 {
			t.Fatalf("no resize to undo: %+v", first)
		}
		second := ss.Schedule(queuedJobs(w.Jobs), now)
		if a, b := planJSON(t, first), planJSON(t, second); !bytes.Equal(a, b) {
			t.Fatalf("the same cycle twice gave\n%s\n%s", a, b)
		}
	}
}
