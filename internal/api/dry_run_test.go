package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// POST /v1/jobs?dry_run=true answers the Why of the would-be job and
// stores nothing; a job a submit would refuse gets that refusal, and a
// dry_run that is not a boolean is refused naming it.
func TestDryRunRoute(t *testing.T) {
	e := newEnv(t, 0, 0)
	cop := e.tokens["copilot"]
	rec := e.do("POST", "/v1/jobs?dry_run=true", cop, []byte(chatJSON))
	var w struct {
		ID, State, Reason, Detail string
		EstimatedStart            *string `json:"estimated_start"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &w); err != nil || rec.Code != http.StatusOK || rec.Header().Get("Location") != "" ||
		w.State != "Queued" || !strings.HasPrefix(w.Detail, "would start now on eastus-") || w.EstimatedStart == nil {
		t.Fatalf("dry run: %d %s", rec.Code, rec.Body)
	}
	if rec := e.do("GET", "/v1/jobs", cop, nil); strings.Contains(rec.Body.String(), `"chat"`) {
		t.Errorf("a dry run stored the job: %s", rec.Body)
	}
	rec = e.do("POST", "/v1/jobs?dry_run=1", cop, []byte(`{"name":"big","resources":{"instance_count":100,"gpus_per_instance":8,"gpu_models":["H100"]}}`))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "SkuNotAvailable") {
		t.Errorf("dry run of a job no SKU can hold: %d %s", rec.Code, rec.Body)
	}
	for _, q := range []string{"dry_run=yes", "dry_run=true&dry_run=false"} {
		rec = e.do("POST", "/v1/jobs?"+q, cop, []byte(chatJSON))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"field":"dry_run"`) {
			t.Errorf("%s: %d %s, want 400 naming dry_run", q, rec.Code, rec.Body)
		}
	}
	rec = e.do("POST", "/v1/jobs?dry_run=false", cop, []byte(chatJSON))
	if rec.Code != http.StatusCreated {
		t.Errorf("dry_run=false: %d %s, want the job submitted", rec.Code, rec.Body)
	}
}

// POST /v1/jobs/batch?dry_run=true answers the Why of each would-be job
// in the order sent and stores nothing; a batch a submit would refuse gets
// that refusal with every problem; a dry_run that is not a boolean is
// refused naming it.
func TestBatchDryRunRoute(t *testing.T) {
	e := newEnv(t, 0, 0)
	cop := e.tokens["copilot"]
	two := []byte(`[{"name":"first","resources":{"gpu_milli":250,"gpu_models":["T4"]}},{"name":"second","resources":{"gpu_milli":250,"gpu_models":["T4"]}}]`)
	rec := e.do("POST", "/v1/jobs/batch?dry_run=true", cop, two)
	var b struct {
		Jobs []struct{ ID, Name, State, Detail string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil || rec.Code != http.StatusOK || len(b.Jobs) != 2 ||
		!strings.HasPrefix(b.Jobs[0].ID, "first-") || !strings.HasPrefix(b.Jobs[1].ID, "second-") ||
		!strings.HasPrefix(b.Jobs[1].Detail, "would start now on ") {
		t.Fatalf("batch dry run: %d %s", rec.Code, rec.Body)
	}
	if rec := e.do("GET", "/v1/jobs", cop, nil); strings.Contains(rec.Body.String(), `"first"`) {
		t.Errorf("a batch dry run stored a job: %s", rec.Body)
	}
	bad := []byte(`[{"name":"ok","resources":{"gpu_milli":250}},{"name":"big","resources":{"instance_count":100,"gpus_per_instance":8,"gpu_models":["H100"]}}]`)
	rec = e.do("POST", "/v1/jobs/batch?dry_run=true", cop, bad)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "SkuNotAvailable") || !strings.Contains(rec.Body.String(), `"index":1`) {
		t.Errorf("batch dry run with a job no SKU can hold: %d %s", rec.Code, rec.Body)
	}
	if rec := e.do("POST", "/v1/jobs/batch?dry_run=maybe", cop, two); rec.Code != http.StatusBadRequest ||
		!strings.Contains(rec.Body.String(), `"field":"dry_run"`) {
		t.Errorf("dry_run=maybe: %d %s, want 400 naming dry_run", rec.Code, rec.Body)
	}
}

// PATCH /v1/jobs/{id} sets and removes a queued job's begin time, with the
// priority or alone, as a time or a date like a job file's; a begin that is
// neither is refused naming it.
func TestPatchBegin(t *testing.T) {
	e, cop, id := queuedLater(t)
	rec := e.do("PATCH", "/v1/jobs/"+id, cop, []byte(`{"begin":"2031-06-01T00:00:00Z","priority":"spot:2"}`))
	if j := decode[Job](t, rec); rec.Code != http.StatusOK || j.Reason != "BeginTime" || !strings.Contains(j.Detail, "2031-06-01T00:00:00Z") ||
		j.Spec.Begin != "2031-06-01T00:00:00Z" || j.Spec.Priority != "spot:2" {
		t.Fatalf("postpone: %d %s", rec.Code, rec.Body)
	}
	rec = e.do("PATCH", "/v1/jobs/"+id, cop, []byte(`{"begin":"2032-01-01"}`))
	if j := decode[Job](t, rec); rec.Code != http.StatusOK || j.Spec.Begin != "2032-01-01T00:00:00Z" {
		t.Fatalf("a date: %d %s, want begin at its midnight UTC", rec.Code, rec.Body)
	}
	rec = e.do("PATCH", "/v1/jobs/"+id, cop, []byte(`{"begin":""}`))
	if j := decode[Job](t, rec); rec.Code != http.StatusOK || j.Reason == "BeginTime" || j.Spec.Begin != "" {
		t.Fatalf("remove: %d %s", rec.Code, rec.Body)
	}
	rec = e.do("PATCH", "/v1/jobs/"+id, cop, []byte(`{"begin":"tomorrow"}`))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"field":"begin"`) {
		t.Errorf("a bad begin: %d %s", rec.Code, rec.Body)
	}
}

// PATCH /v1/jobs/{id} replaces a queued job's excluded nodes, [] removes
// them; a name that is no node is refused naming its place in the list.
func TestPatchExcludeNodes(t *testing.T) {
	e, cop, id := queuedLater(t)
	rec := e.do("PATCH", "/v1/jobs/"+id, cop, []byte(`{"exclude_nodes":["eastus-t4x1-01","eastus-t4x1-02"]}`))
	var doc struct {
		Placement struct {
			ExcludeNodes []string `json:"exclude_nodes"`
		} `json:"placement"`
	}
	if err := json.Unmarshal(mustJSON(t, decode[Job](t, rec).Spec), &doc); rec.Code != http.StatusOK || err != nil ||
		strings.Join(doc.Placement.ExcludeNodes, ",") != "eastus-t4x1-01,eastus-t4x1-02" {
		t.Fatalf("exclude: %d %s", rec.Code, rec.Body)
	}
	rec = e.do("PATCH", "/v1/jobs/"+id, cop, []byte(`{"exclude_nodes":["eastus-t4x1-01","eastus-t4x1-9"]}`))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"field":"placement.exclude_nodes[1]"`) {
		t.Errorf("an unknown node: %d %s", rec.Code, rec.Body)
	}
	rec = e.do("PATCH", "/v1/jobs/"+id, cop, []byte(`{"nodes":["eastus-t4x4-01"]}`))
	if err := json.Unmarshal(mustJSON(t, decode[Job](t, rec).Spec), &doc); rec.Code != http.StatusOK || err != nil ||
		!strings.Contains(string(mustJSON(t, decode[Job](t, rec).Spec)), `"nodes":["eastus-t4x4-01"]`) {
		t.Fatalf("only on: %d %s", rec.Code, rec.Body)
	}
	rec = e.do("PATCH", "/v1/jobs/"+id, cop, []byte(`{"exclude_nodes":[],"nodes":[]}`))
	if j := decode[Job](t, rec); rec.Code != http.StatusOK || strings.Contains(string(mustJSON(t, j.Spec)), "nodes") {
		t.Fatalf("remove: %d %s", rec.Code, rec.Body)
	}
}

// queuedLater submits a job of copilot that waits for a begin time in
// 2030, and returns the environment, copilot's token and the job's ID.
func queuedLater(t *testing.T) (*env, string, string) {
	t.Helper()
	e := newEnv(t, 0, 0)
	cop := e.tokens["copilot"]
	rec := e.do("POST", "/v1/jobs", cop, []byte(`{"name":"later","resources":{"gpu_milli":250,"gpu_models":["T4"]},"begin":"2030-01-01T00:00:00Z"}`))
	if rec.Code != http.StatusCreated {
		t.Fatalf("submit: %d %s", rec.Code, rec.Body)
	}
	return e, cop, decode[Job](t, rec).ID
}
