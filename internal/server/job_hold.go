package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/allot-dev/allot/internal/forecast"
	"github.com/allot-dev/allot/internal/model"
)

// ReasonHeld is the reason of a queued job that a person holds.
const ReasonHeld = "Held"

// ReasonBeginTime is the reason of a queued job that waits for the begin
// time its spec asks for.
const ReasonBeginTime = "BeginTime"

// waitForBegin gives queued job j the reason BeginTime when its spec's
// begin time holds it back, as sbatch --begin does: the cycle leaves it out
// until Job.HeldUntil, and its estimated start is no earlier. A back-off
// that ends later keeps its own reason.
func waitForBegin(j *model.Job, now time.Time) {
	b := j.Spec.Begin
	if j.Status.State != model.StateQueued || !b.After(now) || !b.After(j.Status.NotBefore) {
		return
	}
	if j.Status.Held {
		return // its reason stays Held; release gives it BeginTime
	}
	j.Status.Reason = ReasonBeginTime
	j.Status.Detail = "starts no earlier than " + b.UTC().Format(time.RFC3339) + ", the begin time it asks for"
}

// Hold keeps queued job id out of scheduling until Release: the cycle
// leaves it out of its input, and its reason is Held. Only a queued job
// can be held (Conflict otherwise); holding a held job changes nothing.
func (s *Server) Hold(ctx context.Context, p Principal, id string) (*model.Job, error) {
	return s.changeQueued(ctx, p, id, "hold", func(j *model.Job) bool {
		if j.Status.Held {
			return false
		}
		j.Status.Held = true
		j.Status.Reason = ReasonHeld
		j.Status.Detail = "held by " + p.Name() + "; 'allot job release " + id + "' lets the scheduler consider it again"
		return true
	})
}

// Release lets held job id be scheduled again; its reason is the next
// cycle's. Releasing a job that is not held changes nothing.
func (s *Server) Release(ctx context.Context, p Principal, id string) (*model.Job, error) {
	return s.changeQueued(ctx, p, id, "release", func(j *model.Job) bool {
		if !j.Status.Held {
			return false
		}
		j.Status.Held = false
		j.Status.Reason, j.Status.Detail = "", ""
		waitForBegin(j, s.clock.Now())
		return true
	})
}

// SetPriority changes the priority of queued job id; the next cycle
// orders the queue by it. A job that has started keeps its priority
// (Conflict): its placement and its victims were chosen by it.
func (s *Server) SetPriority(ctx context.Context, p Principal, id string, prio model.Priority) (*model.Job, error) {
	return s.UpdateQueued(ctx, p, id, QueuedChange{Priority: &prio})
}

// QueuedChange is what may change of a queued job; nil fields stay.
type QueuedChange struct {
	Priority *model.Priority
	// Begin is the new begin time; the zero time removes it.
	Begin *time.Time
	// Nodes and ExcludeNodes replace placement.nodes and
	// placement.exclude_nodes; empty removes them.
	Nodes, ExcludeNodes *[]string
}

// UpdateQueued applies c to queued job id, all its changes or none; a
// priority class its tenant may not use is refused as at submit. A new
// begin time later than now holds the job back until then (reason
// BeginTime, as at submit); one that is past or removed lets the next cycle
// consider it, unless a retry's back-off still holds it.
func (s *Server) UpdateQueued(ctx context.Context, p Principal, id string, c QueuedChange) (*model.Job, error) {
	var invalid, refused error
	now := s.clock.Now()
	for _, l := range []struct {
		field string
		nodes *[]string
	}{{"placement.nodes", c.Nodes}, {"placement.exclude_nodes", c.ExcludeNodes}} {
		if l.nodes == nil {
			continue
		}
		if err := s.world().knownNodes(l.field, *l.nodes); err != nil {
			return nil, err
		}
	}
	j, err := s.changeQueued(ctx, p, id, "update", func(j *model.Job) bool {
		changed := false
		if c.Priority != nil && j.Spec.Priority != *c.Priority {
			j.Spec.Priority, changed = *c.Priority, true
		}
		if c.Begin != nil && !j.Spec.Begin.Equal(*c.Begin) {
			if j.Status.Reason == ReasonBeginTime { // the next cycle, or the new begin time, says why it waits
				j.Status.Reason, j.Status.Detail = "", ""
			}
			j.Spec.Begin, changed = *c.Begin, true
			waitForBegin(j, now)
		}
		if c.Nodes != nil && !slices.Equal(j.Spec.Placement.Nodes, *c.Nodes) {
			j.Spec.Placement.Nodes, changed = slices.Clone(*c.Nodes), true
		}
		if c.ExcludeNodes != nil && !slices.Equal(j.Spec.Placement.ExcludeNodes, *c.ExcludeNodes) {
			j.Spec.Placement.ExcludeNodes, changed = slices.Clone(*c.ExcludeNodes), true
		}
		if !changed {
			return false
		}
		if invalid = j.Spec.Validate(); invalid != nil {
			return false
		}
		if c.Priority != nil {
			if refused = s.world().checkClass(&j.Spec); refused != nil {
				return false
			}
		}
		if r := j.Status.Region; r != "" && !slices.Contains(forecast.Candidates(s.world().fleet, &j.Spec), r) {
			// The region chosen for the job has no node its new lists leave
			// it: it may go wherever it is allowed (coreView pins no more).
			j.Status.Region, j.Status.RegionAt = "", time.Time{}
		}
		return true
	})
	if refused != nil {
		return nil, refused
	}
	if invalid != nil {
		return nil, fromField(invalid)
	}
	return j, err
}

// changeQueued applies change to a copy of queued job id and stores it if
// change says it changed, retrying when a cycle wrote the job meanwhile.
// what names the action in a refusal.
func (s *Server) changeQueued(ctx context.Context, p Principal, id, what string, change func(*model.Job) bool) (*model.Job, error) {
	old, j, rev, err := s.rewriteJob(ctx, id, what, func(old *model.Job) (*model.Job, error) {
		if !p.Sees(old.Spec.Tenant) {
			return nil, refuse(CodeForbidden, "", "job %q belongs to another tenant", id)
		}
		if old.Status.State != model.StateQueued {
			return nil, refuse(CodeConflict, "", "job %s is %s: only a queued job can %s", id, old.Status.State, thisAction(what))
		}
		j := cloneJob(old)
		if !change(j) {
			return nil, nil
		}
		return j, nil
	})
	if err != nil || j == nil {
		return old, err
	}
	s.log.Info("job changed", "job", id, "action", what, "by", p.Name(), "held", j.Status.Held,
		"priority", j.Spec.Priority.String(), "begin", j.Spec.Begin, "rev", rev)
	s.auditOther(ctx, p, j.Spec.Tenant, jobActions[what], "job/"+id, fmt.Sprintf("job %q, held %t, priority %s, begin %s",
		j.Spec.Name, j.Status.Held, j.Spec.Priority, auditTime(j.Spec.Begin)))
	s.Kick()
	return j, nil
}

// jobActions are the audit actions of changeQueued's changes.
var jobActions = map[string]string{"hold": ActionJobHold, "release": ActionJobRelease, "update": ActionJobUpdate}

// auditTime words a time in an audit detail: "none" when zero.
func auditTime(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339)
}

// thisAction words the refusal: "only a queued job can be held".
func thisAction(what string) string {
	switch what {
	case "hold":
		return "be held"
	case "release":
		return "be released"
	}
	return "be updated (priority, begin)"
}
