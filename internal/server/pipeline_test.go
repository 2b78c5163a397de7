package server

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

func TestPipelineStep(t *testing.T) {
	states := map[string]model.State{"a": model.StateSucceeded, "b": model.StateRunning, "c": model.StateFailed,
		"d": model.StateQueued, "e": model.StateTimedOut}
	state := func(id string) (model.State, bool) { st, ok := states[id]; return st, ok }
	for _, tc := range []struct {
		cond   model.AfterCondition
		after  []string
		next   model.State
		reason string
		detail string
	}{
		{"", []string{"a"}, model.StateQueued, "", ""},
		{"", []string{"a", "b", "d"}, model.StateBlocked, model.ReasonWaitsForPredecessor, "waits for b (Running), d (Queued)"},
		{"", []string{"b", "c"}, model.StateCanceled, model.ReasonPredecessorFailed, "predecessor c ended Failed; this step will not run"},
		{"", []string{"e"}, model.StateCanceled, model.ReasonPredecessorFailed, "predecessor e ended TimedOut; this step will not run"},
		{"", []string{"gone"}, model.StateCanceled, model.ReasonPredecessorFailed, "predecessor gone no longer exists"},
		// A clean-up step: every one ended, however, or is gone.
		{model.AfterAny, []string{"a", "c", "e", "gone"}, model.StateQueued, "", ""},
		{model.AfterAny, []string{"c", "b"}, model.StateBlocked, model.ReasonWaitsForPredecessor, "waits for b (Running) to end, however it ends"},
		// A failure handler: every one ended without succeeding.
		{model.AfterNotOK, []string{"c", "e"}, model.StateQueued, "", ""},
		{model.AfterNotOK, []string{"c", "d"}, model.StateBlocked, model.ReasonWaitsForPredecessor, "waits for d (Queued) to end without succeeding"},
		{model.AfterNotOK, []string{"b", "a"}, model.StateCanceled, model.ReasonPredecessorSucceeded,
			"predecessor a succeeded; this step runs only after failures (after_condition: notok) and will not run"},
		{model.AfterNotOK, []string{"gone"}, model.StateCanceled, model.ReasonPredecessorFailed, "predecessor gone no longer exists"},
		// Entries with conditions of their own, as Slurm's afterok:a,afterany:b.
		{"", []string{"a", "any:c", "notok:e", "any:gone"}, model.StateQueued, "", ""},
		{"", []string{"a", "any:b", "notok:d"}, model.StateBlocked, model.ReasonWaitsForPredecessor,
			"waits for b (Running) to end, however it ends, d (Queued) to end without succeeding"},
		{model.AfterAny, []string{"ok:b", "c"}, model.StateBlocked, model.ReasonWaitsForPredecessor,
			"waits for b (Running) to succeed"},
		{"", []string{"any:c", "notok:a"}, model.StateCanceled, model.ReasonPredecessorSucceeded,
			"predecessor a succeeded; this step runs only after failures (after_condition: notok) and will not run"},
		{model.AfterAny, []string{"ok:c"}, model.StateCanceled, model.ReasonPredecessorFailed, "predecessor c ended Failed; this step will not run"},
	} {
		j := &model.Job{ID: "x", Spec: model.JobSpec{After: tc.after, AfterCondition: tc.cond}}
		next, reason, detail := pipelineStep(j, state)
		if next != tc.next || reason != tc.reason || detail != tc.detail {
			t.Errorf("%s after %q: %s %s %q, want %s %s %q", tc.cond, tc.after, next, reason, detail, tc.next, tc.reason, tc.detail)
		}
	}
}

const pipelineDoc = `
name: prepare
tenant: copilot
duration: 10m
resources: {gpu_milli: 250, gpu_models: [T4]}
---
name: train
tenant: copilot
duration: 10m
after: [prepare]
resources: {gpu_milli: 250, gpu_models: [T4]}
---
name: evaluate
tenant: copilot
after: [train]
resources: {gpu_milli: 250, gpu_models: [T4]}
`

// TestPipelineRuns submits three steps in a chain: each waits Blocked,
// holding nothing, until the one before it succeeded, across a restart.
func TestPipelineRuns(t *testing.T) {
	h := newHarness(t)
	jobs, err := h.srv.SubmitBatch(context.Background(), copilot, batchSpecs(t, pipelineDoc))
	if err != nil {
		t.Fatal(err)
	}
	prep, train, eval := jobs[0].ID, jobs[1].ID, jobs[2].ID
	if got := h.job(train).Spec.After; len(got) != 1 || got[0] != prep {
		t.Fatalf("train's after = %q, want [%s]", got, prep)
	}
	h.clock.Advance(time.Second)
	h.cycle()
	h.cycle()
	if st := h.job(prep).Status.State; st != model.StateRunning {
		t.Fatalf("prepare is %s, want Running", st)
	}
	j := h.job(train)
	if j.Status.State != model.StateBlocked || len(j.Status.Allocations) != 0 ||
		j.Status.Detail != "waits for "+prep+" (Running)" {
		t.Fatalf("train: %s %s %q with %d allocations, want Blocked waiting for %s (Running)",
			j.Status.State, j.Status.Reason, j.Status.Detail, len(j.Status.Allocations), prep)
	}
	for _, x := range h.srv.cache.snapshot().jobs {
		if x.ID == train || x.ID == eval {
			t.Fatalf("blocked job %s is offered to the core", x.ID)
		}
	}
	h.restart()
	h.clock.Advance(10 * time.Minute)
	h.cycle() // prepare ends; train is queued in the same cycle
	if st := h.job(train).Status.State; st != model.StateQueued {
		t.Fatalf("train is %s after prepare succeeded, want Queued", st)
	}
	h.cycle()
	if st := h.job(train).Status.State; st != model.StateRunning {
		t.Fatalf("train is %s, want Running", st)
	}
	if st := h.job(eval).Status.State; st != model.StateBlocked {
		t.Fatalf("evaluate is %s, want Blocked", st)
	}
}

// TestPipelineCanceled cancels the first step: the steps after it are
// canceled in the next cycle, each naming the step that did not succeed.
func TestPipelineCanceled(t *testing.T) {
	h := newHarness(t)
	jobs, err := h.srv.SubmitBatch(context.Background(), copilot, batchSpecs(t, pipelineDoc))
	if err != nil {
		t.Fatal(err)
	}
	h.cycle()
	h.cancel(jobs[0].ID)
	h.cycle()
	for i, want := range []string{jobs[0].ID + " ended Canceled", jobs[1].ID + " ended Canceled"} {
		j := h.job(jobs[i+1].ID)
		if j.Status.State != model.StateCanceled || j.Status.Reason != model.ReasonPredecessorFailed ||
			!strings.Contains(j.Status.Detail, want) {
			t.Errorf("%s: %s %s %q, want Canceled PredecessorFailed naming %q", j.Spec.Name, j.Status.State,
				j.Status.Reason, j.Status.Detail, want)
		}
	}
}

// TestPipelineConditions: when the step a pipeline waits for fails, its
// clean-up step (after_condition: any) and its failure handler (notok) run
// and the step that needed it to succeed is canceled; when it succeeds, the
// clean-up runs and the handler is canceled, reason PredecessorSucceeded.
func TestPipelineConditions(t *testing.T) {
	const doc = `
name: train
tenant: copilot
resources: {gpu_milli: 250, gpu_models: [T4]}
---
name: evaluate
tenant: copilot
after: [train]
resources: {gpu_milli: 250, gpu_models: [T4]}
---
name: cleanup
tenant: copilot
after: train
after_condition: any
resources: {gpu_milli: 250, gpu_models: [T4]}
---
name: page
tenant: copilot
after: train
after_condition: notok
resources: {gpu_milli: 250, gpu_models: [T4]}
`
	for _, fails := range []bool{true, false} {
		h := newHarness(t)
		jobs, err := h.srv.SubmitBatch(context.Background(), copilot, batchSpecs(t, doc))
		if err != nil {
			t.Fatal(err)
		}
		h.cycle()
		if j := h.job(jobs[3].ID); j.Status.State != model.StateBlocked || !strings.HasSuffix(j.Status.Detail, "to end without succeeding") {
			t.Fatalf("page before train ended: %s %q", j.Status.State, j.Status.Detail)
		}
		h.restart() // the condition is stored
		end := model.StateSucceeded
		if fails {
			end = model.StateFailed
		}
		if _, _, _, err := h.srv.rewriteJob(context.Background(), jobs[0].ID, "test", func(old *model.Job) (*model.Job, error) {
			return endJob(old, end, "test", "ended by the test", 0, h.clock.Now()), nil
		}); err != nil {
			t.Fatal(err)
		}
		h.cycle()
		want := map[string]string{"evaluate": "Queued", "cleanup": "Queued", "page": "Canceled PredecessorSucceeded"}
		if fails {
			want = map[string]string{"evaluate": "Canceled PredecessorFailed", "cleanup": "Queued", "page": "Queued"}
		}
		for _, x := range jobs[1:] {
			j := h.job(x.ID)
			got := string(j.Status.State)
			if j.Status.State == model.StateCanceled {
				got += " " + j.Status.Reason
			}
			if j.Status.State.Holds() {
				got = "Queued" // placed by the same cycle
			}
			if got != want[j.Spec.Name] {
				t.Errorf("train %s: %s is %s (%q), want %s", end, j.Spec.Name, got, j.Status.Detail, want[j.Spec.Name])
			}
		}
	}
}

// Entries of after with conditions of their own: a report that runs once
// training ended however it ended, but only after evaluation succeeded.
// Each entry is stored as its condition and the predecessor's ID.
func TestPipelineEntryConditions(t *testing.T) {
	const doc = `
name: train
tenant: copilot
resources: {gpu_milli: 250, gpu_models: [T4]}
---
name: evaluate
tenant: copilot
resources: {gpu_milli: 250, gpu_models: [T4]}
---
name: report
tenant: copilot
after: [any:train, evaluate]
resources: {gpu_milli: 250, gpu_models: [T4]}
`
	for _, trainEnds := range []model.State{model.StateFailed, model.StateSucceeded} {
		h := newHarness(t)
		jobs, err := h.srv.SubmitBatch(context.Background(), copilot, batchSpecs(t, doc))
		if err != nil {
			t.Fatal(err)
		}
		train, eval, report := jobs[0].ID, jobs[1].ID, jobs[2].ID
		if got := h.job(report).Spec.After; !slices.Equal(got, []string{"any:" + train, eval}) {
			t.Fatalf("report's after = %q, want [any:%s %s]", got, train, eval)
		}
		end := func(id string, st model.State) {
			t.Helper()
			if _, _, _, err := h.srv.rewriteJob(context.Background(), id, "test", func(old *model.Job) (*model.Job, error) {
				return endJob(old, st, "test", "ended by the test", 0, h.clock.Now()), nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		h.cycle()
		end(train, trainEnds)
		h.restart() // the conditions are stored
		h.cycle()
		if j := h.job(report); j.Status.State != model.StateBlocked || j.Status.Detail != "waits for "+eval+" (Running) to succeed" {
			t.Fatalf("train %s, evaluate running: report %s %q", trainEnds, j.Status.State, j.Status.Detail)
		}
		end(eval, model.StateSucceeded)
		h.cycle()
		if j := h.job(report); j.Status.State == model.StateBlocked || j.Status.State == model.StateCanceled {
			t.Fatalf("train %s, evaluate succeeded: report %s %s %q", trainEnds, j.Status.State, j.Status.Reason, j.Status.Detail)
		}
	}
}

// TestPipelineRefused checks that a batch whose steps wait in a circle, or
// for a job that does not exist or that the submitter may not see, is
// refused naming the field, and stores nothing.
func TestPipelineRefused(t *testing.T) {
	h := newHarness(t)
	other := h.submit(Principal{Tenant: "acme"}, `{name: theirs, tenant: acme, resources: {gpus_per_instance: 1}}`)
	step := func(name string, after ...string) model.JobSpec {
		return model.JobSpec{Name: name, Tenant: "copilot", After: after,
			Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1, GPUMilli: 250, GPUModels: []string{"T4"}}}
	}
	for _, tc := range []struct {
		name  string
		specs []model.JobSpec
		index int
		field string
		msg   string
	}{
		{"cycle", []model.JobSpec{step("a", "b"), step("b", "a")}, 0, "after", `job "a" waits for itself through a cycle: a → b → a`},
		{"unknown", []model.JobSpec{step("a"), step("b", "a", "nope")}, 1, "after[1]", `unknown job "nope"`},
		{"other tenant", []model.JobSpec{step("a", other.ID)}, 0, "after[0]", "unknown job"},
		{"self", []model.JobSpec{step("a", "a")}, 0, "after[0]", "cannot wait for itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.srv.SubmitBatch(context.Background(), copilot, tc.specs)
			var be *BatchError
			if !errors.As(err, &be) || len(be.Refusals) == 0 {
				t.Fatalf("err %v, want a BatchError", err)
			}
			r := be.Refusals[0]
			if r.Index != tc.index || r.Err.Code != CodeInvalidSpec || r.Err.Field != tc.field || !strings.Contains(r.Err.Msg, tc.msg) {
				t.Errorf("refusal %d %s %s %q, want %d InvalidSpec %s %q", r.Index, r.Err.Code, r.Err.Field, r.Err.Msg,
					tc.index, tc.field, tc.msg)
			}
			if n := len(mustJobs(t, h.srv, admin, JobFilter{Tenant: "copilot"})); n != 0 {
				t.Errorf("%d jobs stored by a refused batch", n)
			}
		})
	}
	// One job alone, waiting for an existing job by ID, is accepted.
	j, err := h.srv.Submit(context.Background(), admin, step("later", other.ID))
	if err != nil || j.Status.State != model.StateBlocked {
		t.Fatalf("submit after an existing ID: %v, %+v", err, j)
	}
}

// TestPipelineAfterArray checks that a step after an array's name waits
// for every member of it.
func TestPipelineAfterArray(t *testing.T) {
	h := newHarness(t)
	jobs, err := h.srv.SubmitBatch(context.Background(), copilot, batchSpecs(t, `
name: sweep
tenant: copilot
array: 0-1
duration: 1m
resources: {gpu_milli: 250, gpu_models: [T4]}
---
name: merge
tenant: copilot
after: [sweep]
resources: {gpu_milli: 250, gpu_models: [T4]}
`))
	if err != nil {
		t.Fatal(err)
	}
	merge := jobs[2]
	if got, want := merge.Spec.After, []string{jobs[0].ID, jobs[1].ID}; !slices.Equal(got, want) {
		t.Fatalf("merge's after = %q, want %q", got, want)
	}
	h.cycle()
	if st := h.job(merge.ID).Status.State; st != model.StateBlocked {
		t.Fatalf("merge is %s, want Blocked", st)
	}
}
