package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
)

// GET /v1/nodes/{name} describes a node to the admin, each GPU on its
// own; a tenant is refused, an unknown node is NotFound. A follower passes
// it to the leader, which alone knows the agents' last heartbeats.
func TestNodeRoute(t *testing.T) {
	e := newEnv(t, 0, 0)
	rec := e.do("GET", "/v1/nodes/eastus-t4x4-01", e.admin, nil)
	d := decode[NodeDetail](t, rec)
	if rec.Code != http.StatusOK || d.Name != "eastus-t4x4-01" || len(d.GPUList) != 4 || d.GPUList[3].Index != 3 ||
		d.GPUList[0].Model != "T4" || d.GPUList[0].Jobs == nil || d.HealthSince == nil || d.FailedAttempts == nil ||
		!strings.Contains(rec.Body.String(), `"failed_attempts":[]`) {
		t.Fatalf("node: %d %s", rec.Code, rec.Body)
	}
	if rec := e.do("GET", "/v1/nodes/eastus-t4x4-01", e.tokens["acme"], nil); rec.Code != http.StatusForbidden {
		t.Errorf("a tenant: %d %s, want 403", rec.Code, rec.Body)
	}
	if rec := e.do("GET", "/v1/nodes/eastus-t4x4-9", e.admin, nil); rec.Code != http.StatusNotFound ||
		!strings.Contains(rec.Body.String(), "did you mean") {
		t.Errorf("an unknown node: %d %s, want 404 with the nearest", rec.Code, rec.Body)
	}
	for path, follower := range map[string]bool{"/v1/nodes": true, "/v1/nodes/n1": false, "/v1/nodes/n1/assignments": false,
		"/v1/reservations": true, "/v1/reservations/r": false} {
		if got := servedByFollower(httptest.NewRequest("GET", path, nil)); got != follower {
			t.Errorf("GET %s served by a follower: %v, want %v", path, got, follower)
		}
	}
}

// A queued job's Why names the nodes its next attempt keeps off; a job
// that is not queued has none to name.
func TestWhyAvoidNodes(t *testing.T) {
	j := &model.Job{ID: "j", Status: model.JobStatus{State: model.StateQueued, Attempts: []model.Attempt{
		{Number: 1, Nodes: []string{"n1"}, Reason: "Failed", FailedNode: "n1"}}}}
	if got := newWhy(server.Why{Job: j}).AvoidNodes; len(got) != 1 || got[0] != "n1" {
		t.Errorf("queued: avoid_nodes %v, want [n1]", got)
	}
	j.Status.State = model.StateRunning
	if got := newWhy(server.Why{Job: j}).AvoidNodes; got != nil {
		t.Errorf("running: avoid_nodes %v, want none", got)
	}
}

// The drains an administrator's Why names reach the answer, as JSON with
// each node's reason, drainer and time; a Why without them leaves the
// field out.
func TestWhyDrains(t *testing.T) {
	j := &model.Job{ID: "j", Status: model.JobStatus{State: model.StateQueued}}
	at := time.Date(2026, 12, 4, 15, 0, 0, 0, time.UTC)
	b, err := json.Marshal(newWhy(server.Why{Job: j, Drains: []server.NamedDrain{
		{Node: "n1", NodeDrain: server.NodeDrain{Reason: "PSU swap", By: "admin", At: at}}}}))
	if err != nil || !strings.Contains(string(b), `"drains":[{"node":"n1","reason":"PSU swap","by":"admin","at":"2026-12-04T15:00:00Z"}]`) {
		t.Errorf("why with a drain: %s %v", b, err)
	}
	if b, _ := json.Marshal(newWhy(server.Why{Job: j})); strings.Contains(string(b), "drains") {
		t.Errorf("why without drains: %s", b)
	}
}
