package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server/servertest"
)

func nodeOf(h *harness, name string) NodeStatus {
	h.t.Helper()
	for _, n := range h.srv.Nodes() {
		if n.Node.Name == name {
			return n
		}
	}
	h.t.Fatalf("no node %s", name)
	return NodeStatus{}
}

// TestDrainNode: every eastus T4 node is drained while a job runs on one;
// the job runs on, a new one waits, saying why, through a restart, and
// starts on the one node resumed.
func TestDrainNode(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	const doc = `{name: %s, tenant: copilot, duration: 1h, resources: {gpu_models: [T4]}, placement: {regions: [eastus]}}`
	r := h.submit(copilot, strings.Replace(doc, "%s", "r", 1))
	h.cycle()
	on := h.job(r.ID).Status.Allocations
	if len(on) == 0 {
		t.Fatalf("r did not start: %s", h.job(r.ID).Status.Detail)
	}
	t4 := []string{"eastus-t4x4-01", "eastus-t4x4-02", "eastus-t4x1-01", "eastus-t4x1-02"}
	for _, n := range t4 {
		got, err := h.srv.DrainNode(ctx, admin, n, "  firmware update  ")
		if err != nil {
			t.Fatal(err)
		}
		if got.Node.Health != model.NodeDraining || got.Drain == nil || got.Drain.Reason != "firmware update" || got.Drain.By != "admin" {
			t.Fatalf("drained %s: %+v %+v", n, got.Node.Health, got.Drain)
		}
	}
	q := h.submit(copilot, strings.Replace(doc, "%s", "q", 1))
	h.cycle()
	if j := h.job(r.ID); j.Status.State != model.StateRunning || j.Status.Allocations[0].Node != on[0].Node {
		t.Fatalf("r on a drained node: %s on %+v, want running on %s", j.Status.State, j.Status.Allocations, on[0].Node)
	}
	if j := h.job(q.ID); j.Status.State != model.StateQueued || !strings.Contains(j.Status.Detail, "all 4 capable nodes are Draining") {
		t.Fatalf("q: %s %s %q, want queued, saying the nodes are Draining", j.Status.State, j.Status.Reason, j.Status.Detail)
	}

	h.restart()
	if n := nodeOf(h, "eastus-t4x1-01"); n.Node.Health != model.NodeDraining || n.Drain == nil {
		t.Fatalf("after a restart: %s %+v", n.Node.Health, n.Drain)
	}
	h.cycle()
	if j := h.job(q.ID); j.Status.State != model.StateQueued {
		t.Fatalf("q after a restart: %s on %+v", j.Status.State, j.Status.Allocations)
	}

	free := t4[0]
	if free == on[0].Node {
		free = t4[1]
	}
	if _, err := h.srv.ResumeNode(ctx, admin, free); err != nil {
		t.Fatal(err)
	}
	h.cycle()
	if j := h.job(q.ID); j.Status.State != model.StateRunning || j.Status.Allocations[0].Node != free {
		t.Fatalf("q after a resume: %s on %+v (%s), want running on %s", j.Status.State, j.Status.Allocations, j.Status.Detail, free)
	}
	// Resuming a node that is not drained changes nothing.
	if n, err := h.srv.ResumeNode(ctx, admin, free); err != nil || n.Node.Health != model.NodeReady || n.Drain != nil {
		t.Fatalf("resume again: %+v %v", n, err)
	}
	audit, _, err := h.srv.Audit(ctx, admin, AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var drains, resumes int
	for _, a := range audit {
		switch a.Action {
		case ActionNodeDrain:
			drains++
		case ActionNodeResume:
			resumes++
		}
	}
	if drains != 4 || resumes != 1 {
		t.Errorf("audit: %d drains and %d resumes, want 4 and 1", drains, resumes)
	}
}

func TestDrainNodeRefusals(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	for _, tc := range []struct {
		name      string
		p         Principal
		node, why string
		code      Code
		field     string
	}{
		{"a tenant", copilot, "eastus-t4x1-01", "mine now", CodeForbidden, ""},
		{"no such node", admin, "nope", "x", CodeNotFound, "name"},
		{"no reason", admin, "eastus-t4x1-01", " ", CodeInvalidSpec, "reason"},
		{"a reason on two lines", admin, "eastus-t4x1-01", "a\nb", CodeInvalidSpec, "reason"},
	} {
		_, err := h.srv.DrainNode(ctx, tc.p, tc.node, tc.why)
		if se, ok := err.(*Error); !ok || se.Code != tc.code || se.Field != tc.field {
			t.Errorf("%s: %v, want %s on %q", tc.name, err, tc.code, tc.field)
		}
	}
	if _, err := h.srv.ResumeNode(ctx, copilot, "eastus-t4x1-01"); err == nil {
		t.Error("a tenant resumed a node")
	}
	if n := nodeOf(h, "eastus-t4x1-01"); n.Node.Health != model.NodeReady || n.Drain != nil {
		t.Errorf("a refused drain changed the node: %s %+v", n.Node.Health, n.Drain)
	}
}

// TestDrainFromTheFleetFile: a node the fleet file says is Draining is
// drained as if by the administrator, with simulated nodes and under
// agents, and resumes.
func TestDrainFromTheFleetFile(t *testing.T) {
	for _, nodes := range []Nodes{Simulated{}, Agents{Timeout: 2 * time.Second}} {
		ctx := context.Background()
		fleet, ten := servertest.Lab(t)
		fleet.Nodes[0].Health = model.NodeDraining
		srv, err := New(ctx, Config{Store: servertest.Store(t, ""), Fleet: fleet, Tenancy: ten, Clock: NewManualClock(t0), Nodes: nodes})
		if err != nil {
			t.Fatal(err)
		}
		name := fleet.Nodes[0].Name
		if _, agents := nodes.(Agents); agents {
			if err := srv.RegisterNode(ctx, name, h100s(8), ""); err != nil {
				t.Fatal(err)
			}
		}
		n := srv.nodeStatus(name)
		if n.Node.Health != model.NodeDraining || n.Drain == nil || n.Drain.By != "fleet file" {
			t.Fatalf("%T: %s %+v, want Draining by the fleet file", nodes, n.Node.Health, n.Drain)
		}
		if n, err = srv.ResumeNode(ctx, admin, name); err != nil || n.Node.Health != model.NodeReady {
			t.Fatalf("%T: resumed: %s %v", nodes, n.Node.Health, err)
		}
	}
}

// TestDrainOutlivesTheAgent: in agent mode a drained node stays drained
// through heartbeats, a missed heartbeat (NotReady, then Draining again)
// and its agent registering anew.
func TestDrainOutlivesTheAgent(t *testing.T) {
	ctx := context.Background()
	srv, clock := agentHarness(t)
	for _, n := range []string{"h100-01", "h100-02"} {
		if err := srv.RegisterNode(ctx, n, h100s(8), ""); err != nil {
			t.Fatal(err)
		}
	}
	health := func(n string) model.Health {
		h, _ := srv.cache.nodeHealth()
		return h[n]
	}
	if _, err := srv.DrainNode(ctx, admin, "h100-01", "disk"); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		what string
		do   func() error
		want model.Health
	}{
		{"heartbeat", func() error { return srv.Heartbeat(ctx, "h100-01") }, model.NodeDraining},
		{"missed heartbeats", func() error {
			clock.Advance(3 * time.Second)
			if err := srv.Heartbeat(ctx, "h100-02"); err != nil {
				return err
			}
			return srv.CheckHeartbeats(ctx)
		}, model.NodeNotReady},
		{"heartbeat again", func() error { return srv.Heartbeat(ctx, "h100-01") }, model.NodeDraining},
		{"registered anew", func() error { return srv.RegisterNode(ctx, "h100-01", h100s(8), "") }, model.NodeDraining},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if got := health("h100-01"); got != s.want {
			t.Fatalf("after %s: %s, want %s", s.what, got, s.want)
		}
	}
	if health("h100-02") != model.NodeReady {
		t.Fatalf("h100-02: %s", health("h100-02"))
	}
}

// An administrator's job why names the drains of the drained nodes the
// job waits for, with their reasons; a tenant's names none (nodes are the
// administrator's).
func TestWhyNamesDrains(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	for _, n := range []string{"eastus-a100x1-01", "eastus-a100x1-02"} {
		if _, err := h.srv.DrainNode(ctx, admin, n, "PSU swap OPS-1"); err != nil {
			t.Fatal(err)
		}
	}
	copilot := Principal{Tenant: "copilot"}
	j := h.submit(copilot, `{name: a100, tenant: copilot, command: [x], resources: {gpus_per_instance: 1, gpu_models: [A100]}, placement: {regions: [eastus]}}`)
	if err := h.srv.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := h.srv.Explain(ctx, admin, j.ID)
	if err != nil || w.Job.Status.Reason != "NoReadyNodes" || len(w.Drains) != 2 || w.Drains[0].Node != "eastus-a100x1-01" ||
		w.Drains[0].Reason != "PSU swap OPS-1" || w.Drains[0].By != "admin" || w.Drains[1].Node != "eastus-a100x1-02" {
		t.Fatalf("admin's why: %s %q, drains %+v (%v); want both drains named", w.Job.Status.Reason, w.Job.Status.Detail, w.Drains, err)
	}
	if w, err := h.srv.Explain(ctx, copilot, j.ID); err != nil || len(w.Drains) != 0 {
		t.Errorf("the tenant's why: drains %+v (%v), want none", w.Drains, err)
	}
}
