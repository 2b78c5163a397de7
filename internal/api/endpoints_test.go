package api

import (
	"net/http"
	"strings"
	"testing"
)

const chatEndpointYAML = `name: chat
model: llama
resources: {gpu_milli: 250, gpu_models: [T4]}
min_replicas: 1
max_replicas: 4
slo: {p95_ms: 150}
throughput: {T4: 15}
autoscale: {scale_in_after: 10s}
`

// TestEndpointRoutes: create (YAML, the tenant filled in from the token),
// the view, metrics from the endpoint's own token, scale, delete; and the
// refusals of each body.
func TestEndpointRoutes(t *testing.T) {
	e := newEnv(t, 0, 0)
	cop, acme := e.tokens["copilot"], e.tokens["acme"]
	rec := e.do("POST", "/v1/endpoints", cop, []byte(chatEndpointYAML))
	if rec.Code != http.StatusCreated || rec.Header().Get("Location") != "/v1/endpoints/chat" {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	ep := decode[Endpoint](t, rec)
	if ep.Name != "chat" || ep.Tenant != "copilot" || ep.Model != "llama" || ep.Desired != 1 || len(ep.Replicas) != 1 ||
		ep.Replicas[0].State != "Queued" || len(ep.Events) != 1 || ep.Events[0].Kind != "Created" || ep.CreatedAt == nil ||
		ep.Metrics != nil {
		t.Fatalf("created endpoint: %+v", ep)
	}
	// The spec shows the autoscaler's parameters in effect.
	if a := ep.Spec.Autoscale; a == nil || a.ScaleInAfter != "10s" || a.ScaleInInterval != "1m0s" || a.LeadTime != "3m0s" {
		t.Fatalf("autoscale in the view: %+v", ep.Spec.Autoscale)
	}
	if rec := e.do("POST", "/v1/endpoints", cop, []byte(chatEndpointYAML)); rec.Code != http.StatusConflict {
		t.Fatalf("a second chat: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct{ body, field string }{
		{`{"name":"x","model":"m","slo":{"p95_ms":100},"throughput":{"T4":1},"colour":"red"}`, "colour"},
		{`{"name":"x","model":"m","slo":{"p95_ms":100},"throughput":{"T4":1},"autoscale":{"lead_time":"-1s"}}`, "autoscale.lead_time"},
		{`{"name":"x","model":"m","slo":{"p95_ms":100},"throughput":{"T4":1},"min_replicas":3,"max_replicas":2}`, "max_replicas"},
	} {
		rec := e.do("POST", "/v1/endpoints", cop, []byte(tc.body))
		if got := decode[Error](t, rec); rec.Code != http.StatusBadRequest || got.Field != tc.field {
			t.Errorf("%s: %d %+v, want 400 on %s", tc.body, rec.Code, got, tc.field)
		}
	}
	if rec := e.do("POST", "/v1/endpoints", cop, []byte(strings.Replace(chatEndpointYAML, "name: chat", "name: x\ntenant: acme", 1))); rec.Code != http.StatusForbidden {
		t.Fatalf("copilot creating for acme: %d %s", rec.Code, rec.Body)
	}

	// The replica's token reports; the view shows the report once a
	// reconcile has made a sample of it.
	job := decode[Job](t, e.do("GET", "/v1/jobs/"+ep.Replicas[0].Job, cop, nil))
	tok := job.Spec.Env["ALLOT_ENDPOINT_TOKEN"]
	report := `{"requests_per_sec":12.5,"p95_ms":40,"utilisation":0.3,"replica":"` + job.ID + `.1"}`
	if rec := e.do("POST", "/v1/endpoints/chat/metrics", tok, []byte(report)); rec.Code != http.StatusNoContent {
		t.Fatalf("metrics from the endpoint's token: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		token, path, body string
		code              int
	}{
		{tok, "/v1/endpoints/chat/metrics", `{"requests_per_sec":1,"extra":1}`, http.StatusBadRequest},
		{tok, "/v1/endpoints/chat/metrics", `{"requests_per_sec":-1}`, http.StatusBadRequest},
		{tok, "/v1/endpoints/other/metrics", report, http.StatusForbidden},
		{acme, "/v1/endpoints/chat/metrics", report, http.StatusForbidden},
		{cop, "/v1/endpoints/nope/metrics", report, http.StatusNotFound},
	} {
		if rec := e.do("POST", tc.path, tc.token, []byte(tc.body)); rec.Code != tc.code {
			t.Errorf("POST %s %s: %d %s, want %d", tc.path, tc.body, rec.Code, rec.Body, tc.code)
		}
	}
	for _, path := range []string{"/v1/endpoints", "/v1/endpoints/chat", "/v1/jobs", "/v1/skus"} {
		if rec := e.do("GET", path, tok, nil); rec.Code != http.StatusForbidden {
			t.Errorf("GET %s with the endpoint's token: %d", path, rec.Code)
		}
	}
	if err := e.srv.ReconcileEndpoints(t.Context()); err != nil {
		t.Fatal(err)
	}
	ep = decode[Endpoint](t, e.do("GET", "/v1/endpoints/chat", cop, nil))
	if m := ep.Metrics; m == nil || m.RequestsPerSec != 12.5 || m.P95Ms != 40 || m.Replicas != 1 || ep.Reason == "" {
		t.Fatalf("metrics in the view: %+v, reason %q", ep.Metrics, ep.Reason)
	}

	// Scale, then the refusals of its body.
	rec = e.do("POST", "/v1/endpoints/chat/scale", cop, []byte(`{"min_replicas":2,"max_replicas":5}`))
	if ep = decode[Endpoint](t, rec); rec.Code != http.StatusOK || ep.Desired != 2 || ep.Spec.MinReplicas != 2 || ep.Spec.MaxReplicas != 5 {
		t.Fatalf("scale: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		token, body string
		code        int
	}{
		{cop, `{"min_replicas":2}`, http.StatusBadRequest},
		{cop, `{"min_replicas":2,"max_replicas":1}`, http.StatusBadRequest},
		{cop, `{"min_replicas":1,"max_replicas":2,"step":1}`, http.StatusBadRequest},
		{acme, `{"min_replicas":1,"max_replicas":2}`, http.StatusForbidden},
	} {
		if rec := e.do("POST", "/v1/endpoints/chat/scale", tc.token, []byte(tc.body)); rec.Code != tc.code {
			t.Errorf("scale %s: %d %s, want %d", tc.body, rec.Code, rec.Body, tc.code)
		}
	}
	if eps := decode[map[string][]Endpoint](t, e.do("GET", "/v1/endpoints", acme, nil)); len(eps["endpoints"]) != 0 {
		t.Fatalf("acme lists %+v", eps)
	}
	if rec := e.do("DELETE", "/v1/endpoints/chat", acme, nil); rec.Code != http.StatusForbidden {
		t.Fatalf("acme deleting chat: %d", rec.Code)
	}
	if rec := e.do("DELETE", "/v1/endpoints/chat", cop, nil); rec.Code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
	if rec := e.do("POST", "/v1/endpoints/chat/metrics", tok, []byte(report)); rec.Code != http.StatusUnauthorized {
		t.Fatalf("the deleted endpoint's token: %d", rec.Code)
	}
	if job := decode[Job](t, e.do("GET", "/v1/jobs/"+job.ID, cop, nil)); job.State != "Canceled" {
		t.Fatalf("replica after the delete: %s", job.State)
	}
}
