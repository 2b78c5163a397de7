package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/model"
)

// ReasonRequeued is the reason of a job requeued by a person.
const ReasonRequeued = "Requeued"

// Requeue stops the attempt of a running job and queues the job again, as
// Slurm's scontrol requeue does: its processes get the eviction notice a
// preemption gives (SIGTERM, then the grace to save a checkpoint), and the
// next attempt resumes from the last checkpoint wherever the scheduler
// places it. Neither a retry nor a preemption is counted. An operator
// empties a drained node with it; a tenant restarts a job that hangs.
func (s *Server) Requeue(ctx context.Context, p Principal, id string) (*model.Job, error) {
	old, j, rev, err := s.rewriteJob(ctx, id, "requeue", func(old *model.Job) (*model.Job, error) {
		if !p.Sees(old.Spec.Tenant) {
			return nil, refuse(CodeForbidden, "", "job %q belongs to another tenant", id)
		}
		switch st := old.Status.State; st {
		case model.StatePreparing, model.StateRunning:
			return requeueJob(old, p.Name(), s.clock.Now(), s.agentMode, s.stopGrace(old)), nil
		case model.StatePreempted:
			return nil, refuse(CodeConflict, "", "job %s is already stopping to be queued again", id)
		default:
			return nil, refuse(CodeConflict, "", "job %s is %s: only a job that runs (Preparing or Running) can be requeued", id, st)
		}
	})
	if err != nil {
		return nil, err
	}
	s.log.Info("job requeued", "job", id, "tenant", j.Spec.Tenant, "by", p.Name(), "was", old.Status.State, "rev", rev)
	if p.Tenant != j.Spec.Tenant {
		s.audit(ctx, p, ActionJobRequeue, "job/"+id, fmt.Sprintf("job %q of tenant %s, was %s on %s",
			j.Spec.Name, j.Spec.Tenant, old.Status.State, nodesOf(old)))
	}
	s.Kick()
	return j, nil
}

// requeueJob is old requeued by who at now: the attempt ends with reason
// Requeued; with agents, processes that may still run are told to stop and
// the job waits in Preempted until they did, as after a preemption.
func requeueJob(old *model.Job, who string, now time.Time, agents bool, grace time.Duration) *model.Job {
	old = foldResize(old)
	detail := fmt.Sprintf("requeued by %s at %s; the next attempt resumes from the last checkpoint", who, now.UTC().Format(time.RFC3339))
	j := requeue(old, ReasonRequeued, detail, now, ReasonRequeued)
	if agents && anyLive(old.Status.Instances) {
		j.Status.State = model.StatePreempted
		j.Status.Instances = append([]model.Instance(nil), old.Status.Instances...)
		stopAttempt(j, now)
		j.Status.Detail += fmt.Sprintf("; stopping now, stopped by %s (grace %s)", now.Add(grace).UTC().Format(time.RFC3339), grace)
	}
	return j
}

// nodesOf names the nodes of j's allocations, "-" when none.
func nodesOf(j *model.Job) string {
	var nodes []string
	for _, a := range j.Status.Allocations {
		nodes = append(nodes, a.Node)
	}
	if len(nodes) == 0 {
		return "-"
	}
	return strings.Join(nodes, ",")
}
