package spec

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

func TestParseJobsSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		sets []string
		want func(*model.JobSpec) // edits the spec read without sets
	}{
		{"class", pretrain, []string{"priority=spot"},
			func(s *model.JobSpec) { s.Priority = model.Priority{Class: model.ClassSpot} }},
		{"class and value", pretrain, []string{"priority=reserved:5"},
			func(s *model.JobSpec) { s.Priority = model.Priority{Class: model.ClassReserved, Value: 5} }},
		{"priority as a flow mapping", pretrain, []string{"priority={class: spot, value: 2}"},
			func(s *model.JobSpec) { s.Priority = model.Priority{Class: model.ClassSpot, Value: 2} }},
		{"nested int", pretrain, []string{"retry.max_retries=5"},
			func(s *model.JobSpec) { s.Retry.MaxRetries = 5 }},
		{"flow list", pretrain, []string{"resources.gpu_models=[H100,A100]", "placement.regions=[eastus]"},
			func(s *model.JobSpec) {
				s.Resources.GPUModels = []string{"H100", "A100"}
				s.Placement.Regions = []string{"eastus"}
			}},
		{"creates mappings", "name: j\ntenant: t\n", []string{"retry.timeout=45m", "checkpoint.grace=1m"},
			func(s *model.JobSpec) {
				s.Retry.Timeout = 45 * time.Minute
				s.Checkpoint.Grace = time.Minute
			}},
		{"into a null mapping", "name: j\ntenant: t\nretry:\n", []string{"retry.max_retries=1"},
			func(s *model.JobSpec) { s.Retry.MaxRetries = 1 }},
		{"env key", pretrain, []string{"env.WANDB_MODE=online", "env.NEW=1"},
			func(s *model.JobSpec) { s.Env["WANDB_MODE"] = "online"; s.Env["NEW"] = "1" }},
		{"empty value resets to the default", pretrain, []string{"resources.gpus_per_instance=", "duration="},
			func(s *model.JobSpec) { s.Resources.GPUsPerInstance = 1; s.Duration = 0 }},
		{"short keys, as plan and job show print them", pretrain, []string{"instance_count=3", "max_retries=4", "grace=1m", "regions=[westus]"},
			func(s *model.JobSpec) {
				s.Resources.InstanceCount = 3
				s.Retry.MaxRetries = 4
				s.Checkpoint.Grace = time.Minute
				s.Placement.Regions = []string{"westus"}
			}},
		{"later set wins", pretrain, []string{"retry.max_retries=1", "retry.max_retries=2"},
			func(s *model.JobSpec) { s.Retry.MaxRetries = 2 }},
		{"value with = and spaces", pretrain, []string{"command=python -c 'a=1'"},
			func(s *model.JobSpec) { s.Command = []string{"/bin/sh", "-c", "python -c 'a=1'"} }},
		{"into a merged mapping", `
- &base {name: a, tenant: t, resources: {cpu: 2, gpus_per_instance: 0}}
- <<: *base
  name: b
`, []string{"resources.memory=1Gi"},
			func(s *model.JobSpec) { s.Resources.MemoryMiB = 1024 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := ParseJobs("job.yaml", doc(tc.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				tc.want(&want[i])
			}
			got, err := ParseJobs("job.yaml", doc(tc.yaml), tc.sets)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("with %q:\n got %+v\nwant %+v", tc.sets, got, want)
			}
		})
	}
}

// A --set changes every job and leaves shared (anchored) values of the file
// alone for the fields it does not name.
func TestParseJobsSetEveryDocument(t *testing.T) {
	jobs, err := ParseJobs("jobs.yaml", doc(`
name: a
tenant: t
resources: &r {cpu: 2, memory: 1Gi}
---
name: b
tenant: t
`), []string{"resources.cpu=4"})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Resources.CPUMilli != 4000 {
			t.Errorf("job %s cpu = %dm, want 4000m", j.Name, j.Resources.CPUMilli)
		}
	}
	if jobs[0].Resources.MemoryMiB != 1024 || jobs[1].Resources.MemoryMiB != 0 {
		t.Errorf("memory = %d, %d, want 1024, 0", jobs[0].Resources.MemoryMiB, jobs[1].Resources.MemoryMiB)
	}
}

func TestParseJobsSetErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		set   string
		file  string
		line  int
		field string
		msg   string
	}{
		{"no =", pretrain, "priority", "--set priority", 0, "", "want key=value"},
		{"no key", pretrain, "=spot", "--set =spot", 0, "", "want key=value"},
		{"unknown key", pretrain, "priorty=spot", "--set priorty", 0, "priorty", `unknown key "priorty" (known keys: after, after_condition, args, array, array_index, begin, checkpoint, command, duration, elastic, env, image, labels, mounts, name, placement, priority, resources, retry, tenant, workdir); did you mean priority?`},
		{"unknown nested key", pretrain, "retry.max=5", "--set retry.max", 0, "retry.max", `unknown key "max" (known keys under retry: max_retries, timeout)`},
		{"key under a value", pretrain, "priority.class=spot", "--set priority.class", 0, "priority.class", "priority takes one value"},
		{"key under a scalar", pretrain, "name.first=x", "--set name.first", 0, "name.first", "name is a single value"},
		{"empty key part", pretrain, "retry..timeout=1h", "--set retry..timeout", 0, "retry..timeout", "empty part"},
		{"bad YAML value", pretrain, "resources.gpu_models=[H100", "--set resources.gpu_models", 0, "resources.gpu_models", "invalid value"},
		{"type error", pretrain, "retry.max_retries=lots", "--set retry.max_retries", 0, "retry.max_retries", "want an integer"},
		{"type error in a created mapping", "name: j\ntenant: t\n", "retry.timeout=1d", "--set retry.timeout", 0, "retry.timeout", "days (d)"},
		{"type error inside a list", pretrain, "resources.gpu_models=[H100, [A100]]", "--set resources.gpu_models", 0, "resources.gpu_models[1]", "want a string"},
		{"short key, semantic error", pretrain, "instance_count=0", "--set instance_count", 0, "resources.instance_count", "must be between 1 and 4096"},
		{"semantic error", pretrain, "resources.instance_count=0", "--set resources.instance_count", 0, "resources.instance_count", "must be between 1 and 4096"},
		{"semantic error in a list", pretrain, `placement.regions=[eastus, ""]`, "--set placement.regions", 0, "placement.regions[1]", "must not be empty"},
		{"file value in the way", "name: j\ntenant: t\nretry: 3\n", "retry.max_retries=1", "job.yaml", 3, "retry", "--set retry.max_retries: want a mapping here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs, err := ParseJobs("job.yaml", doc(tc.yaml), []string{tc.set})
			if err == nil {
				t.Fatalf("ParseJobs = %+v, want an error", jobs)
			}
			wantError(t, err, tc.file, tc.line, tc.field, tc.msg)
		})
	}
}

// TestShortKeyUnderSeveralMappings: a short key two mappings have is
// refused with both whole keys (the job layout has none such today).
func TestShortKeyUnderSeveralMappings(t *testing.T) {
	type inner struct {
		Timeout string `yaml:"timeout"`
	}
	type layout struct {
		Name  string `yaml:"name"`
		Retry inner  `yaml:"retry"`
		Setup *inner `yaml:"setup"`
	}
	_, err := shortKey(reflect.TypeFor[layout](), []string{"timeout"})
	if err == nil || !strings.Contains(err.Error(), "retry.timeout, setup.timeout") {
		t.Fatalf("shortKey(timeout) = %v, want both whole keys named", err)
	}
	if p, err := shortKey(reflect.TypeFor[layout](), []string{"name"}); err != nil || len(p) != 1 {
		t.Fatalf("shortKey(name) = %v, %v, want the top-level key as it is", p, err)
	}
}
