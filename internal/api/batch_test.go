package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestSubmitBatch checks POST /v1/jobs/batch: every job or none, every
// problem listed.
func TestSubmitBatch(t *testing.T) {
	e := newEnv(t, 0, 0)
	cop := e.tokens["copilot"]
	count := func() int {
		var l struct{ Jobs []Job }
		_ = json.Unmarshal(e.do("GET", "/v1/jobs", cop, nil).Body.Bytes(), &l)
		return len(l.Jobs)
	}
	// A job that can never run refuses the whole batch.
	rec := e.do("POST", "/v1/jobs/batch", cop, []byte(`[`+chatJSON+`,
		{"name":"ring","resources":{"instance_count":2,"gpus_per_instance":4,"gpu_models":["T4"]},"placement":{"interconnect":"infiniband"}},
		{"name":"big","resources":{"instance_count":100,"gpus_per_instance":8,"gpu_models":["H100"]}}]`))
	var er Error
	if err := json.Unmarshal(rec.Body.Bytes(), &er); err != nil || rec.Code != http.StatusBadRequest ||
		er.Code != "TopologyUnsatisfiable" || len(er.Errors) != 2 {
		t.Fatalf("refused batch: %d %s", rec.Code, rec.Body)
	}
	if x := er.Errors[1]; x.Index == nil || *x.Index != 2 || x.Name != "big" || x.Code != "SkuNotAvailable" ||
		!strings.Contains(x.Message, "the most that exists") {
		t.Errorf("second refusal %+v", x)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d jobs stored by a refused batch", n)
	}
	// Problems of the body: every one, with its line.
	rec = e.do("POST", "/v1/jobs/batch", cop, []byte("name: a\nresources: {gpus_per_instance: 99}\n---\nname: b\nresources: {gpu_milli: 2000}\n"))
	er = Error{}
	_ = json.Unmarshal(rec.Body.Bytes(), &er)
	if rec.Code != http.StatusBadRequest || er.Code != "InvalidSpec" || len(er.Errors) != 2 ||
		!strings.Contains(er.Errors[1].Message, "jobs:5:") || er.Errors[1].Field != "resources.gpu_milli" {
		t.Fatalf("bad body: %d %s", rec.Code, rec.Body)
	}
	// A good batch, with an array: all stored, tenant filled in.
	rec = e.do("POST", "/v1/jobs/batch", cop, []byte("name: sweep\narray: 0-2\nresources: {gpu_milli: 100, gpu_models: [T4]}\n---\n"+chatJSON))
	var b Batch
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil || rec.Code != http.StatusCreated || len(b.Jobs) != 4 {
		t.Fatalf("good batch: %d %s", rec.Code, rec.Body)
	}
	if b.Jobs[2].Name != "sweep[2]" || b.Jobs[2].Tenant != "copilot" || b.Jobs[3].Name != "chat" {
		t.Errorf("jobs %s, %s (%s), %s", b.Jobs[0].Name, b.Jobs[2].Name, b.Jobs[2].Tenant, b.Jobs[3].Name)
	}
	if n := count(); n != 4 {
		t.Errorf("%d jobs stored, want 4", n)
	}
}

// FuzzSubmitBatch holds POST /v1/jobs/batch to its contract on any body:
// 201 with the jobs, or an error body with a code; never a 5xx. Its dry
// run answers 200 with one Why per job, or the same kind of error.
func FuzzSubmitBatch(f *testing.F) {
	e := newEnv(f, -1, 0)
	for _, s := range []string{"[" + chatJSON + "]", "[" + chatJSON + "," + chatJSON + "]", "", "[]", "{", "name: x\narray: 0-3\nresources: {gpu_milli: 100}",
		"name: x\narray: 0-99999\n", "- {name: a}\n- {name: b, array: 5-1}", "[{\"name\":\"a\",\"array_index\":-1}]", "\x00\xff",
		"name: &a [*a]", "---\n---\n", "name: y\narray: [1]\n",
		"- {name: e, resources: {gpus_per_instance: 8}, elastic: {min_instances: 2, max_instances: 4}}\n- {name: f, elastic: {min_instances: 3, max_instances: 1}}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		dry := e.do("POST", "/v1/jobs/batch?dry_run=true", e.tokens["copilot"], body)
		switch {
		case dry.Code >= 500:
			t.Fatalf("dry run: %d for %q: %s", dry.Code, body, dry.Body)
		case dry.Code == http.StatusOK:
			var b WhyBatch
			if err := json.Unmarshal(dry.Body.Bytes(), &b); err != nil || len(b.Jobs) == 0 || b.Jobs[0].ID == "" {
				t.Fatalf("dry run: 200 body %q", dry.Body)
			}
		default:
			var er Error
			if err := json.Unmarshal(dry.Body.Bytes(), &er); err != nil || er.Code == "" {
				t.Fatalf("dry run: error body %q", dry.Body)
			}
		}
		rec := e.do("POST", "/v1/jobs/batch", e.tokens["copilot"], body)
		if rec.Code >= 500 {
			t.Fatalf("%d for %q: %s", rec.Code, body, rec.Body)
		}
		if rec.Code == http.StatusCreated {
			var b Batch
			if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil || len(b.Jobs) == 0 {
				t.Fatalf("201 body %q", rec.Body)
			}
			return
		}
		var er Error
		if err := json.Unmarshal(rec.Body.Bytes(), &er); err != nil || er.Code == "" {
			t.Fatalf("error body %q", rec.Body)
		}
	})
}

// A batch takes one job per job from its tenant's budget (--job-rate,
// --job-burst), dry runs included, and a tenant has at most --max-dry-runs
// running at once: past either, 429 with Retry-After naming the flag.
// Other tenants keep their own budget.
func TestBatchJobBudget(t *testing.T) {
	e := newEnv(t, -1, 0)
	e.h = New(Config{Server: e.srv, Rate: -1, Now: e.srv.Clock().Now, Limits: Limits{JobRate: 1, JobBurst: 5, MaxDryRuns: 1}})
	three := []byte("name: a\ncommand: [x]\narray: 0-2\nresources: {gpu_milli: 250, gpu_models: [T4]}\n")
	if rec := e.do("POST", "/v1/jobs/batch?dry_run=true", e.tokens["copilot"], three); rec.Code != http.StatusOK {
		t.Fatalf("dry run of 3 jobs within the budget: %d %s", rec.Code, rec.Body)
	}
	rec := e.do("POST", "/v1/jobs/batch", e.tokens["copilot"], three)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" ||
		!strings.Contains(rec.Body.String(), "--job-rate") {
		t.Fatalf("3 more jobs with 2 left: %d %q %s; want 429 after 1 s naming --job-rate", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if rec := e.do("POST", "/v1/jobs/batch", e.tokens["acme"], []byte(strings.ReplaceAll(string(three), "name: a", "name: a\ntenant: acme"))); rec.Code != http.StatusCreated {
		t.Fatalf("another tenant's batch: %d %s", rec.Code, rec.Body)
	}

	// The dry runs' gate.
	g := newGate(1)
	if !g.enter("copilot") || g.enter("copilot") || !g.enter("acme") {
		t.Fatal("gate of 1: want one place per key")
	}
	g.leave("copilot")
	if !g.enter("copilot") {
		t.Fatal("a place given back is not taken again")
	}
}
