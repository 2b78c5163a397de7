package server

import (
	"context"
	"strings"
	"testing"
	"time"
)

// An update changes what the autoscaler reads in place, with an Updated
// event naming it and the desired count moved into new bounds; the
// replicas run on. A change of what shapes a replica is refused naming the
// field, another tenant's endpoint is Forbidden, an unknown one NotFound,
// and the same spec changes nothing.
func TestUpdateEndpoint(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.createEndpoint(copilot, strings.Replace(chatEndpoint, "min_replicas: 1", "min_replicas: 3", 1))
	h.reconcile()
	replicas := h.replicaJobsOf("chat")
	if len(replicas) != 3 {
		t.Fatalf("%d replicas, want 3", len(replicas))
	}

	tighter := strings.NewReplacer("p95_ms: 150", "p95_ms: 120", "T4: 15", "T4: 12", "max_replicas: 4", "max_replicas: 2",
		"min_replicas: 1", "min_replicas: 2").Replace(chatEndpoint)
	e, err := h.srv.UpdateEndpoint(ctx, copilot, parseEndpoint(t, tighter))
	if err != nil {
		t.Fatal(err)
	}
	ev := e.Events[len(e.Events)-1]
	if e.Spec.SLO.P95 != 120*time.Millisecond || e.Spec.Throughput["T4"] != 12 || e.Spec.MaxReplicas != 2 || e.Desired != 2 ||
		ev.Kind != EventUpdated || ev.From != 3 || ev.To != 2 ||
		ev.Reason != "copilot changed min_replicas 3 → 2, max_replicas 4 → 2, slo.p95 150ms → 120ms, throughput: desired 3 → 2" {
		t.Fatalf("updated: %+v desired %d, event %+v", e.Spec, e.Desired, ev)
	}
	stored, _, err := h.srv.loadEndpoint(ctx, admin, "chat")
	if err != nil || stored.Spec.SLO.P95 != 120*time.Millisecond || stored.Desired != 2 {
		t.Fatalf("stored: %+v, %v", stored, err)
	}
	for _, j := range replicas {
		if h.job(j.ID).Status.State.Terminal() {
			t.Errorf("replica %s ended by an update", j.ID)
		}
	}
	if again, err := h.srv.UpdateEndpoint(ctx, copilot, parseEndpoint(t, tighter)); err != nil || len(again.Events) != len(e.Events) {
		t.Errorf("the same spec again: %v, %d events (want %d)", err, len(again.Events), len(e.Events))
	}

	for _, c := range []struct {
		name, doc string
		p         Principal
		code      Code
		field     string
	}{
		{"command", strings.Replace(tighter, "model: llama,", "model: llama, command: [vllm, serve],", 1), copilot, CodeInvalidSpec, "command"},
		{"resources", strings.Replace(tighter, "gpu_milli: 250", "gpu_milli: 500", 1), copilot, CodeInvalidSpec, "resources"},
		{"priority", strings.Replace(tighter, "model: llama,", "model: llama, priority: spot,", 1), copilot, CodeInvalidSpec, "priority"},
		{"placement", strings.Replace(tighter, "model: llama,", "model: llama, placement: {regions: [eastus]},", 1), copilot, CodeInvalidSpec, "placement"},
		{"another tenant", tighter, Principal{Tenant: "acme"}, CodeForbidden, ""},
		{"unknown", strings.Replace(tighter, "name: chat", "name: nope", 1), copilot, CodeNotFound, ""},
	} {
		_, err := h.srv.UpdateEndpoint(ctx, c.p, parseEndpoint(t, c.doc))
		if !isCode(err, c.code) || (c.field != "" && err.(*Error).Field != c.field) {
			t.Errorf("%s: %v, want %s on %q", c.name, err, c.code, c.field)
		}
	}
	bad := parseEndpoint(t, tighter)
	bad.MaxReplicas = 1
	if _, err := h.srv.UpdateEndpoint(ctx, copilot, bad); !isCode(err, CodeInvalidSpec) || err.(*Error).Field != "max_replicas" {
		t.Errorf("max_replicas under min_replicas: %v", err)
	}
	if after, _, _ := h.srv.loadEndpoint(ctx, admin, "chat"); len(after.Events) != len(e.Events) || after.Spec.Priority != e.Spec.Priority {
		t.Errorf("a refused update changed the endpoint: %+v", after)
	}
}
