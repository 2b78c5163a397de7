package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/endpoint"
	"github.com/allot-dev/allot/internal/model"
)

// An update changes what the autoscaler reads in place, with an Updated
// event naming it and the desired count moved into new bounds; the
// replicas run on. A change of tenant, or a template whose replica could
// never start, is refused naming the field; another tenant's endpoint is
// Forbidden, an unknown one NotFound, and the same spec changes nothing.
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
		ev.Kind != endpoint.EventUpdated || ev.From != 3 || ev.To != 2 ||
		ev.Reason != "copilot changed min_replicas 3 → 2, max_replicas 4 → 2, slo.p95 150ms → 120ms, throughput: desired 3 → 2" {
		t.Fatalf("updated: %+v desired %d, event %+v", e.Spec, e.Desired, ev)
	}
	stored, err := h.srv.Endpoint(ctx, admin, "chat")
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
		{"tenant", strings.Replace(tighter, "tenant: copilot", "tenant: acme", 1), admin, CodeInvalidSpec, "tenant"},
		{"a GPU model no SKU has", strings.ReplaceAll(tighter, "T4", "Z999"), copilot, CodeSkuNotAvailable, ""},
		{"a reservation not the tenant's", strings.Replace(tighter, "model: llama,", "model: llama, placement: {reservation: nope},", 1),
			copilot, CodeInvalidSpec, "placement.reservation"},
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
	if after := h.endpointStatus("chat"); len(after.Events) != len(e.Events) || after.Spec.Priority != e.Spec.Priority {
		t.Errorf("a refused update changed the endpoint: %+v", after)
	}
}

// A new template rolls over the replicas without ever running fewer than
// desired: one replica of the new template beyond the desired count at a
// time (a quarter of 3, rounded up), an old one stopped as each new one
// serves (it has reported, or run for the lead time), until a RolledOut
// event; and a rollback mid-way makes the old replicas current again.
func TestEndpointRollingUpdate(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	three := strings.Replace(chatEndpoint, "min_replicas: 1", "min_replicas: 3", 1)
	h.createEndpoint(copilot, three)
	h.cycle()
	first := h.replicaJobsOf("chat")
	oldTemplate := first[0].Spec.Labels[endpoint.LabelTemplate]
	if len(first) != 3 || oldTemplate == "" {
		t.Fatalf("%d replicas, template label %q", len(first), oldTemplate)
	}

	v2 := strings.Replace(three, "model: llama,", "model: llama, command: [allot, demo, serve, --v2],", 1)
	e, err := h.srv.UpdateEndpoint(ctx, copilot, parseEndpoint(t, v2))
	if err != nil {
		t.Fatal(err)
	}
	newTemplate := h.endpointStatus("chat").Template
	if ev := e.Events[len(e.Events)-1]; ev.Kind != endpoint.EventUpdated || !strings.Contains(ev.Reason, "copilot changed command; rolling out template "+newTemplate) ||
		e.RolloutSince.IsZero() || e.Unlabelled != oldTemplate {
		t.Fatalf("update: %+v, rollout since %v, unlabelled %q", ev, e.RolloutSince, e.Unlabelled)
	}
	for _, j := range first {
		if h.job(j.ID).Status.State != model.StateRunning {
			t.Fatalf("replica %s stopped by the update itself", j.ID)
		}
	}

	// The new replica runs but has not reported: it does not serve yet, so
	// no old one stops; once it has run for the lead time (10s) it counts.
	h.reconcile()
	h.cycle()
	h.reconcile()
	if outdated := countOutdated(h.endpointStatus("chat")); outdated != 3 {
		t.Fatalf("%d outdated replicas before the new one served, want 3", outdated)
	}
	h.clock.Advance(10 * time.Second)
	h.reconcile()
	if outdated := countOutdated(h.endpointStatus("chat")); outdated != 2 {
		t.Fatalf("%d outdated replicas after the new one ran for the lead time, want 2", outdated)
	}
	h.restart() // the rollout goes on from the store

	steps := 0
	for ; steps < 10; steps++ {
		h.reconcile()
		st := h.endpointStatus("chat")
		run, outdated := 0, 0
		for _, r := range st.Replicas {
			if r.State == model.StateRunning {
				run++
			}
			if r.Outdated {
				outdated++
				if r.Template != oldTemplate {
					t.Fatalf("outdated replica %s of template %q", r.Job, r.Template)
				}
			}
		}
		if run < 3 || len(st.Replicas) > 4 {
			t.Fatalf("step %d: %d running and %d live, want at least 3 running and at most 4 live: %+v", steps, run, len(st.Replicas), st.Replicas)
		}
		if outdated == 0 {
			break
		}
		h.cycle()
		h.report("chat", 1) // the replicas that run report: they serve
	}
	st := h.endpointStatus("chat")
	ev := st.Events[len(st.Events)-1]
	if ev.Kind != endpoint.EventRolledOut || !strings.Contains(ev.Reason, "every replica runs template "+newTemplate+" (3 live)") ||
		!st.RolloutSince.IsZero() || len(st.Replicas) != 3 || steps < 2 {
		t.Fatalf("after %d steps: %d replicas, last event %+v, rollout since %v", steps, len(st.Replicas), ev, st.RolloutSince)
	}
	for _, r := range st.Replicas {
		j := h.job(r.Job)
		if r.Outdated || j.Spec.Labels[endpoint.LabelTemplate] != newTemplate || j.Spec.Command[len(j.Spec.Command)-1] != "--v2" {
			t.Errorf("replica %s after the rollout: %+v %v", r.Job, r, j.Spec.Command)
		}
	}
	for _, j := range first {
		if got := h.job(j.ID).Status.State; got != model.StateCanceled {
			t.Errorf("old replica %s is %s, want Canceled", j.ID, got)
		}
	}

	// Roll forward to v3, then back to v2 before any v3 replica runs: the
	// v3 replica is stopped, the v2 ones serve on.
	v3 := strings.Replace(v2, "--v2", "--v3", 1)
	if _, err := h.srv.UpdateEndpoint(ctx, copilot, parseEndpoint(t, v3)); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	if st := h.endpointStatus("chat"); len(st.Replicas) != 4 {
		t.Fatalf("v3: %d replicas, want 3 and one of v3 beyond: %+v", len(st.Replicas), st.Replicas)
	}
	if _, err := h.srv.UpdateEndpoint(ctx, copilot, parseEndpoint(t, v2)); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	st = h.endpointStatus("chat")
	if ev := st.Events[len(st.Events)-1]; len(st.Replicas) != 3 || ev.Kind != endpoint.EventRolledOut {
		t.Fatalf("back to v2: %+v, last event %+v", st.Replicas, ev)
	}
	for _, r := range st.Replicas {
		if r.Outdated || r.State != model.StateRunning || r.Template != newTemplate {
			t.Errorf("back to v2: %+v", r)
		}
	}
}

func countOutdated(st endpoint.Status) int {
	n := 0
	for _, r := range st.Replicas {
		if r.Outdated {
			n++
		}
	}
	return n
}

// A restart rolls every replica over to a new template of the same spec,
// through a server restart (the template, restart time included, is read
// back the same from the store), with Restarted and RolledOut events.
func TestEndpointRestart(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.createEndpoint(copilot, strings.Replace(chatEndpoint, "min_replicas: 1", "min_replicas: 2", 1))
	h.cycle()
	first := h.replicaJobsOf("chat")
	before := h.endpointStatus("chat").Template
	h.clock.Advance(time.Minute)
	e, err := h.srv.RestartEndpoint(ctx, copilot, "chat")
	if err != nil {
		t.Fatal(err)
	}
	if ev := e.Events[len(e.Events)-1]; ev.Kind != endpoint.EventRestarted || !strings.Contains(ev.Reason, "copilot restarted the endpoint") ||
		h.endpointStatus("chat").Template == before || e.RolloutSince.IsZero() {
		t.Fatalf("restart: %+v, template %s (was %s)", ev, h.endpointStatus("chat").Template, before)
	}
	if _, err := h.srv.RestartEndpoint(ctx, Principal{Tenant: "acme"}, "chat"); !isCode(err, CodeForbidden) {
		t.Errorf("another tenant's restart: %v", err)
	}
	restarted := h.endpointStatus("chat").Template
	h.restart()
	if got := h.endpointStatus("chat").Template; got != restarted {
		t.Fatalf("template after a server restart %s, want %s", got, restarted)
	}
	for range 10 {
		h.reconcile()
		if countOutdated(h.endpointStatus("chat")) == 0 {
			break
		}
		h.cycle()
		h.report("chat", 1)
	}
	st := h.endpointStatus("chat")
	if ev := st.Events[len(st.Events)-1]; ev.Kind != endpoint.EventRolledOut || len(st.Replicas) != 2 {
		t.Fatalf("after the restart: %+v, last event %+v", st.Replicas, ev)
	}
	for _, j := range first {
		if got := h.job(j.ID).Status.State; got != model.StateCanceled {
			t.Errorf("replica %s from before the restart is %s", j.ID, got)
		}
	}
}

// With the tenant's quota full, the default rollout's extra replica cannot
// start and the old replicas serve on; a rollout section of max_surge 0
// and max_unavailable 1 then replaces them in place, one at a time, never
// more than the desired count live or fewer than one under it serving.
func TestEndpointRolloutInPlace(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	// hobbyist may hold 4 NC GPUs in westus.
	const doc = `{name: hobby, tenant: hobbyist, model: m, resources: {gpus_per_instance: 1, gpu_models: [T4]},
  min_replicas: 4, max_replicas: 4, slo: {p95_ms: 150}, throughput: {T4: 15}, placement: {regions: [westus]}}`
	h.createEndpoint(admin, doc)
	h.cycle()
	v2 := strings.Replace(doc, "model: m,", "model: m, env: {MODEL_REVISION: '2'},", 1)
	if _, err := h.srv.UpdateEndpoint(ctx, admin, parseEndpoint(t, v2)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		h.reconcile()
		h.cycle()
		h.report("hobby", 1)
	}
	st := h.endpointStatus("hobby")
	if n := countOutdated(st); n != 4 || len(st.Replicas) != 5 {
		t.Fatalf("quota full: %d outdated of %d live, want the 4 old ones serving and 1 new one waiting: %+v", n, len(st.Replicas), st.Replicas)
	}
	for _, r := range st.Replicas {
		if !r.Outdated && (r.State != model.StateQueued || r.Reason != "QuotaExceeded") {
			t.Fatalf("the new replica is %s (%s), want Queued for QuotaExceeded", r.State, r.Reason)
		}
	}

	inPlace := strings.Replace(v2, "placement: {regions: [westus]}}", "placement: {regions: [westus]}, rollout: {max_surge: 0, max_unavailable: 1}}", 1)
	e, err := h.srv.UpdateEndpoint(ctx, admin, parseEndpoint(t, inPlace))
	if err != nil {
		t.Fatal(err)
	}
	if ev := e.Events[len(e.Events)-1]; !strings.Contains(ev.Reason, "admin changed rollout") {
		t.Fatalf("update of the rollout: %+v", ev)
	}
	for step := 0; ; step++ {
		h.reconcile()
		st := h.endpointStatus("hobby")
		running := 0
		for _, r := range st.Replicas {
			if r.State == model.StateRunning {
				running++
			}
		}
		if len(st.Replicas) > 4 || running < 3 {
			t.Fatalf("step %d: %d live, %d running; want at most 4 and at least 3: %+v", step, len(st.Replicas), running, st.Replicas)
		}
		if countOutdated(st) == 0 {
			if ev := st.Events[len(st.Events)-1]; ev.Kind != endpoint.EventRolledOut || len(st.Replicas) != 4 {
				t.Fatalf("done: %+v, last event %+v", st.Replicas, ev)
			}
			break
		}
		if step == 12 {
			t.Fatalf("no end after %d steps: %+v", step, st.Replicas)
		}
		h.cycle()
		h.report("hobby", 1)
	}
}
