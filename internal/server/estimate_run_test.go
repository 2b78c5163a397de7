package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// TestBlockedStepEstimate: a Blocked step is estimated to start when the
// jobs it waits for are expected to end, along the chain; a step whose
// predecessor has no duration, history or timeout has none, and says why.
func TestBlockedStepEstimate(t *testing.T) {
	h := newHarness(t)
	jobs, err := h.srv.SubmitBatch(context.Background(), copilot, batchSpecs(t, pipelineDoc))
	if err != nil {
		t.Fatal(err)
	}
	prep, train, eval := jobs[0].ID, jobs[1].ID, jobs[2].ID
	h.clock.Advance(time.Second)
	h.cycle()
	started := h.job(prep).Status.StartedAt
	if started.IsZero() {
		t.Fatalf("prepare did not start: %+v", h.job(prep).Status)
	}
	// prepare runs: where, and what may preempt it.
	if w := h.why(prep); w.Exposure == nil || len(w.Exposure.By) == 0 {
		t.Errorf("running prepare's why has no exposure: %+v", w.Exposure)
	}
	w := h.why(train)
	if w.Exposure != nil {
		t.Errorf("blocked train has an exposure: %+v", w.Exposure)
	}
	if w.EstimatedStart == nil || !w.EstimatedStart.Equal(started.Add(10*time.Minute)) {
		t.Fatalf("train's estimated start %v (%s), want prepare's start + its 10m duration, %s", w.EstimatedStart, w.Estimate.Why, started.Add(10*time.Minute))
	}
	if !strings.Contains(w.Estimate.How, prep+" (Running)") || !strings.Contains(w.Estimate.How, "its duration") {
		t.Errorf("train's estimate says %q, want prepare and its duration named", w.Estimate.How)
	}
	if w.ExpectedRun != 10*time.Minute || w.ExpectedRunBasis != "its duration" {
		t.Errorf("train's expected run %s (%s), want 10m (its duration)", w.ExpectedRun, w.ExpectedRunBasis)
	}
	// evaluate waits for train, itself a step: 10m more.
	w = h.why(eval)
	if w.EstimatedStart == nil || !w.EstimatedStart.Equal(started.Add(20*time.Minute)) {
		t.Fatalf("evaluate's estimated start %v (%s), want %s", w.EstimatedStart, w.Estimate.Why, started.Add(20*time.Minute))
	}
	if w.ExpectedRun != 0 {
		t.Errorf("evaluate (no duration, history or timeout) has an expected run of %s (%s)", w.ExpectedRun, w.ExpectedRunBasis)
	}

	// A step after a job without a duration, history or timeout: no
	// estimate, and the reason.
	free := h.submit(copilot, `{name: open-ended, tenant: copilot, resources: {gpu_milli: 250, gpu_models: [T4]}}`)
	after := h.submit(copilot, `{name: after-it, tenant: copilot, after: [`+free.ID+`], resources: {gpu_milli: 250, gpu_models: [T4]}}`)
	h.clock.Advance(time.Second)
	h.cycle()
	w = h.why(after.ID)
	if w.EstimatedStart != nil || !strings.Contains(w.Estimate.Why, "no similar job has run") {
		t.Errorf("step after an open-ended job: start %v, why %q; want none, saying no similar job has run", w.EstimatedStart, w.Estimate.Why)
	}
}

// TestRunTimeFromHistory: a job without a duration is expected to run as
// long as the same tenant's jobs of its name ran (else of its shape),
// bounded by its retry timeout, and a restart keeps what was learned;
// another tenant's history is never used.
func TestRunTimeFromHistory(t *testing.T) {
	h := newHarness(t)
	for range 3 {
		h.submit(copilot, `{name: prepare, tenant: copilot, duration: 10m, resources: {gpu_milli: 250, gpu_models: [T4]}}`)
	}
	h.clock.Advance(time.Second)
	h.cycle()
	h.clock.Advance(10 * time.Minute)
	h.cycle() // the three end
	for _, restart := range []bool{false, true} {
		if restart {
			h.restart()
		}
		again := h.submit(copilot, `{name: prepare, tenant: copilot, resources: {gpu_milli: 250, gpu_models: [T4]}}`)
		w := h.why(again.ID)
		if w.ExpectedRun != 10*time.Minute || w.ExpectedRunBasis != "history of the same job: the median of 3 runs of copilot/prepare" {
			t.Errorf("restart %v: prepare again expected to run %s (%s), want 10m from the 3 runs of copilot/prepare", restart, w.ExpectedRun, w.ExpectedRunBasis)
		}
		h.cancel(again.ID)
	}
	other := h.submit(copilot, `{name: other, tenant: copilot, resources: {gpu_milli: 250, gpu_models: [T4]}}`)
	if w := h.why(other.ID); w.ExpectedRun != 10*time.Minute || !strings.HasPrefix(w.ExpectedRunBasis, "history of jobs of the same shape") {
		t.Errorf("a job of the same shape: %s (%s), want 10m from the same shape", w.ExpectedRun, w.ExpectedRunBasis)
	}
	bounded := h.submit(copilot, `{name: prepare, tenant: copilot, retry: {timeout: 5m}, resources: {gpu_milli: 250, gpu_models: [T4]}}`)
	if w := h.why(bounded.ID); w.ExpectedRun != 5*time.Minute || !strings.Contains(w.ExpectedRunBasis, "bounded by its retry timeout of 5m0s") {
		t.Errorf("with a 5m timeout: %s (%s), want 5m, bounded by the timeout", w.ExpectedRun, w.ExpectedRunBasis)
	}
	acme := Principal{Tenant: "acme"}
	theirs := h.submit(acme, `{name: prepare, tenant: acme, retry: {timeout: 2h}, resources: {gpu_milli: 250, gpu_models: [T4]}}`)
	w, err := h.srv.Explain(context.Background(), acme, theirs.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.ExpectedRun != 2*time.Hour || !strings.HasPrefix(w.ExpectedRunBasis, "retry timeout") {
		t.Errorf("another tenant's prepare: %s (%s), want its 2h timeout: copilot's runs are not acme's", w.ExpectedRun, w.ExpectedRunBasis)
	}
}

// TestRunBookLearnsOnce: the same end seen twice (the server's own write,
// then the watch) and runs that were not clean teach nothing more.
func TestRunBookLearnsOnce(t *testing.T) {
	c := newCache(nil, nil)
	j := &model.Job{ID: "j1", Spec: model.JobSpec{Name: "n", Tenant: "t"}}
	j.Status.State, j.Status.StartedAt, j.Status.EndedAt = model.StateRunning, t0, t0.Add(time.Hour)
	c.putJobs([]*model.Job{j}, 1)
	done := *j
	done.Status.State = model.StateSucceeded
	c.putJobs([]*model.Job{&done}, 2)
	c.putJobs([]*model.Job{&done}, 3) // written again: no second run
	retried := &model.Job{ID: "j2", Spec: j.Spec}
	retried.Status = done.Status
	retried.Status.Retries = 1
	c.putJobs([]*model.Job{retried}, 4)
	r := c.runs.byName[runName{"t", "n"}]
	if r == nil || len(r.d) != 1 || r.d[0] != time.Hour {
		t.Fatalf("runs of t/n: %+v, want one of 1h", r)
	}
}
