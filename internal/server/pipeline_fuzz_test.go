package server

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
)

// FuzzResolveAfter feeds the server arbitrary after: lists (names of a
// small batch, an existing job's ID, another tenant's, unknown words) and
// holds resolveAfter and block to their contract: no panic; a batch with a
// refusal names the field; an accepted one links every step to jobs that
// exist, in no circle, and leaves each step Blocked with what it waits for.
func FuzzResolveAfter(f *testing.F) {
	f.Add("b;c;")
	f.Add("b;a;")
	f.Add("old;a,old;b")
	f.Add("theirs;;")
	f.Add("x[0];;a,a")
	f.Fuzz(func(t *testing.T, afters string) {
		c := newCache(slog.New(slog.DiscardHandler), nil)
		c.putJobs([]*model.Job{
			{ID: "old", Spec: model.JobSpec{Name: "old", Tenant: "copilot"}, Status: model.JobStatus{State: model.StateRunning}},
			{ID: "theirs", Spec: model.JobSpec{Name: "theirs", Tenant: "acme"}, Status: model.JobStatus{State: model.StateSucceeded}},
		}, 1)
		s := &Server{cache: c}
		parts := strings.Split(afters, ";")
		if len(parts) > 8 {
			parts = parts[:8]
		}
		specs := make([]model.JobSpec, len(parts))
		jobs := make([]*model.Job, len(parts))
		for i, p := range parts {
			specs[i] = model.JobSpec{Name: string(rune('a' + i)), Tenant: "copilot",
				Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1}}
			if p != "" {
				specs[i].After = strings.Split(p, ",")
			}
			jobs[i] = &model.Job{ID: "id-" + specs[i].Name, Spec: specs[i], Status: model.JobStatus{State: model.StateQueued}}
		}
		valid := true
		for i := range specs {
			valid = valid && specs[i].Validate() == nil
		}
		links, refused := s.resolveAfter(copilot, specs)
		for _, r := range refused {
			if !strings.HasPrefix(r.Err.Field, "after") || r.Err.Code != CodeInvalidSpec {
				t.Fatalf("refusal %+v does not name after as InvalidSpec", r)
			}
		}
		if len(refused) > 0 || !valid {
			return
		}
		s.block(jobs, links)
		for _, j := range jobs {
			if len(specs[j.Spec.Name[0]-'a'].After) == 0 {
				continue
			}
			if j.Status.State != model.StateBlocked || j.Status.Reason != model.ReasonWaitsForPredecessor || j.Status.Detail == "" {
				t.Fatalf("step %s: %s %s %q, want Blocked with what it waits for", j.ID, j.Status.State, j.Status.Reason, j.Status.Detail)
			}
			for _, id := range j.Spec.After {
				if _, ok := c.stateOf(id); !ok && !strings.HasPrefix(id, "id-") {
					t.Fatalf("step %s waits for %q, which is no job", j.ID, id)
				}
				if id == j.ID || id == "theirs" {
					t.Fatalf("step %s waits for %q", j.ID, id)
				}
			}
		}
		linked := make([]model.JobSpec, len(jobs))
		for i, j := range jobs {
			linked[i] = model.JobSpec{Name: j.ID, After: j.Spec.After}
		}
		if cyc := model.AfterCycle(linked); cyc != nil {
			t.Fatalf("accepted steps wait in a circle: %s", model.CycleText(linked, cyc))
		}
	})
}
