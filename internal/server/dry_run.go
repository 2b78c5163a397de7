package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/forecast"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/strategy"
)

// TrySubmit checks spec as Submit does and says what would become of the
// job if it were submitted now, storing nothing, as sbatch --test-only and
// kubectl's --dry-run=server do: a refusal is the one Submit would give;
// otherwise the Why of the would-be job. A job the core would place at
// once has no reason and a detail naming the nodes (and the jobs it would
// preempt); one that would wait has the core's reason and detail, the
// estimated start and, when it may run in several regions, their
// comparison. A pipeline step is Blocked on its predecessors. The core
// runs once on the server's view without operator policies (as job why's
// estimate does), so the live cycle may decide otherwise.
func (s *Server) TrySubmit(ctx context.Context, p Principal, spec model.JobSpec) (Why, error) {
	now := s.clock.Now()
	if err := s.checkJobLimit(p, 1); err != nil {
		return Why{}, err
	}
	w := s.world()
	j, _, err := s.newJob(w, p, spec, now, nil)
	if err != nil {
		return Why{}, err
	}
	links, refused := s.pipelineOf(p, []model.JobSpec{spec})
	if len(refused) > 0 {
		return Why{}, refused[0].Err
	}
	if links != nil && s.block([]*model.Job{j}, links) && j.Status.State == model.StateBlocked {
		return Why{Job: j}, nil
	}
	if j.Status.State != model.StateQueued || now.Before(j.HeldUntil()) {
		return s.explainQueued(w, j, now), nil // it waits for its begin time whatever the fleet does
	}
	return s.answer(w, j, s.planWith(w, []*model.Job{j}, now), now), nil
}

// TrySubmitBatch is TrySubmit for the jobs of a batch, which see each
// other as they would once submitted together: each is checked as
// SubmitBatch checks it (a *BatchError listing every job refused when any
// is), steps wait for their predecessors in the batch, and the core runs
// once with all of them added, so that two jobs that each fit alone but
// not together are told so. The answers come in the order of specs. An
// estimated start of a job that would wait weighs it alone.
func (s *Server) TrySubmitBatch(ctx context.Context, p Principal, specs []model.JobSpec) ([]Why, error) {
	if err := batchSize(specs); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	w := s.world()
	jobs, _, links, err := s.batchJobs(p, specs, now)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		for seen[j.ID] { // IDs name the jobs in the core's answer
			j.ID = newJobID(j.Spec.Name, now)
		}
		seen[j.ID] = true
	}
	if links != nil {
		s.block(jobs, links)
	}
	var planned []*model.Job
	for _, j := range jobs {
		if j.Status.State == model.StateQueued && !now.Before(j.HeldUntil()) {
			planned = append(planned, j)
		}
	}
	var plan sched.Plan
	if len(planned) > 0 {
		plan = s.planWith(w, planned, now)
	}
	out := make([]Why, len(jobs))
	for i, j := range jobs {
		switch {
		case j.Status.State == model.StateBlocked:
			out[i] = Why{Job: j}
		case j.Status.State != model.StateQueued || now.Before(j.HeldUntil()):
			out[i] = s.explainQueued(w, j, now)
		default:
			out[i] = s.answer(w, j, plan, now)
		}
	}
	return out, nil
}

// answer is the Why of would-be job j in plan: where it would start now,
// or the core's reason, with the jobs it would preempt.
func (s *Server) answer(w *world, j *model.Job, plan sched.Plan, now time.Time) Why {
	for _, b := range plan.Binds {
		if b.Job != j.ID {
			continue
		}
		j.Status.Detail = "would start now on " + placementText(b.Nodes)
		return Why{Job: j, EstimatedStart: &now, Estimate: estimateNow(now)}
	}
	for _, pd := range plan.Pending {
		if pd.Job == j.ID {
			j.Status.Reason, j.Status.Detail = pd.Reason.String(), pd.Detail
		}
	}
	var victims []string
	for _, pr := range plan.Preemptions {
		if pr.For == j.ID {
			victims = append(victims, pr.Job)
		}
	}
	if len(victims) > 0 {
		j.Status.Detail = strings.TrimPrefix(j.Status.Detail+"; ", "; ") + "would preempt " + strings.Join(victims, ", ")
	}
	return s.explainQueued(w, j, now)
}

// planWith runs the core once on the server's view with extra added, as
// the cycle would (held jobs left out, the sharing strategy applied),
// without operator policies.
func (s *Server) planWith(w *world, extra []*model.Job, now time.Time) sched.Plan {
	jobs := s.cache.snapshot().jobs
	input := make([]*model.Job, 0, len(jobs)+len(extra))
	for _, x := range jobs {
		if !(x.Status.State == model.StateQueued && (now.Before(x.HeldUntil()) || x.Status.Held)) {
			input = append(input, x)
		}
	}
	input = append(input, extra...)
	cfg := s.cfg.Sched
	cfg.Observer = nil
	return sched.New(cfg).Schedule(strategy.Apply(&sched.Snapshot{Fleet: w.fleet, Tenancy: w.tenancy, Jobs: coreView(input), Images: s.imagesHeld()}, now), now)
}

// estimateNow is the estimate of a job the core would place at once.
func estimateNow(now time.Time) forecast.Estimate {
	return forecast.Estimate{Start: now, How: fmt.Sprintf("the core placed it in one cycle run at %s on the server's view, "+
		"without operator policies; the live cycle may decide otherwise", now.UTC().Format(time.RFC3339))}
}
