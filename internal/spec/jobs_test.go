package spec

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

const pretrain = `
name: llama-pretrain
tenant: copilot
command: ["python", "train.py"]
env: {WANDB_MODE: offline, SEED: 7}
resources:
  instance_count: 4
  gpus_per_instance: 8
  gpu_models: [H100, A100]
  cpu: 32
  memory: 256Gi
priority: standard:10
placement: {regions: [eastus, westus], residency: us, interconnect: infiniband, data_region: eastus, reservation: acme-h100,
  exclude_nodes: [eastus-h100-03]}
retry: {max_retries: 3, timeout: 2h}
checkpoint: {interval: 30m, grace: 30s}
duration: 4h
`

func TestParseJobs(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want []model.JobSpec
	}{
		{"full", pretrain, []model.JobSpec{{
			Name:    "llama-pretrain",
			Tenant:  "copilot",
			Command: []string{"python", "train.py"},
			Env:     map[string]string{"WANDB_MODE": "offline", "SEED": "7"},
			Resources: model.Resources{InstanceCount: 4, GPUsPerInstance: 8, GPUModels: []string{"H100", "A100"},
				CPUMilli: 32_000, MemoryMiB: 256 * 1024},
			Priority: model.Priority{Class: model.ClassStandard, Value: 10},
			Placement: model.Placement{Regions: []string{"eastus", "westus"}, Residency: "us",
				Interconnect: model.FabricInfiniBand, DataRegion: "eastus", Reservation: "acme-h100",
				ExcludeNodes: []string{"eastus-h100-03"}},
			Retry:      model.Retry{MaxRetries: 3, Timeout: 2 * time.Hour},
			Checkpoint: model.Checkpoint{Interval: 30 * time.Minute, Grace: 30 * time.Second},
			Duration:   4 * time.Hour,
		}}},
		{"defaults", `
name: j
tenant: t
`, []model.JobSpec{{Name: "j", Tenant: "t",
			Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1},
			Priority:  model.Priority{Class: model.ClassStandard}}}},
		{"cpu only, shell command, priority mapping", `
name: etl
tenant: t
command: echo hi && sleep 1
resources: {gpus_per_instance: 0, cpu: "500m", memory: 512Mi}
priority: {class: spot, value: -3}
`, []model.JobSpec{{Name: "etl", Tenant: "t", Command: []string{"/bin/sh", "-c", "echo hi && sleep 1"},
			Resources: model.Resources{InstanceCount: 1, CPUMilli: 500, MemoryMiB: 512},
			Priority:  model.Priority{Class: model.ClassSpot, Value: -3}}}},
		{"fraction, fractional cores, MiB as integer", `
name: infer
tenant: t
resources: {gpu_milli: 250, cpu: 0.5, memory: 1000, gpu_models: T4}
priority: reserved
`, []model.JobSpec{{Name: "infer", Tenant: "t",
			Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1, GPUMilli: 250, GPUModels: []string{"T4"}, CPUMilli: 500, MemoryMiB: 1000},
			Priority:  model.Priority{Class: model.ClassReserved}}}},
		{"several documents and a list", `
name: a
tenant: t
---
# a list of two
- {name: b, tenant: t, resources: {memory: 1Ti}}
- {name: c, tenant: t}
---
`, []model.JobSpec{
			{Name: "a", Tenant: "t", Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1}, Priority: model.Priority{Class: model.ClassStandard}},
			{Name: "b", Tenant: "t", Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1, MemoryMiB: 1 << 20}, Priority: model.Priority{Class: model.ClassStandard}},
			{Name: "c", Tenant: "t", Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1}, Priority: model.Priority{Class: model.ClassStandard}},
		}},
		{"JSON", "{\n\t\"name\": \"j\",\n\t\"tenant\": \"t\",\n\t\"command\": [\"python\", \"-c\", \"print(1)\"],\n\t\"resources\": {\"gpus_per_instance\": 2, \"cpu\": 4, \"memory\": \"8Gi\"},\n\t\"retry\": {\"timeout\": \"90m\"}\n}\n",
			[]model.JobSpec{{Name: "j", Tenant: "t", Command: []string{"python", "-c", "print(1)"},
				Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 2, CPUMilli: 4000, MemoryMiB: 8192},
				Priority:  model.Priority{Class: model.ClassStandard},
				Retry:     model.Retry{Timeout: 90 * time.Minute}}}},
		{"anchors and merge keys", `
- &base {name: a, tenant: t, resources: {cpu: 2}, retry: {max_retries: 2}}
- <<: *base
  name: b
`, []model.JobSpec{
			{Name: "a", Tenant: "t", Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1, CPUMilli: 2000}, Priority: model.Priority{Class: model.ClassStandard}, Retry: model.Retry{MaxRetries: 2}},
			{Name: "b", Tenant: "t", Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1, CPUMilli: 2000}, Priority: model.Priority{Class: model.ClassStandard}, Retry: model.Retry{MaxRetries: 2}},
		}},
		{"elastic, instance_count from min_instances", `
name: e
tenant: t
resources: {gpus_per_instance: 8}
elastic: {min_instances: 2, max_instances: 6, step: 2}
`, []model.JobSpec{{Name: "e", Tenant: "t",
			Resources: model.Resources{InstanceCount: 2, GPUsPerInstance: 8},
			Priority:  model.Priority{Class: model.ClassStandard},
			Elastic:   &model.Elastic{MinInstances: 2, MaxInstances: 6, Step: 2}}}},
		{"elastic with instance_count written", `
name: e
tenant: t
resources: {instance_count: 3}
elastic: {min_instances: 3, max_instances: 4}
`, []model.JobSpec{{Name: "e", Tenant: "t",
			Resources: model.Resources{InstanceCount: 3, GPUsPerInstance: 1},
			Priority:  model.Priority{Class: model.ClassStandard},
			Elastic:   &model.Elastic{MinInstances: 3, MaxInstances: 4}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseJobs("job.yaml", doc(tc.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseJobs =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestParseJobsErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		line  int
		field string
		msg   string
	}{
		{"empty", "", 0, "", "file is empty"},
		{"only separators", "---\n---\n", 0, "", "file is empty"},
		{"scalar document", "hello\n", 1, "", "want a mapping"},
		{"unknown field", `
name: j
tenant: t
resources:
  gpus: 8
`, 4, "resources.gpus", `unknown field "gpus" (known fields: cpu, gpu_milli, gpu_models, gpus_per_instance, instance_count, memory)`},
		{"string for int", `
name: j
tenant: t
resources:
  instance_count: four
`, 4, "resources.instance_count", `want an integer, got the string "four"`},
		{"quoted int", `
name: j
tenant: t
retry: {max_retries: "3"}
`, 3, "retry.max_retries", `want an integer, got the string "3"`},
		{"days", `
name: j
tenant: t
retry: {timeout: 1d}
`, 3, "retry.timeout", "days (d) are not a unit"},
		{"duration without unit", `
name: j
tenant: t
checkpoint:
  interval: 30
`, 4, "checkpoint.interval", "want a duration like 90s"},
		{"bad memory", `
name: j
tenant: t
resources: {memory: 64GB}
`, 3, "resources.memory", "want a size like 512Mi"},
		{"bad cpu", `
name: j
tenant: t
resources: {cpu: lots}
`, 3, "resources.cpu", "want cores like 32"},
		{"too fine cpu", `
name: j
tenant: t
resources: {cpu: 0.0001}
`, 3, "resources.cpu", "finer than a milli-core"},
		{"bad priority", `
name: j
tenant: t
priority: urgent
`, 3, "priority", `unknown priority class "urgent"`},
		{"bad priority class in mapping", `
name: j
tenant: t
priority:
  class: urgent
  value: 3
`, 4, "priority.class", `unknown priority class "urgent"`},
		{"unknown priority field", `
name: j
tenant: t
priority: {class: spot, level: 3}
`, 3, "priority.level", `unknown field "level"`},
		{"command of mappings", `
name: j
tenant: t
command:
  - python
  - {script: train.py}
`, 5, "command[1]", "want a string, got a mapping"},
		{"env value not a string", `
name: j
tenant: t
env:
  A: [1, 2]
`, 4, "env.A", "want a string, got a list"},
		{"missing name", `
tenant: t
`, 1, "name", "must not be empty"},
		{"zero instances", `
name: j
tenant: t
resources:
  instance_count: 0
`, 4, "resources.instance_count", "must be between 1 and 4096"},
		{"fraction of several GPUs", `
name: j
tenant: t
resources:
  gpus_per_instance: 2
  gpu_milli: 250
`, 5, "resources.gpu_milli", "needs gpus_per_instance: 1"},
		{"no GPU and no CPU", `
name: j
tenant: t
resources:
  gpus_per_instance: 0
`, 4, "resources", "must ask for GPUs or CPU"},
		{"bad interconnect", `
name: j
tenant: t
placement: {interconnect: nvlink}
`, 3, "placement.interconnect", "must be infiniband, roce or ethernet"},
		{"empty region", `
name: j
tenant: t
placement:
  regions: [eastus, ""]
`, 4, "placement.regions[1]", "must not be empty"},
		{"error in second document", `
name: a
tenant: t
---
name: b
tenant: t
retry: {max_retries: -1}
`, 6, "retry.max_retries", "must be between 0 and 1000"},
		{"error in a list", `
- {name: a, tenant: t}
- name: b
  tenant: t
  resources: {gpus_per_instance: 65}
`, 4, "[1].resources.gpus_per_instance", "must be between 0 and 64"},
		{"elastic min over max", `
name: j
tenant: t
elastic:
  min_instances: 4
  max_instances: 2
`, 5, "elastic.max_instances", "must be between min_instances (4) and 4096, got 2"},
		{"elastic step not dividing", `
name: j
tenant: t
elastic: {min_instances: 2, max_instances: 6,
  step: 3}
`, 4, "elastic.step", "3 does not divide max_instances - min_instances"},
		{"elastic instance_count mismatch", `
name: j
tenant: t
resources:
  instance_count: 4
elastic: {min_instances: 2, max_instances: 6}
`, 4, "resources.instance_count", "must equal elastic.min_instances (2)"},
		{"elastic fraction of a GPU", `
name: j
tenant: t
resources: {gpu_milli: 500}
elastic: {min_instances: 1, max_instances: 2}
`, 4, "elastic", "takes whole GPUs"},
		{"elastic unknown field", `
name: j
tenant: t
elastic: {min: 1, max_instances: 2}
`, 3, "elastic.min", `unknown field "min" (known fields: max_instances, min_instances, step)`},
		{"JSON type error", "{\n  \"name\": \"j\",\n  \"tenant\": \"t\",\n  \"resources\": {\"cpu\": [1]}\n}\n",
			4, "resources.cpu", "want cores"},
		{"JSON unknown field", "{\"name\": \"j\", \"tenant\": \"t\",\n \"priorty\": \"spot\"}\n", 2, "priorty", "unknown field"},
		{"JSON syntax", "{\"name\": \"j\",\n \"tenant\": \"t\",\n \"x\": \"1}\n", 3, "", "invalid YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs, err := ParseJobs("job.yaml", doc(tc.yaml), nil)
			if err == nil {
				t.Fatalf("ParseJobs = %+v, want an error", jobs)
			}
			wantError(t, err, "job.yaml", tc.line, tc.field, tc.msg)
		})
	}
}

func TestReadJobsDir(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"b.yaml":      "name: b\ntenant: t\n---\nname: c\ntenant: t\n",
		"a.json":      `{"name": "a", "tenant": "t"}`,
		"d.yml":       "name: d\ntenant: t\n",
		"notes.txt":   "not a job",
		"sub/e.yaml":  "name: e\ntenant: t\n",
		"bad.yaml.bk": ":",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := ReadJobs(dir, []string{"priority=spot"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range jobs {
		names = append(names, j.Name)
		if j.Priority.Class != model.ClassSpot {
			t.Errorf("job %s priority = %v, want spot from --set", j.Name, j.Priority)
		}
	}
	if want := []string{"a", "b", "c", "d"}; !reflect.DeepEqual(names, want) {
		t.Errorf("jobs = %v, want %v", names, want)
	}

	one, err := ReadJobs(filepath.Join(dir, "d.yml"), nil)
	if err != nil || len(one) != 1 || one[0].Name != "d" {
		t.Errorf("ReadJobs(file) = %+v, %v", one, err)
	}
	if _, err := ReadJobs(filepath.Join(dir, "sub", "none"), nil); err == nil {
		t.Error("ReadJobs of a missing path: no error")
	}
	if _, err := ReadJobs(t.TempDir(), nil); err == nil {
		t.Error("ReadJobs of an empty directory: no error")
	}
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte("name: x\nbogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadJobs(dir, nil)
	wantError(t, err, filepath.Join(dir, "c.yaml"), 2, "bogus", "unknown field")
}
