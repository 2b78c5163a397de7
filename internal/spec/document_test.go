package spec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// TestDocumentRoundTrip checks that the JSON document of a spec reads back
// as the same spec, for every example and for every field set.
func TestDocumentRoundTrip(t *testing.T) {
	specs := []model.JobSpec{{
		Name: "full", Tenant: "acme", Command: []string{"sh", "-c", "echo hi"}, Env: map[string]string{"A": "1", "B": ""},
		Resources: model.Resources{InstanceCount: 3, GPUsPerInstance: 1, GPUMilli: 250, GPUModels: []string{"T4", "A100"},
			CPUMilli: 1500, MemoryMiB: 65536},
		Priority: model.Priority{Class: model.ClassSpot, Value: -4},
		Placement: model.Placement{Regions: []string{"eastus"}, Residency: "eu", Interconnect: model.Fabric("infiniband"),
			DataRegion: "westus", Reservation: "r1", Nodes: []string{"n3"}, ExcludeNodes: []string{"n1", "n2"}},
		Retry:      model.Retry{MaxRetries: 5, Timeout: 90 * time.Minute},
		Checkpoint: model.Checkpoint{Interval: time.Hour, Grace: 45 * time.Second},
		Duration:   26 * time.Hour,
		Labels:     map[string]string{"workload": "batch", "team.example.com/cost-center": "42"},
		Begin:      time.Date(2026, 12, 24, 2, 0, 0, 500, time.UTC),
	}, {
		Name: "cpu-only", Tenant: "t", Resources: model.Resources{InstanceCount: 1, CPUMilli: 500},
	}, {
		Name: "elastic", Tenant: "t", Resources: model.Resources{InstanceCount: 2, GPUsPerInstance: 8},
		Elastic: &model.Elastic{MinInstances: 2, MaxInstances: 8, Step: 2},
	}, {
		Name: "image", Tenant: "t", Command: []string{"torchrun", "train.py"}, Resources: model.Resources{InstanceCount: 2, GPUsPerInstance: 8},
		Container: &model.Container{Image: "nvcr.io/nvidia/pytorch:24.05-py3", Args: []string{"--epochs", "3"}, Workdir: "/workspace",
			Mounts: []model.Mount{{Source: "/data/sets", Target: "/data", ReadOnly: true}, {Source: "/scratch", Target: "/scratch"}}},
	}, {
		Name: "entrypoint", Tenant: "t", Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1},
		Container: &model.Container{Image: "oci:/var/lib/allot/images/demo:latest"},
	}}
	files, err := filepath.Glob("../../examples/jobs/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseJobs(f, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, s...)
	}
	for _, s := range specs {
		t.Run(s.Name, func(t *testing.T) {
			doc, err := json.Marshal(DocumentOf(s))
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseJobs("body.json", doc, nil)
			if err != nil {
				t.Fatalf("%v\n%s", err, doc)
			}
			if len(back) != 1 || !reflect.DeepEqual(back[0], s) {
				t.Errorf("round trip changed the spec\n got %+v\nwant %+v\ndoc %s", back, s, doc)
			}
			if strings.Contains(string(doc), "null") {
				t.Errorf("document has a null: %s", doc)
			}
		})
	}
}
