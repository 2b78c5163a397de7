package sched_test

import (
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	. "github.com/allot-dev/allot/internal/sched/schedtest"
)

// inferenceWorld is eastus with an InfiniBand A100 training node half
// used by a training job (the best packed node for a one-GPU job: the
// scorer's own pick) and n two-GPU A100 inference nodes on Ethernet.
func inferenceWorld(n int) *World {
	w := NewWorld().
		Region("eastus", "us", model.FabricInfiniBand).Rack("r1", 0).Nodes("ib", 1, a100, "l1").
		Cluster("eastus-inf", model.FabricEthernet).Nodes("inf", n, "NC48-A100x2", "").
		Tenant("alice", "")
	w.Job("train", "alice").GPUs(1, 4).Models("A100").Running(Epoch, On(w.Fleet.Nodes[0].Name, 0, 1, 2, 3))
	return w
}

func replica(w *World, id string) {
	b := w.Job(id, "alice").GPUs(1, 1).Models("A100")
	b.Job.Spec.Labels = map[string]string{model.LabelWorkload: model.WorkloadInference}
}

// Inference replicas keep off InfiniBand nodes while others fit: five
// one-GPU replicas go to the inference nodes, not onto the half-used IB
// node the scorer prefers; with the inference nodes full, one more is still
// placed, on the IB node. A one-GPU job without the label goes where the
// scorer says: the IB node (so the test tells the rule from the scorer).
func TestInferenceKeepsOffInfiniBand(t *testing.T) {
	w := inferenceWorld(5)
	for _, id := range []string{"r1", "r2", "r3", "r4", "r5"} {
		replica(w, id)
	}
	p := schedule(t, w)
	for _, id := range []string{"r1", "r2", "r3", "r4", "r5"} {
		b, ok := bindOf(p, id)
		if !ok || !strings.HasPrefix(b.Nodes[0].Node, "inf") {
			t.Errorf("replica %s on %+v, want an inference node", id, b.Nodes)
		}
	}

	w = inferenceWorld(1)
	replica(w, "r1")
	replica(w, "r2")
	replica(w, "r3")
	p = schedule(t, w)
	onIB := 0
	for _, id := range []string{"r1", "r2", "r3"} {
		b, ok := bindOf(p, id)
		if !ok {
			t.Fatalf("replica %s not placed: %+v", id, p.Pending)
		}
		if b.Nodes[0].Node == "ib-1" || strings.HasPrefix(b.Nodes[0].Node, "ib") {
			onIB++
		}
	}
	if onIB != 1 {
		t.Errorf("%d replicas on the IB node with one inference node free, want exactly the one that did not fit elsewhere", onIB)
	}

	w = inferenceWorld(1)
	w.Job("plain", "alice").GPUs(1, 1).Models("A100")
	p = schedule(t, w)
	expect(t, p, "plain", sched.ReasonNone)
	if b, _ := bindOf(p, "plain"); !strings.HasPrefix(b.Nodes[0].Node, "ib") {
		t.Errorf("the scorer put an unlabelled one-GPU job on %s, not on the IB node: the test cannot tell the rule from the scorer", b.Nodes[0].Node)
	}
}
