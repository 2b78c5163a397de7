package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/spec"
)

const (
	queuedJob = `{"id":"j-1","name":"train-llama","tenant":"acme","state":"Queued","reason":"InsufficientCapacity",
"detail":"eastus: largest free IB leaf block is 5 nodes, job needs 8","priority":"standard","spec":{"name":"train-llama"},
"submitted_at":"2026-06-01T12:00:00Z","started_at":null,"ended_at":null,"allocations":[],"attempts":0,"preemptions":0}`
	runningJob = `{"id":"j-2","name":"t4-small","tenant":"research","state":"Running","reason":"","detail":"",
"priority":"spot:5","submitted_at":"2026-06-01T12:00:00Z","started_at":"2026-06-01T12:00:05Z","ended_at":null,
"allocations":[{"node":"eastus-t4x1-01","gpus":[0],"gpu_milli":250}],"attempts":1,"preemptions":0}`
	canceledJob = `{"id":"j-1","name":"train-llama","tenant":"acme","state":"Canceled","reason":"Canceled"}`
)

// liveQuery is what job list asks for without --state or --all: the jobs
// that have not ended.
const liveQuery = "state=Blocked&state=Queued&state=Preparing&state=Running&state=Preempted"

func TestJobCommands(t *testing.T) {
	runCases(t, []commandCase{
		{name: "list", args: []string{"job", "list"},
			ex:      exchange{method: "GET", path: "/v1/jobs", query: liveQuery, status: 200, body: `{"jobs":[` + queuedJob + `,` + runningJob + `]}`},
			wantOut: []string{"ID", "STATE", "REASON", "j-1", "train-llama", "Queued", "InsufficientCapacity", "j-2", "Running", "spot:5"}},
		{name: "list wide: the GPUs and nodes each job holds", args: []string{"job", "list", "-o", "wide"},
			ex: exchange{method: "GET", path: "/v1/jobs", query: liveQuery, status: 200, body: `{"jobs":[` + queuedJob + `,` + runningJob + `,` +
				`{"id":"j-3","name":"gang","state":"Running","allocations":[{"node":"h1","gpus":[0,1,2,3,4,5,6,7],"gpu_milli":1000},` +
				`{"node":"h2","gpus":[0,1,2,3,4,5,6,7],"gpu_milli":1000},{"node":"h3","gpus":[0,1,2,3,4,5,6,7],"gpu_milli":1000},` +
				`{"node":"h4","gpus":[0,1,2,3,4,5,6,7],"gpu_milli":1000}]}]}`},
			wantOut: []string{"PRIORITY  GPUS  NODES", "InsufficientCapacity  standard  -     -", "spot:5    0.25  eastus-t4x1-01",
				"32    h1,h2,h3 +1 more"}},
		{name: "list filtered as json", args: []string{"job", "list", "--state", "Queued", "--tenant", "acme", "-o", "json"},
			ex:      exchange{method: "GET", path: "/v1/jobs", query: "state=Queued&tenant=acme", status: 200, body: `{"jobs":[]}`},
			wantOut: []string{`"jobs": []`}},
		{name: "show", args: []string{"job", "show", "j-2"},
			ex:      exchange{method: "GET", path: "/v1/jobs/j-2", status: 200, body: runningJob},
			wantOut: []string{"State:", "Running", "eastus-t4x1-01 GPU 0 (250m each)", "2026-06-01T12:00:05Z", "Priority:", "spot:5"}},
		{name: "show the nodes a job excludes", args: []string{"job", "show", "j-3"},
			ex: exchange{method: "GET", path: "/v1/jobs/j-3", status: 200,
				body: `{"id":"j-3","name":"train","state":"Queued","spec":{"name":"train","tenant":"acme","resources":{"instance_count":1,"gpus_per_instance":8},` +
					`"placement":{"nodes":["h100-01","h100-03"],"exclude_nodes":["h100-03","h100-04"]},"after":["prep-1"],"after_condition":"any"}}`},
			wantOut: []string{"After:        prep-1 (after_condition: any)\n", "Only on:      h100-01, h100-03\n", "Excluded:     h100-03, h100-04\n"}},
		{name: "show an elastic job's size and resizes", args: []string{"job", "show", "j-4"},
			ex: exchange{method: "GET", path: "/v1/jobs/j-4", status: 200,
				body: `{"id":"j-4","name":"pretrain","state":"Running","instances":4,"resizes":2,` +
					`"spec":{"name":"pretrain","resources":{"instance_count":2,"gpus_per_instance":8},"elastic":{"min_instances":2,"max_instances":6,"step":2}},` +
					`"attempt_history":[{"number":1,"nodes":["h1","h2"],"reason":"Resized","detail":"grew 2→6: 32 idle H100 in use-ib"},` +
					`{"number":2,"nodes":["h1","h2","h3","h4","h5","h6"],"reason":"Resized","detail":"shrank 6→4 for urgent-1 (reserved), which needs 16 GPUs"},` +
					`{"number":3,"nodes":["h1","h2","h3","h4"]}]}`},
			wantOut: []string{"Instances:    4 of 2-6 (elastic, step 2), resized 2 times\n",
				"Resizes:      #1→#2 grew 2→6: 32 idle H100 in use-ib\n              #2→#3 shrank 6→4 for urgent-1 (reserved), which needs 16 GPUs\n",
				"#3 h1,h2,h3,h4 running"}},
		{name: "show json has state and reason", args: []string{"job", "show", "j-1", "-o", "json"},
			ex:      exchange{method: "GET", path: "/v1/jobs/j-1", status: 200, body: queuedJob},
			wantOut: []string{`"state": "Queued"`, `"reason": "InsufficientCapacity"`, `"started_at": null`}},
		{name: "show yaml", args: []string{"job", "show", "j-1", "-o", "yaml"},
			ex:      exchange{method: "GET", path: "/v1/jobs/j-1", status: 200, body: queuedJob},
			wantOut: []string{"id: j-1\n", "state: Queued\n", "reason: InsufficientCapacity\n", "spec:\n  name: train-llama\n"}},
		{name: "why", args: []string{"job", "why", "j-1"},
			ex: exchange{method: "GET", path: "/v1/jobs/j-1/why", status: 200,
				body: `{"id":"j-1","state":"Queued","reason":"InsufficientCapacity","detail":"eastus: 5 free","estimated_start":"2099-01-01T00:00:00Z"}`},
			wantOut: []string{"Reason:", "InsufficientCapacity", "Detail:", "eastus: 5 free", "Estimated start:", "2099-01-01T00:00:00Z (in "}},
		{name: "why an elastic job is not larger", args: []string{"job", "why", "j-4"},
			ex: exchange{method: "GET", path: "/v1/jobs/j-4/why", status: 200,
				body: `{"id":"j-4","state":"Running","reason":"Resized","detail":"d","running_on":["h1","h2"],"elastic":"2 of 2-6 instances; at its maximum"}`},
			wantOut: []string{"Size:     2 of 2-6 instances; at its maximum\n"}},
		{name: "why a retry", args: []string{"job", "why", "j-1"},
			ex: exchange{method: "GET", path: "/v1/jobs/j-1/why", status: 200,
				body: `{"id":"j-1","state":"Queued","reason":"Retrying","detail":"attempt 1, rank 0 on n1 exited with code 3; retry 1 of 2","estimated_start":null,"avoid_nodes":["n1"]}`},
			wantOut: []string{"Avoids:           n1 (attempts failed there: used only when no other node fits)\n"}},
		{name: "why with drained nodes", args: []string{"job", "why", "j-1"},
			ex: exchange{method: "GET", path: "/v1/jobs/j-1/why", status: 200,
				body: `{"id":"j-1","state":"Queued","reason":"NoReadyNodes","detail":"all 2 capable nodes are Draining (…): n1, n2","estimated_start":null,` +
					`"drains":[{"node":"n1","reason":"PSU swap OPS-1","by":"admin","at":"2026-12-04T15:00:00Z"},{"node":"n2","reason":"fan","by":"server","at":"2026-12-04T15:05:00Z"}]}`},
			wantOut: []string{"Drained:          n1: PSU swap OPS-1 (admin, 2026-12-04T15:00:00Z)\n                  n2: fan (server, 2026-12-04T15:05:00Z)\n"}},
		{name: "why without estimate", args: []string{"job", "why", "j-1", "-o", "json"},
			ex: exchange{method: "GET", path: "/v1/jobs/j-1/why", status: 200,
				body: `{"id":"j-1","state":"Queued","reason":"QuotaExceeded","detail":"d","estimated_start":null}`},
			wantOut: []string{`"estimated_start": null`, `"reason": "QuotaExceeded"`}},
		{name: "cancel", args: []string{"job", "cancel", "j-1"},
			ex:      exchange{method: "POST", path: "/v1/jobs/j-1/cancel", status: 200, body: canceledJob},
			wantOut: []string{"j-1", "Canceled"}},
		{name: "update the begin time", args: []string{"job", "update", "j-1", "--begin", "2030-01-02", "--priority", "spot"},
			ex: exchange{method: "PATCH", path: "/v1/jobs/j-1", status: 200, body: queuedJob, checkBody: func(t *testing.T, body []byte) {
				if string(body) != `{"begin":"2030-01-02T00:00:00Z","priority":"spot"}` {
					t.Errorf("body %s", body)
				}
			}},
			wantOut: []string{"j-1"}},
		{name: "remove the begin time", args: []string{"job", "update", "j-1", "--begin", "none"},
			ex: exchange{method: "PATCH", path: "/v1/jobs/j-1", status: 200, body: queuedJob, checkBody: func(t *testing.T, body []byte) {
				if string(body) != `{"begin":""}` {
					t.Errorf("body %s", body)
				}
			}},
			wantOut: []string{"j-1"}},
		{name: "exclude nodes", args: []string{"job", "update", "j-1", "--exclude", "h100-03,h100-04"},
			ex: exchange{method: "PATCH", path: "/v1/jobs/j-1", status: 200, body: queuedJob, checkBody: func(t *testing.T, body []byte) {
				if string(body) != `{"exclude_nodes":["h100-03","h100-04"]}` {
					t.Errorf("body %s", body)
				}
			}},
			wantOut: []string{"j-1"}},
		{name: "only on a node, excluding none", args: []string{"job", "update", "j-1", "--node", "h100-05", "--exclude", "none"},
			ex: exchange{method: "PATCH", path: "/v1/jobs/j-1", status: 200, body: queuedJob, checkBody: func(t *testing.T, body []byte) {
				if string(body) != `{"exclude_nodes":[],"nodes":["h100-05"]}` {
					t.Errorf("body %s", body)
				}
			}},
			wantOut: []string{"j-1"}},
		{name: "exclude no node", args: []string{"job", "update", "j-1", "--exclude", "none"},
			ex: exchange{method: "PATCH", path: "/v1/jobs/j-1", status: 200, body: queuedJob, checkBody: func(t *testing.T, body []byte) {
				if string(body) != `{"exclude_nodes":[]}` {
					t.Errorf("body %s", body)
				}
			}},
			wantOut: []string{"j-1"}},
		{name: "requeue", args: []string{"job", "requeue", "j-2"},
			ex: exchange{method: "POST", path: "/v1/jobs/j-2/requeue", status: 200,
				body: `{"id":"j-2","name":"t4-small","state":"Preempted","reason":"Requeued"}`},
			wantOut: []string{"j-2", "Preempted", "Requeued"}},
		{name: "requeue a queued job", args: []string{"job", "requeue", "j-1"},
			ex: exchange{method: "POST", path: "/v1/jobs/j-1/requeue", status: 409,
				body: `{"code":"Conflict","message":"job j-1 is Queued: only a job that runs (Preparing or Running) can be requeued"}`},
			wantCode: ExitUsage, wantErr: []string{"only a job that runs"}},
		{name: "requeue by filter selects running jobs", args: []string{"job", "requeue", "--name", "t4"},
			ex:      exchange{method: "GET", path: "/v1/jobs", query: "name=t4&state=Preparing&state=Running", status: 200, body: `{"jobs":[]}`},
			wantOut: []string{"ID", "ERROR"}},
		{name: "cancel a finished job", args: []string{"job", "cancel", "j-1"},
			ex:       exchange{method: "POST", path: "/v1/jobs/j-1/cancel", status: 409, body: `{"code":"Conflict","message":"job j-1 has ended"}`},
			wantCode: ExitUsage, wantErr: []string{"allot: Conflict: job j-1 has ended"}},
		{name: "unauthorized", args: []string{"job", "list"},
			ex:       exchange{method: "GET", path: "/v1/jobs", query: liveQuery, status: 401, body: `{"code":"Unauthorized","message":"unknown token"}`},
			wantCode: ExitFailure, wantErr: []string{"allot: Unauthorized: unknown token"}},
		{name: "rate limited", args: []string{"job", "list"},
			ex: exchange{method: "GET", path: "/v1/jobs", query: liveQuery, status: 429, header: map[string]string{"Retry-After": "1"},
				body: `{"code":"RateLimited","message":"over 10 requests/s"}`},
			wantCode: ExitFailure, wantErr: []string{"allot: RateLimited: over 10 requests/s"}},
		{name: "server error", args: []string{"job", "list"},
			ex:       exchange{method: "GET", path: "/v1/jobs", query: liveQuery, status: 500, body: `{"code":"Internal","message":"store broken"}`},
			wantCode: ExitFailure, wantErr: []string{"allot: Internal: store broken"}},
	})
}

// writeJob writes a job file into a temporary directory.
func writeJob(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestJobSubmit(t *testing.T) {
	example := "../../examples/jobs/train-llama.yaml"
	want, err := spec.ReadJobs(example, []string{"priority=spot:3"})
	if err != nil {
		t.Fatal(err)
	}
	// The server reads the body as the same spec the file holds.
	sameSpec := func(t *testing.T, body []byte) {
		got, err := spec.ParseJobs("body", body, nil)
		if err != nil {
			t.Fatalf("body is not a job document: %v\n%s", err, body)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("server would read\n%+v\nwant\n%+v", got, want)
		}
	}
	submit := exchange{method: "POST", path: "/v1/jobs", status: 201, body: queuedJob, checkBody: sameSpec, key: "*"}
	replayed := exchange{method: "POST", path: "/v1/jobs", status: 200, body: queuedJob, checkBody: sameSpec, key: "nightly-1",
		header: map[string]string{"Idempotent-Replayed": "true"}}
	runCases(t, []commandCase{
		{name: "a key of one's own; a repeat prints the first job", args: []string{"job", "submit", "-f", example, "--set", "priority=spot:3",
			"--idempotency-key", "nightly-1"}, ex: replayed, wantOut: []string{"j-1\n"}},
		{name: "the key reused for other jobs exits 2", args: []string{"job", "submit", "-f", example, "--set", "priority=spot:3",
			"--idempotency-key", "nightly-1"},
			ex: exchange{method: "POST", path: "/v1/jobs", status: 409, key: "nightly-1",
				body: `{"code":"Conflict","message":"the key was used for a different request","field":"Idempotency-Key"}`},
			wantCode: ExitUsage, wantErr: []string{"allot: Conflict: ", "(field Idempotency-Key)"}},
		{name: "prints the ID", args: []string{"job", "submit", "-f", example, "--set", "priority=spot:3"},
			ex: submit, wantOut: []string{"j-1\n"}},
		{name: "the file as the argument, as sbatch takes it", args: []string{"job", "submit", example, "--set", "priority=spot:3"},
			ex: submit, wantOut: []string{"j-1\n"}},
		{name: "json is {id}", args: []string{"job", "submit", "-f", example, "--set", "priority=spot:3", "-o", "json"},
			ex: submit, wantOut: []string{"{\n  \"id\": \"j-1\"\n}\n"}},
		{name: "yaml", args: []string{"job", "submit", "-f", example, "--set", "priority=spot:3", "-o", "yaml"},
			ex: submit, wantOut: []string{"id: j-1\n"}},
		{name: "another tenant's job exits 2", args: []string{"job", "submit", "-f", example, "--set", "priority=spot:3"},
			ex: exchange{method: "POST", path: "/v1/jobs", status: 403, checkBody: sameSpec,
				body: `{"code":"Forbidden","message":"a token of tenant \"b\" may not submit jobs of tenant \"a\"","field":"tenant"}`},
			wantCode: ExitUsage, wantErr: []string{"allot: Forbidden: ", "(field tenant)"}},
		{name: "SkuNotAvailable exits 2", args: []string{"job", "submit", "-f", "../../examples/refused/research-b200.yaml"},
			ex: exchange{method: "POST", path: "/v1/jobs", status: 400,
				body: `{"code":"SkuNotAvailable","message":"no region sells B200 nodes","field":"resources.gpu_models"}`},
			wantCode: ExitUsage, wantErr: []string{"allot: SkuNotAvailable: no region sells B200 nodes (field resources.gpu_models)\n"}},
	})
}

func TestJobSubmitJSONContentType(t *testing.T) {
	isolate(t)
	url, _ := stub(t, exchange{method: "POST", path: "/v1/jobs", status: 201, body: queuedJob, checkBody: func(t *testing.T, body []byte) {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("body is not JSON: %v", err)
		}
	}})
	if _, errOut, code := runCLI(t, "job", "submit", "-f", "../../examples/jobs/train-llama.yaml", "--server", url); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestJobSubmitManyDocuments checks that the jobs of a file of several
// go to the server in one batch request.
func TestJobSubmitManyDocuments(t *testing.T) {
	isolate(t)
	path := writeJob(t, `name: a
tenant: acme
resources: {gpus_per_instance: 1}
---
- {name: b, tenant: acme}
- {name: c, tenant: acme}
`)
	url, hits := stub(t, exchange{method: "POST", path: "/v1/jobs/batch", status: 201,
		body: `{"jobs":[` + queuedJob + `,` + queuedJob + `,` + queuedJob + `]}`,
		checkBody: func(t *testing.T, body []byte) {
			var docs []spec.Document
			if err := json.Unmarshal(body, &docs); err != nil || len(docs) != 3 || docs[2].Name != "c" {
				t.Errorf("batch body %s (%v), want a list of the three documents", body, err)
			}
		}})
	out, errOut, code := runCLI(t, "job", "submit", "-f", path, "--server", url, "-o", "json")
	if code != 0 || hits.Load() != 1 {
		t.Fatalf("exit %d, %d requests: %s", code, hits.Load(), errOut)
	}
	var ids []struct{ ID string }
	if err := json.Unmarshal([]byte(out), &ids); err != nil || len(ids) != 3 {
		t.Errorf("want a JSON list of three {id}, got %s (%v)", out, err)
	}
}

// TestJobSubmitSpecErrors checks that a bad file fails locally, naming file,
// line and field, with exit status 2 and no request.
func TestJobSubmitSpecErrors(t *testing.T) {
	tests := []struct {
		name, file string
		sets       []string
		want       []string
	}{
		{"bad value", "name: x\ntenant: acme\nresources:\n  gpus_per_instance: 99\n", nil,
			[]string{"job.yaml:4:", "resources.gpus_per_instance", "between 0 and 64"}},
		{"unknown field", "name: x\ntenant: acme\nresources: {gpus: 2}\n", nil,
			[]string{"job.yaml:3:", "resources.gpus", "unknown field"}},
		{"bad --set", "name: x\ntenant: acme\n", []string{"--set", "retry.max_retries=-1"},
			[]string{"--set retry.max_retries", "between 0 and 1000"}},
		{"not YAML", "name: [x\n", nil, []string{"job.yaml", "invalid YAML"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			url, hits := stub(t, exchange{method: "POST", path: "/v1/jobs", status: 201, body: queuedJob})
			args := append([]string{"job", "submit", "-f", writeJob(t, tt.file), "--server", url}, tt.sets...)
			_, errOut, code := runCLI(t, args...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d: %s", code, ExitUsage, errOut)
			}
			if hits.Load() != 0 {
				t.Errorf("%d requests sent for an invalid file", hits.Load())
			}
			for _, s := range tt.want {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr lacks %q: %s", s, errOut)
				}
			}
		})
	}
}

func TestUsageErrorsSendNothing(t *testing.T) {
	for _, args := range [][]string{
		{"job", "show"},
		{"job", "show", "a", "b"},
		{"job", "submit"},
		{"job", "submit", "a.yaml", "b.yaml"},
		{"job", "submit", "-f", "a.yaml", "b.yaml"},
		{"endpoint", "create", "a.yaml", "b.yaml"},
		{"job", "list", "-o", "xml"},
		{"job", "list", "--bogus"},
		{"job"},
		{"job", "frobnicate"},
		{"sku", "list", "extra"},
		{"quota", "usage", "extra"},
		{"token", "create"},
		{"reservation", "create", "--sku", "S", "--region", "r"},
		{"reservation", "create", "--sku", "S", "--region", "r", "--count", "1", "--start", "tomorrow"},
		{"reservation", "create", "--sku", "S", "--region", "r", "--count", "1", "--start", "+2h", "--end", "+1h"},
		{"reservation", "create", "--sku", "S", "--region", "r", "--count", "0"},
		{"reservation", "delete"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			isolate(t)
			url, hits := stub(t, exchange{})
			_, errOut, code := runCLI(t, append(args, "--server", url)...)
			if code != ExitUsage || hits.Load() != 0 {
				t.Errorf("exit %d, %d requests; want %d and none: %s", code, hits.Load(), ExitUsage, errOut)
			}
			if !strings.HasPrefix(errOut, "allot: ") {
				t.Errorf("stderr %q does not start with allot:", errOut)
			}
		})
	}
}

func TestCompletion(t *testing.T) {
	isolate(t)
	out, errOut, code := runCLI(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "bash completion") {
		t.Fatalf("completion bash: exit %d: %s", code, errOut)
	}
	url, _ := stub(t, exchange{method: "GET", path: "/v1/jobs", status: 200, body: `{"jobs":[` + queuedJob + `]}`})
	out, errOut, code = runCLI(t, "__complete", "job", "why", "--server", url, "")
	if code != 0 || !strings.Contains(out, "j-1\ttrain-llama Queued") {
		t.Errorf("completing job IDs: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestJobSubmitAllOrNothing checks that a batch the server refuses
// submits nothing, prints every refusal and exits 2.
func TestJobSubmitAllOrNothing(t *testing.T) {
	isolate(t)
	path := writeJob(t, "- {name: a, tenant: acme}\n- {name: b, tenant: acme}\n- {name: c, tenant: acme}\n")
	url, hits := stub(t, exchange{method: "POST", path: "/v1/jobs/batch", status: 400,
		body: `{"code":"QuotaExceeded","message":"2 of 3 jobs refused; none was submitted","errors":[` +
			`{"index":1,"name":"b","code":"QuotaExceeded","message":"too big"},` +
			`{"index":2,"name":"c","code":"TopologyUnsatisfiable","message":"no infiniband"}]}`})
	out, errOut, code := runCLI(t, "job", "submit", "-f", path, "--server", url)
	if code != ExitUsage || hits.Load() != 1 || out != "" {
		t.Errorf("exit %d, %d requests, stdout %q; want 2, 1 and nothing", code, hits.Load(), out)
	}
	for _, s := range []string{"allot: job 1 b: QuotaExceeded: too big\n", "allot: job 2 c: TopologyUnsatisfiable: no infiniband\n",
		"2 problems in 3 jobs; none was submitted"} {
		if !strings.Contains(errOut, s) {
			t.Errorf("stderr lacks %q:\n%s", s, errOut)
		}
	}
}
