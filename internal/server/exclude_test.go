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

// A job allowed in two regions gets a region only where its node lists
// leave it a node; a change of the lists that rules out the chosen region
// lets it go where it may instead of waiting there.
func TestNodeListsAndChosenRegion(t *testing.T) {
	h := newHarness(t)
	copilot := Principal{Tenant: "copilot"}
	doc := func(name, extra string) string {
		return `{name: ` + name + `, tenant: copilot, command: [x], resources: {gpus_per_instance: 1, gpu_models: [T4]}, placement: {regions: [eastus, westus]` + extra + `}}`
	}
	// Only a westus node: no choice to make (eastus, first and as cheap,
	// has none of its nodes).
	pinned := h.submit(copilot, doc("pinned", ", nodes: [westus-t4x1-01]"))
	if r := h.job(pinned.ID).Status.Region; r != "" {
		t.Fatalf("a job only on westus-t4x1-01 was given region %q, want none", r)
	}
	h.cycle()
	if got := h.job(pinned.ID); !got.Status.State.Holds() || got.Status.Allocations[0].Node != "westus-t4x1-01" {
		t.Fatalf("pinned: %s %s on %v", got.Status.State, got.Status.Detail, got.Status.Allocations)
	}

	// A waiting job's region, then nodes in the other region only.
	later := h.submit(copilot, doc("later", "")[:len(doc("later", ""))-1]+", begin: "+h.clock.Now().Add(time.Hour).Format(time.RFC3339)+"}")
	chosen := h.job(later.ID).Status.Region
	other := map[string]string{"eastus": "westus-t4x4-01", "westus": "eastus-t4x1-02"}[chosen]
	if other == "" {
		t.Fatalf("no region chosen for a job allowed in two: %q", chosen)
	}
	nodes, now := []string{other}, h.clock.Now()
	upd, err := h.srv.UpdateQueued(t.Context(), copilot, later.ID, QueuedChange{Nodes: &nodes, Begin: &now})
	if err != nil {
		t.Fatal(err)
	}
	if upd.Status.Region == chosen {
		t.Fatalf("the job keeps region %s, where none of its nodes (%v) is", chosen, nodes)
	}
	h.cycle()
	if got := h.job(later.ID); !got.Status.State.Holds() || got.Status.Allocations[0].Node != other {
		t.Fatalf("after the update: %s %s %s on %v, want it on %s", got.Status.State, got.Status.Reason, got.Status.Detail, got.Status.Allocations, other)
	}
}
