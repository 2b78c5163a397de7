package server

import (
	"reflect"
	"testing"
	"time"

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

// Where a job may not run and where its attempts failed survive the
// store: a retry after a restart still keeps off those nodes.
func TestJobRecordKeepsExclusionsAndFailures(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	j := &model.Job{ID: "j1", Spec: model.JobSpec{Name: "j1", Tenant: "acme",
		Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1},
		Placement: model.Placement{Nodes: []string{"n3", "n5"}, ExcludeNodes: []string{"n3", "n4"}}},
		Status: model.JobStatus{State: model.StateQueued, Attempts: []model.Attempt{
			{Number: 1, Nodes: []string{"n1"}, Started: t1, Ended: t1, ExitCode: 3, Reason: "Failed", FailedNode: "n1"}}}}
	back, err := decodeJob(encodeJob(j))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Spec.Placement, j.Spec.Placement) || back.Status.Attempts[0].FailedNode != "n1" {
		t.Fatalf("after the store: placement %+v, failed node %q; want %+v and n1", back.Spec.Placement,
			back.Status.Attempts[0].FailedNode, j.Spec.Placement)
	}
}
