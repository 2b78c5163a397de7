package server

import (
	"reflect"
	"testing"

	"github.com/allot-dev/allot/internal/model"
)

// A job's labels survive the store: operator policies select work by them
// after a restart as before it.
func TestJobRecordKeepsLabels(t *testing.T) {
	j := &model.Job{ID: "j1", Spec: model.JobSpec{Name: "j1", Tenant: "acme",
		Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1},
		Labels:    map[string]string{"workload": "batch", "team.example.com/cost-center": "42"}},
		Status: model.JobStatus{State: model.StateQueued}}
	back, err := decodeJob(encodeJob(j))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Spec.Labels, j.Spec.Labels) {
		t.Fatalf("labels = %v after the store, want %v", back.Spec.Labels, j.Spec.Labels)
	}
	j.Spec.Labels = nil
	if back, _ := decodeJob(encodeJob(j)); back.Spec.Labels != nil {
		t.Fatalf("a job without labels reads back with %v", back.Spec.Labels)
	}
}
