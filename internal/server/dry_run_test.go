package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
)

// A dry run says what would become of a job now and stores nothing: the
// nodes it would start on, the core's reason and an estimate when it would
// wait (drained nodes, a begin time), Blocked for a pipeline step, and the
// refusal a submit would get.
func TestTrySubmit(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	copilot := Principal{Tenant: "copilot"}
	try := func(p Principal, doc string) (Why, error) {
		t.Helper()
		specs, err := spec.ParseJobs("test", []byte(doc), nil)
		if err != nil {
			t.Fatal(err)
		}
		return h.srv.TrySubmit(ctx, p, specs[0])
	}
	before := len(h.srv.cache.snapshot().jobs)

	w, err := try(copilot, `{name: small, tenant: copilot, command: [x], resources: {gpu_milli: 250, gpu_models: [T4]}}`)
	if err != nil || w.Job.Status.Reason != "" || !strings.HasPrefix(w.Job.Status.Detail, "would start now on ") ||
		w.EstimatedStart == nil || !w.EstimatedStart.Equal(h.clock.Now()) {
		t.Fatalf("a job that fits: %+v %v, want it started now on a node", w, err)
	}

	for _, n := range []string{"eastus-a100x1-01", "eastus-a100x1-02"} {
		if _, err := h.srv.DrainNode(ctx, admin, n, "maintenance"); err != nil {
			t.Fatal(err)
		}
	}
	w, err = try(copilot, `{name: a100, tenant: copilot, command: [x], resources: {gpus_per_instance: 1, gpu_models: [A100]}, placement: {regions: [eastus]}}`)
	if err != nil || w.Job.Status.Reason != "NoReadyNodes" || !strings.Contains(w.Job.Status.Detail, "eastus-a100x1-01, eastus-a100x1-02") ||
		w.EstimatedStart != nil || w.Estimate.Why == "" {
		t.Fatalf("a job whose nodes are drained: %+v (%v), want NoReadyNodes naming them and no estimate", w, err)
	}

	begin := h.clock.Now().Add(3 * time.Hour)
	w, err = try(copilot, `{name: later, tenant: copilot, command: [x], resources: {gpu_milli: 250, gpu_models: [T4]}, begin: `+begin.Format(time.RFC3339)+`}`)
	if err != nil || w.Job.Status.Reason != ReasonBeginTime || w.EstimatedStart == nil || w.EstimatedStart.Before(begin) {
		t.Fatalf("a job with a begin time: %+v (%v), want BeginTime, estimated no earlier than %s", w, err, begin)
	}

	prep := h.submit(copilot, `{name: prep, tenant: copilot, command: [x], resources: {gpu_milli: 250, gpu_models: [T4]}}`)
	before++
	w, err = try(copilot, `{name: step, tenant: copilot, command: [x], resources: {gpu_milli: 250, gpu_models: [T4]}, after: [`+prep.ID+`]}`)
	if err != nil || w.Job.Status.State != model.StateBlocked || w.Job.Status.Reason != model.ReasonWaitsForPredecessor {
		t.Fatalf("a pipeline step: %+v (%v), want Blocked on prep", w.Job.Status, err)
	}

	if _, err := try(copilot, `{name: huge, tenant: copilot, command: [x], resources: {gpus_per_instance: 8, gpu_models: [B200]}}`); !isCode(err, CodeSkuNotAvailable) {
		t.Errorf("a job no SKU has: %v, want SkuNotAvailable as a submit gets", err)
	}
	if _, err := try(Principal{Tenant: "research"}, `{name: x, tenant: copilot, command: [x], resources: {gpu_milli: 250}}`); !isCode(err, CodeForbidden) {
		t.Errorf("another tenant's job: %v, want Forbidden", err)
	}
	if after := len(h.srv.cache.snapshot().jobs); after != before {
		t.Errorf("%d jobs after the dry runs, want %d: a dry run stored one", after, before)
	}
	all, err := h.srv.Jobs(ctx, admin, JobFilter{})
	if err != nil || len(all) != before {
		t.Errorf("the store lists %d jobs (%v), want %d", len(all), err, before)
	}
}
