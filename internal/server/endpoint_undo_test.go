package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/endpoint"
	"github.com/allot-dev/allot/internal/model"
)

// An undo rolls an endpoint back to the template it had before its last
// template change, as kubectl rollout undo does: in the middle of a
// rollout, the old replicas are current again and the new one goes; the
// bounds stay; the earlier template is kept across a server restart, and a
// second undo rolls forward again. An endpoint whose template never
// changed, or another tenant, is refused.
func TestEndpointUndo(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	v1 := strings.Replace(chatEndpoint, "min_replicas: 1", "min_replicas: 2", 1)
	h.createEndpoint(copilot, v1)
	h.cycle()
	first := h.replicaJobsOf("chat")
	t1 := h.endpointStatus("chat").Template
	if _, err := h.srv.UndoEndpoint(ctx, copilot, "chat"); !isCode(err, CodeConflict) {
		t.Fatalf("undo of a template that never changed: %v, want Conflict", err)
	}

	v2 := strings.Replace(v1, "max_replicas: 4", "max_replicas: 3, env: {MODEL_REVISION: '2'}", 1)
	if _, err := h.srv.UpdateEndpoint(ctx, copilot, parseEndpoint(t, v2)); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	h.cycle()
	st := h.endpointStatus("chat")
	t2 := st.Template
	if t2 == t1 || st.PreviousTemplate != t1 || countOutdated(st) != 2 || len(st.Replicas) != 3 {
		t.Fatalf("mid-rollout: template %s (was %s), previous %s, replicas %+v", t2, t1, st.PreviousTemplate, st.Replicas)
	}
	if _, err := h.srv.UndoEndpoint(ctx, Principal{Tenant: "acme"}, "chat"); !isCode(err, CodeForbidden) {
		t.Errorf("another tenant's undo: %v, want Forbidden", err)
	}

	h.clock.Advance(time.Minute)
	e, err := h.srv.UndoEndpoint(ctx, copilot, "chat")
	if err != nil {
		t.Fatal(err)
	}
	if ev := e.Events[len(e.Events)-1]; ev.Kind != endpoint.EventRolledBack || !strings.Contains(ev.Reason, "copilot rolled the endpoint back from template "+t2) {
		t.Errorf("undo event %+v", ev)
	}
	if h.endpointStatus("chat").Template != t1 || e.Spec.MaxReplicas != 3 || len(e.Spec.Env) != 0 {
		t.Errorf("after the undo: template %s (want %s), max_replicas %d (want 3: bounds stay), env %v (want none)",
			h.endpointStatus("chat").Template, t1, e.Spec.MaxReplicas, e.Spec.Env)
	}
	h.restart()
	st = h.endpointStatus("chat")
	if st.Template != t1 || st.PreviousTemplate != t2 {
		t.Fatalf("after a server restart: template %s, previous %s; want %s and %s", st.Template, st.PreviousTemplate, t1, t2)
	}
	for range 5 {
		h.reconcile()
		h.cycle()
		h.report("chat", 1)
	}
	st = h.endpointStatus("chat")
	if countOutdated(st) != 0 || len(st.Replicas) != 2 || st.Events[len(st.Events)-1].Kind != endpoint.EventRolledOut {
		t.Fatalf("after the undo rolled out: %+v, last event %+v", st.Replicas, st.Events[len(st.Events)-1])
	}
	for _, j := range first {
		if got := h.job(j.ID).Status.State; got != model.StateRunning {
			t.Errorf("replica %s of the first template is %s, want Running: the undo made it current again", j.ID, got)
		}
	}

	e, err = h.srv.UndoEndpoint(ctx, copilot, "chat")
	if err != nil {
		t.Fatal(err)
	}
	if h.endpointStatus("chat").Template != t2 || e.Spec.Env["MODEL_REVISION"] != "2" {
		t.Errorf("a second undo: template %s, env %v; want %s with MODEL_REVISION 2", h.endpointStatus("chat").Template, e.Spec.Env, t2)
	}
	// A restart is undone too: the restart time is part of the template.
	h.clock.Advance(time.Minute)
	if e, err = h.srv.RestartEndpoint(ctx, copilot, "chat"); err != nil || h.endpointStatus("chat").Template == t2 {
		t.Fatalf("restart: %v, template %s", err, h.endpointStatus("chat").Template)
	}
	if e, err = h.srv.UndoEndpoint(ctx, copilot, "chat"); err != nil || h.endpointStatus("chat").Template != t2 {
		t.Errorf("undo of a restart: %v, template %s, want %s", err, h.endpointStatus("chat").Template, t2)
	}
}
