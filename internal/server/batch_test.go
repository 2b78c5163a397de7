package server

import (
	"context"
	"errors"
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
)

func batchSpecs(t *testing.T, doc string) []model.JobSpec {
	t.Helper()
	specs, err := spec.ParseJobs("batch", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

// TestSubmitBatchAllOrNothing checks that a batch with a job that can
// never run stores none of its jobs and names every refused one, and that
// a good batch stores all of them at once.
func TestSubmitBatchAllOrNothing(t *testing.T) {
	h := newHarness(t)
	bad := batchSpecs(t, `[`+chat+`,
		{name: huge, tenant: copilot, resources: {instance_count: 100, gpus_per_instance: 8, gpu_models: [H100]}},
		{name: other, tenant: acme, resources: {gpus_per_instance: 1}}]`)
	_, err := h.srv.SubmitBatch(context.Background(), copilot, bad)
	var be *BatchError
	if !errors.As(err, &be) || len(be.Refusals) != 2 || be.Total != 3 {
		t.Fatalf("err %v, want a BatchError refusing 2 of 3", err)
	}
	if r := be.Refusals[0]; r.Index != 1 || r.Name != "huge" || r.Err.Code != CodeSkuNotAvailable {
		t.Errorf("first refusal %+v, want job 1 huge SkuNotAvailable", r)
	}
	if r := be.Refusals[1]; r.Index != 2 || r.Err.Code != CodeForbidden {
		t.Errorf("second refusal %+v, want job 2 Forbidden", r)
	}
	if n := len(mustJobs(t, h.srv, admin, JobFilter{})); n != 0 {
		t.Fatalf("%d jobs stored by a refused batch", n)
	}
	good := batchSpecs(t, "name: sweep\ntenant: copilot\narray: 0-19\nresources: {gpu_milli: 100, gpu_models: [T4]}\n")
	jobs, err := h.srv.SubmitBatch(context.Background(), copilot, good)
	if err != nil || len(jobs) != 20 {
		t.Fatalf("good batch: %d jobs, %v", len(jobs), err)
	}
	ids := map[string]bool{}
	for i, j := range jobs {
		ids[j.ID] = true
		if j.Spec.ArrayIndex == nil || *j.Spec.ArrayIndex != i {
			t.Errorf("job %d has array index %v", i, j.Spec.ArrayIndex)
		}
	}
	stored := mustJobs(t, h.srv, admin, JobFilter{})
	if len(stored) != 20 || len(ids) != 20 {
		t.Fatalf("%d jobs stored with %d distinct IDs, want 20", len(stored), len(ids))
	}
	h.restart() // the array index survives the store
	for _, j := range mustJobs(t, h.srv, admin, JobFilter{}) {
		if j.Spec.ArrayIndex == nil {
			t.Fatalf("%s lost its array index in the store", j.ID)
		}
	}
	if _, err := h.srv.SubmitBatch(context.Background(), copilot, nil); err == nil {
		t.Error("an empty batch was accepted")
	}
}
