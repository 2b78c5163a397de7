package sched_test

import (
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// TestPlacementSKU: work pinned to a SKU (an instance) runs only on nodes
// of that SKU, even where a larger node of another SKU with the same GPU
// model would hold it; unpinned work of the same shape may use either.
func TestPlacementSKU(t *testing.T) {
	const small, big = "NC24-A100x1", "ND96-A100x8-IB"
	sku := model.BuiltinCatalog()[small]
	world := func() *World {
		return NewWorld().Region("westus", "us", model.FabricInfiniBand).Rack("r1", 0).
			Nodes("a-big", 1, big, "l1").Nodes("z-small", 1, small, "l1").Tenant("alice", "")
	}
	pinned := func(w *World, id string, age int) {
		b := w.Job(id, "alice").GPUs(1, 1).Models("A100").CPU(sku.CPUMilli(), sku.MemoryMiB()).
			Submitted(Epoch.Add(-time.Duration(age) * time.Minute))
		b.Job.Spec.Placement.SKU = small
	}

	w := world()
	pinned(w, "i1", 3)
	pinned(w, "i2", 2)
	// Of the same shape but not pinned, after i2 failed: the core's verdict
	// for i2 must not be taken for j3 (the SKU is part of the shape).
	w.Job("j3", "alice").GPUs(1, 1).Models("A100").CPU(sku.CPUMilli(), sku.MemoryMiB()).Submitted(Epoch.Add(-time.Minute))
	p := schedule(t, w)
	if b, ok := bindOf(p, "j3"); !ok || b.Nodes[0].Node != "a-big-1" {
		t.Errorf("unpinned j3 bound %v (%t), want on a-big-1 after pinned i2 found no node", b.Nodes, ok)
	}
	b, ok := bindOf(p, "i1")
	if !ok || b.Nodes[0].Node != "z-small-1" {
		t.Errorf("i1 bound %v (%t), want on z-small-1, the only node of %s", b.Nodes, ok, small)
	}
	if b, ok := bindOf(p, "i2"); ok {
		t.Errorf("i2 bound on %v: a node of %s, not %s", b.Nodes, big, small)
	}
	if x, ok := pendingOf(p, "i2"); !ok || x.Reason.String() == "" {
		t.Errorf("i2 not pending with a reason: %+v", x)
	}

	w = world()
	w.Job("j1", "alice").GPUs(1, 1).Models("A100").CPU(sku.CPUMilli(), sku.MemoryMiB())
	w.Job("j2", "alice").GPUs(1, 1).Models("A100").CPU(sku.CPUMilli(), sku.MemoryMiB())
	p = schedule(t, w)
	for _, id := range []string{"j1", "j2"} {
		if _, ok := bindOf(p, id); !ok {
			t.Errorf("unpinned %s not bound; either node holds it", id)
		}
	}
}
