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

// An elastic job's range, its resizes and the ranks of a resized attempt
// still stopping survive the store; a record written before elastic jobs
// were reads back as a job of a fixed size.
func TestJobRecordKeepsElastic(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	j := &model.Job{ID: "j1", Spec: model.JobSpec{Name: "j1", Tenant: "acme",
		Resources: model.Resources{InstanceCount: 2, GPUsPerInstance: 8},
		Elastic:   &model.Elastic{MinInstances: 2, MaxInstances: 6, Step: 2}},
		Status: model.JobStatus{State: model.StatePreparing, Resizes: 3,
			Resizing:  []model.Instance{{Started: true}, {Started: true, Exited: true, Outcome: "Stopped"}},
			Instances: make([]model.Instance, 4),
			Attempts: []model.Attempt{
				{Number: 1, Nodes: []string{"n1", "n2"}, Started: t1, StopOrdered: t1.Add(time.Hour), Reason: "Resized", Detail: "grew 2→4"},
				{Number: 2, Nodes: []string{"n1", "n2", "n3", "n4"}, Placed: t1.Add(time.Hour)}}}}
	back, err := decodeJob(encodeJob(j))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Spec.Elastic, j.Spec.Elastic) || back.Status.Resizes != 3 || !reflect.DeepEqual(back.Status.Resizing, j.Status.Resizing) {
		t.Fatalf("after the store: elastic %+v, resizes %d, resizing %+v; want %+v, 3, %+v", back.Spec.Elastic,
			back.Status.Resizes, back.Status.Resizing, j.Spec.Elastic, j.Status.Resizing)
	}
	old := []byte(`{"id":"j0","spec":{"name":"j0","tenant":"acme","instance_count":2,"gpus_per_instance":8,"priority_class":1},` +
		`"status":{"state":"Running","submitted_at":"2026-01-01T00:00:00Z","preemptions":1}}`)
	prior, err := decodeJob(old)
	if err != nil || prior.Spec.Elastic != nil || prior.Status.Resizes != 0 || prior.Status.Resizing != nil || prior.Status.Preemptions != 1 {
		t.Fatalf("a record of before elastic jobs: %+v, %v", prior, err)
	}
}
