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
	plan := s.planWith(w, j, now)
	for _, b := range plan.Binds {
		if b.Job != j.ID {
			continue
		}
		j.Status.Detail = "would start now on " + placementText(b)
		return Why{Job: j, EstimatedStart: &now, Estimate: estimateNow(now)}, nil
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
	return s.explainQueued(w, j, now), nil
}

// planWith runs the core once on the server's view with j added, as the
// cycle would (held jobs left out, the sharing strategy applied), without
// operator policies.
func (s *Server) planWith(w *world, j *model.Job, now time.Time) sched.Plan {
	jobs := s.cache.snapshot().jobs
	input := make([]*model.Job, 0, len(jobs)+1)
	for _, x := range jobs {
		if !(x.Status.State == model.StateQueued && (now.Before(x.HeldUntil()) || x.Status.Held)) {
			input = append(input, x)
		}
	}
	input = append(input, j)
	cfg := s.cfg.Sched
	cfg.Observer = nil
	return sched.New(cfg).Schedule(strategy.Apply(&sched.Snapshot{Fleet: w.fleet, Tenancy: w.tenancy, Jobs: coreView(input)}, now), now)
}

// estimateNow is the estimate of a job the core would place at once.
func estimateNow(now time.Time) forecast.Estimate {
	return forecast.Estimate{Start: now, How: fmt.Sprintf("the core placed it in one cycle run at %s on the server's view, "+
		"without operator policies; the live cycle may decide otherwise", now.UTC().Format(time.RFC3339))}
}
