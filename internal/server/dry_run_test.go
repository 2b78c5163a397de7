package server

import (
	"context"
	"errors"
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

// A batch's dry run weighs its jobs together: of three one-GPU jobs for a
// region with two such GPUs, each of which fits alone, two would start and
// the third wait; a step after one of them in the batch is Blocked on it;
// a batch with a job a submit would refuse lists the refusal; nothing is
// stored.
func TestTrySubmitBatch(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	copilot := Principal{Tenant: "copilot"}
	parse := func(doc string) []model.JobSpec {
		t.Helper()
		specs, err := spec.ParseJobs("test", []byte(doc), nil)
		if err != nil {
			t.Fatal(err)
		}
		return specs
	}
	before := len(h.srv.cache.snapshot().jobs)
	one := `{name: %s, tenant: copilot, command: [x], resources: {gpus_per_instance: 1, gpu_models: [A100]}, placement: {regions: [eastus]}}`
	docs := ""
	for _, n := range []string{"a1", "a2", "a3"} {
		docs += "---\n" + strings.Replace(one, "%s", n, 1) + "\n"
	}
	docs += "---\n{name: after-a1, tenant: copilot, command: [x], resources: {gpus_per_instance: 0, cpu: 1}, after: [a1]}\n"
	whys, err := h.srv.TrySubmitBatch(ctx, copilot, parse(docs))
	if err != nil || len(whys) != 4 {
		t.Fatalf("batch: %d answers, %v", len(whys), err)
	}
	started := 0
	for _, w := range whys[:3] {
		if strings.HasPrefix(w.Job.Status.Detail, "would start now on ") {
			started++
		} else if w.Job.Status.Reason != "InsufficientCapacity" {
			t.Errorf("%s: %s %s, want it to start or wait for capacity", w.Job.Spec.Name, w.Job.Status.Reason, w.Job.Status.Detail)
		}
	}
	if started != 2 {
		t.Errorf("%d of the three jobs would start together, want 2 (the region has two A100s)", started)
	}
	if st := whys[3].Job.Status; st.State != model.StateBlocked || !strings.Contains(st.Detail, whys[0].Job.ID) {
		t.Errorf("the step after a1: %s %q, want Blocked on %s", st.State, st.Detail, whys[0].Job.ID)
	}
	// Alone, the third fits.
	if w, err := h.srv.TrySubmit(ctx, copilot, parse(strings.Replace(one, "%s", "a3", 1))[0]); err != nil ||
		!strings.HasPrefix(w.Job.Status.Detail, "would start now on ") {
		t.Errorf("a3 alone: %+v %v, want it to start", w.Job.Status, err)
	}

	_, err = h.srv.TrySubmitBatch(ctx, copilot, parse(docs+"---\n{name: other, tenant: acme, command: [x], resources: {gpus_per_instance: 1}}\n"))
	var be *BatchError
	if !errors.As(err, &be) || len(be.Refusals) != 1 || be.Refusals[0].Index != 4 {
		t.Errorf("a batch with another tenant's job: %v, want a BatchError refusing job 4", err)
	}
	if after := len(h.srv.cache.snapshot().jobs); after != before {
		t.Errorf("dry runs stored %d jobs", after-before)
	}
}
