package spec

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

const chatEndpoint = `
name: chat
tenant: copilot
model: llama-3-8b
command: [allot, demo, serve, --service-time, 30ms]
env: {LOG_LEVEL: debug}
resources: {gpu_models: [T4, H100], cpu: 4, memory: 16Gi}
priority: standard:10
min_replicas: 2
max_replicas: 16
slo: {p95_ms: 150}
placement: {regions: [eastus, westus], residency: us, data_region: eastus}
throughput: {T4: 120, A100: 500, H100: 900.5}
`

func TestParseEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want []model.EndpointSpec
	}{
		{"full", chatEndpoint, []model.EndpointSpec{{
			Name: "chat", Tenant: "copilot", Model: "llama-3-8b",
			Command:     []string{"allot", "demo", "serve", "--service-time", "30ms"},
			Env:         map[string]string{"LOG_LEVEL": "debug"},
			Resources:   model.Resources{InstanceCount: 1, GPUsPerInstance: 1, GPUModels: []string{"T4", "H100"}, CPUMilli: 4000, MemoryMiB: 16 * 1024},
			Priority:    model.Priority{Class: model.ClassStandard, Value: 10},
			MinReplicas: 2, MaxReplicas: 16,
			SLO:        model.SLO{P95: 150 * time.Millisecond},
			Placement:  model.Placement{Regions: []string{"eastus", "westus"}, Residency: "us", DataRegion: "eastus"},
			Throughput: map[string]float64{"T4": 120, "A100": 500, "H100": 900.5},
		}}},
		{"defaults: one fixed replica of one GPU, the profile's models, the demo server", `
name: e
tenant: t
model: m
slo: {p95_ms: 12.5}
throughput: {T4: 10, A100: 40}
`, []model.EndpointSpec{{Name: "e", Tenant: "t", Model: "m", Command: []string{"allot", "demo", "serve"},
			Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1, GPUModels: []string{"A100", "T4"}},
			Priority:  model.Priority{Class: model.ClassStandard}, MinReplicas: 1, MaxReplicas: 1,
			SLO: model.SLO{P95: 12500 * time.Microsecond}, Throughput: map[string]float64{"T4": 10, "A100": 40}}}},
		{"max defaults to min; a fraction; a shell command", `
name: e
tenant: t
model: m
command: python serve.py --port 8000
resources: {gpu_milli: 250, gpu_models: T4}
min_replicas: 3
slo: {p95_ms: 400}
throughput: {T4: 25}
`, []model.EndpointSpec{{Name: "e", Tenant: "t", Model: "m", Command: []string{"/bin/sh", "-c", "python serve.py --port 8000"},
			Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1, GPUMilli: 250, GPUModels: []string{"T4"}},
			Priority:  model.Priority{Class: model.ClassStandard}, MinReplicas: 3, MaxReplicas: 3,
			SLO: model.SLO{P95: 400 * time.Millisecond}, Throughput: map[string]float64{"T4": 25}}}},
		{"several documents, a list, JSON and anchors", `
- &e {name: a, tenant: t, model: m, slo: {p95_ms: 100}, throughput: {T4: 1}}
- {<<: *e, name: b, max_replicas: 4}
---
{"name": "c", "tenant": "t", "model": "m", "slo": {"p95_ms": 100}, "throughput": {"T4": 1}}
`, []model.EndpointSpec{
			{Name: "a", Tenant: "t", Model: "m", Command: []string{"allot", "demo", "serve"},
				Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1, GPUModels: []string{"T4"}},
				Priority:  model.Priority{Class: model.ClassStandard}, MinReplicas: 1, MaxReplicas: 1,
				SLO: model.SLO{P95: 100 * time.Millisecond}, Throughput: map[string]float64{"T4": 1}},
			{Name: "b", Tenant: "t", Model: "m", Command: []string{"allot", "demo", "serve"},
				Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1, GPUModels: []string{"T4"}},
				Priority:  model.Priority{Class: model.ClassStandard}, MinReplicas: 1, MaxReplicas: 4,
				SLO: model.SLO{P95: 100 * time.Millisecond}, Throughput: map[string]float64{"T4": 1}},
			{Name: "c", Tenant: "t", Model: "m", Command: []string{"allot", "demo", "serve"},
				Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1, GPUModels: []string{"T4"}},
				Priority:  model.Priority{Class: model.ClassStandard}, MinReplicas: 1, MaxReplicas: 1,
				SLO: model.SLO{P95: 100 * time.Millisecond}, Throughput: map[string]float64{"T4": 1}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseEndpoints("ep.yaml", doc(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseEndpoints =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestParseEndpointsErrors(t *testing.T) {
	const head = "name: e\ntenant: t\nmodel: m\n"
	for _, tc := range []struct {
		name  string
		yaml  string
		line  int
		field string
		msg   string
	}{
		{"empty", "# nothing\n", 0, "", "file is empty: want an endpoint"},
		{"unknown field", head + "slo: {p95_ms: 100}\nthroughput: {T4: 1}\nreplicas: 3\n", 6, "replicas", `unknown field "replicas"`},
		{"instance_count is the autoscaler's", head + "resources:\n  instance_count: 2\n", 5, "resources.instance_count", `unknown field "instance_count"`},
		{"unknown SLO field", head + "slo: {p99_ms: 100}\n", 4, "slo.p99_ms", `unknown field "p99_ms" (known fields: p95_ms)`},
		{"SLO as a duration string", head + "slo: {p95_ms: 150ms}\nthroughput: {T4: 1}\n", 4, "slo.p95_ms", "want a number of milliseconds"},
		{"missing SLO", head + "throughput: {T4: 1}\n", 1, "slo.p95_ms", "must be above 0"},
		{"negative SLO", head + "slo:\n  p95_ms: -5\nthroughput: {T4: 1}\n", 5, "slo.p95_ms", "must be above 0"},
		{"missing profile", head + "slo: {p95_ms: 100}\nresources: {gpu_models: [T4]}\n", 1, "throughput", "must give the requests/s"},
		{"profile lacks an allowed model", head + "slo: {p95_ms: 100}\nresources: {gpu_models: [T4, H100]}\nthroughput: {T4: 1}\n",
			6, "throughput", "no entry for H100, which resources.gpu_models[1] allows"},
		{"profile value not a number", head + "slo: {p95_ms: 100}\nthroughput:\n  T4: 1\n  H100: fast\n", 7, "throughput.H100", `want a number of requests/s, got the string "fast"`},
		{"profile value zero", head + "slo: {p95_ms: 100}\nthroughput:\n  T4: 0\n", 6, "throughput.T4", "above 0"},
		{"profile key twice", head + "slo: {p95_ms: 100}\nthroughput:\n  T4: 1\n  T4: 2\n", 7, "throughput.T4", "set twice (first at line 6)"},
		{"profile not a mapping", head + "slo: {p95_ms: 100}\nthroughput: [T4, 120]\n", 5, "throughput", "want a mapping of GPU models"},
		{"zero min", head + "slo: {p95_ms: 100}\nthroughput: {T4: 1}\nmin_replicas: 0\n", 6, "min_replicas", "between 1 and 1000"},
		{"max below min", head + "slo: {p95_ms: 100}\nthroughput: {T4: 1}\nmin_replicas: 4\nmax_replicas: 2\n", 7, "max_replicas", "between min_replicas (4)"},
		{"no GPU", head + "slo: {p95_ms: 100}\nthroughput: {T4: 1}\nresources: {gpus_per_instance: 0, cpu: 4}\n", 6,
			"resources.gpus_per_instance", "needs a GPU"},
		{"interconnect", head + "slo: {p95_ms: 100}\nthroughput: {T4: 1}\nplacement:\n  interconnect: infiniband\n", 7,
			"placement.interconnect", "not a gang"},
		{"no model", "name: e\ntenant: t\nslo: {p95_ms: 100}\nthroughput: {T4: 1}\n", 1, "model", "must name the served model"},
		{"bad priority", head + "slo: {p95_ms: 100}\nthroughput: {T4: 1}\npriority: urgent\n", 6, "priority", `unknown priority class "urgent"`},
		{"error in a list", "- {name: a, tenant: t, model: m, slo: {p95_ms: 100}, throughput: {T4: 1}}\n- {name: b, tenant: t, model: m, slo: {p95_ms: 100},\n   throughput: {T4: -1}}\n",
			3, "[1].throughput.T4", "above 0"},
		{"error in the second document", head + "slo: {p95_ms: 100}\nthroughput: {T4: 1}\n---\n" + head + "slo: {p95_ms: 100}\nthroughput: {T4: 1}\nmax_replicas: 5000\n",
			12, "max_replicas", "between min_replicas"},
		{"JSON type error", "{\"name\": \"e\", \"tenant\": \"t\", \"model\": \"m\",\n \"slo\": {\"p95_ms\": \"fast\"}}\n", 2, "slo.p95_ms", "want a number of milliseconds"},
		{"YAML syntax", head + "slo: {p95_ms: 100\n", 3, "", "invalid YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps, err := ParseEndpoints("ep.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("ParseEndpoints = %+v, want an error", eps)
			}
			wantError(t, err, "ep.yaml", tc.line, tc.field, tc.msg)
		})
	}
}

// Every file under examples/endpoints is an endpoint file that reads
// without error, and the copilot example says what the README promises.
func TestEndpointExamples(t *testing.T) {
	files, err := filepath.Glob("../../examples/endpoints/*")
	if err != nil || len(files) < 2 {
		t.Fatalf("examples/endpoints holds %d files (%v), want at least 2", len(files), err)
	}
	byName := map[string]model.EndpointSpec{}
	for _, f := range files {
		eps, err := ReadEndpoints(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, e := range eps {
			byName[e.Name] = e
		}
	}
	chat, ok := byName["copilot-chat"]
	if !ok {
		t.Fatalf("no endpoint copilot-chat among %v", files)
	}
	want := map[string]float64{"T4": 120, "A100": 500, "H100": 900}
	if chat.SLO.P95 != 150*time.Millisecond || chat.MinReplicas != 2 || chat.MaxReplicas != 16 ||
		!reflect.DeepEqual(chat.Throughput, want) || !reflect.DeepEqual(chat.Placement.Regions, []string{"eastus", "westus"}) ||
		chat.Command[0] != "allot" {
		t.Errorf("copilot-chat = %+v", chat)
	}
	customers := 0
	for _, e := range byName {
		if e.Tenant == "acme" || e.Tenant == "globex" {
			customers++
		}
	}
	if customers == 0 {
		t.Error("no example endpoint of a customer tenant (acme, globex)")
	}
	all, err := ReadEndpoints("../../examples/endpoints")
	if err != nil || len(all) != len(byName) {
		t.Errorf("ReadEndpoints(dir) = %d endpoints, %v; want %d", len(all), err, len(byName))
	}
}

func TestReadEndpointsErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadEndpoints(dir); err == nil {
		t.Error("ReadEndpoints of an empty directory: no error")
	}
	p := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(p, []byte("name: e\ntenant: t\nmodel: m\nslo: {p95_ms: 1}\nthroughput: {T4: 1}\nreplicas: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadEndpoints(dir)
	wantError(t, err, p, 6, "replicas", "unknown field")
}
