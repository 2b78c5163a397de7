package server

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// A job runs only on nodes it does not exclude and, when it names some, on
// those; a name that is no node is refused at submit and at update, naming
// the field and the nearest node; job update replaces the excluded nodes
// of a queued job, which a restart keeps.
func TestExcludeNodes(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	copilot := Principal{Tenant: "copilot"}
	doc := func(name, extra string) string {
		return `{name: ` + name + `, tenant: copilot, command: [x], resources: {gpus_per_instance: 1, gpu_models: [T4]}, placement: {regions: [eastus]` + extra + `}}`
	}
	first := h.submit(copilot, doc("first", ""))
	h.cycle()
	usual := h.job(first.ID).Status.Allocations[0].Node
	h.cancel(first.ID)
	h.cycle()

	j := h.submit(copilot, doc("away", ", exclude_nodes: ["+usual+"]"))
	h.cycle()
	got := h.job(j.ID)
	if !got.Status.State.Holds() || got.Status.Allocations[0].Node == usual {
		t.Fatalf("a job excluding %s: %s on %v, want it running elsewhere", usual, got.Status.State, got.Status.Allocations)
	}

	_, err := h.srv.Submit(ctx, copilot, h.parse(doc("typo", ", exclude_nodes: [eastus-t4x1-1]")))
	var e *Error
	if !errors.As(err, &e) || e.Field != "placement.exclude_nodes[0]" || !strings.Contains(e.Msg, `no node "eastus-t4x1-1" (did you mean eastus-t4x1-01?)`) {
		t.Fatalf("an unknown node: %v, want InvalidSpec on placement.exclude_nodes[0] with a suggestion", err)
	}

	_, err = h.srv.Submit(ctx, copilot, h.parse(doc("only", ", nodes: [eastus-t4x1-01, westeurope-t4x1-9]")))
	if !errors.As(err, &e) || e.Field != "placement.nodes[1]" {
		t.Fatalf("an unknown node in placement.nodes: %v, want InvalidSpec on placement.nodes[1]", err)
	}
	pinned := h.submit(copilot, doc("pinned", ", nodes: ["+usual+"]"))
	h.cycle()
	if got := h.job(pinned.ID); !got.Status.State.Holds() || got.Status.Allocations[0].Node != usual {
		t.Fatalf("a job only on %s: %s %s %s on %v", usual, got.Status.State, got.Status.Reason, got.Status.Detail, got.Status.Allocations)
	}

	later := h.submit(copilot, doc("later", ""))
	waiting := h.submit(copilot, `{name: nightly, tenant: copilot, command: [x], resources: {gpus_per_instance: 1, gpu_models: [T4]}, begin: `+
		h.clock.Now().Add(time.Hour).Format(time.RFC3339)+`}`)
	nodes := []string{"eastus-t4x1-01", "eastus-t4x1-02"}
	upd, err := h.srv.UpdateQueued(ctx, copilot, waiting.ID, QueuedChange{ExcludeNodes: &nodes})
	if err != nil || !slices.Equal(upd.Spec.Placement.ExcludeNodes, nodes) {
		t.Fatalf("update: %v (%v), want %v", upd.Spec.Placement.ExcludeNodes, err, nodes)
	}
	bad := []string{"eastus-t4x1-01", "nosuch"}
	if _, err := h.srv.UpdateQueued(ctx, copilot, waiting.ID, QueuedChange{ExcludeNodes: &bad}); !errors.As(err, &e) ||
		e.Field != "placement.exclude_nodes[1]" {
		t.Fatalf("update with an unknown node: %v, want refused on placement.exclude_nodes[1]", err)
	}
	h.restart()
	if got := h.job(waiting.ID).Spec.Placement.ExcludeNodes; !slices.Equal(got, nodes) {
		t.Fatalf("after a restart: %v, want %v", got, nodes)
	}
	only, typo := []string{"eastus-t4x4-01"}, []string{"eastus-t4x4-1"}
	if upd, err = h.srv.UpdateQueued(ctx, copilot, waiting.ID, QueuedChange{Nodes: &only}); err != nil ||
		!slices.Equal(upd.Spec.Placement.Nodes, only) || !slices.Equal(upd.Spec.Placement.ExcludeNodes, nodes) {
		t.Fatalf("only on: %+v (%v), want nodes %v and the exclusions kept", upd.Spec.Placement, err, only)
	}
	if _, err := h.srv.UpdateQueued(ctx, copilot, waiting.ID, QueuedChange{Nodes: &typo}); !errors.As(err, &e) ||
		e.Field != "placement.nodes[0]" {
		t.Fatalf("update with an unknown node: %v, want refused on placement.nodes[0]", err)
	}
	none := []string{}
	if upd, err = h.srv.UpdateQueued(ctx, copilot, waiting.ID, QueuedChange{Nodes: &none, ExcludeNodes: &none}); err != nil ||
		len(upd.Spec.Placement.ExcludeNodes) != 0 || len(upd.Spec.Placement.Nodes) != 0 {
		t.Fatalf("removed: %+v (%v), want none", upd.Spec.Placement, err)
	}
	h.cycle()
	if got := h.job(later.ID); !got.Status.State.Holds() {
		t.Errorf("a job without exclusions after the restart: %s %s", got.Status.State, got.Status.Reason)
	}
}
