package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
)

// A running job requeued by its tenant or the admin gets the eviction
// notice, waits in Preempted until its processes stopped, then is Queued
// (reason Requeued) and runs again, away from a drained node, with no
// retry or preemption counted; the admin's requeue of a tenant's job is
// audited. Only a job that runs can be requeued, and only by who sees it.
func TestRequeue(t *testing.T) {
	ctx := context.Background()
	srv, _, must := labWithNodes(t)
	specs, err := spec.ParseJobs("test", []byte(`{name: a, tenant: team, command: [x], resources: {gpus_per_instance: 8}, retry: {max_retries: 1}}`), nil)
	must(err)
	team, rival, admin := Principal{Tenant: "team"}, Principal{Tenant: "rival"}, Principal{Admin: true}
	a, err := srv.Submit(ctx, team, specs[0])
	must(err)
	if _, err := srv.Requeue(ctx, team, a.ID); !isCode(err, CodeConflict) {
		t.Errorf("requeue of a queued job: %v, want Conflict", err)
	}
	must(srv.Cycle(ctx))
	j := wholeJob(t, srv, a.ID)
	first := j.Status.Allocations[0].Node
	_, err = srv.ReportEvent(ctx, Principal{Node: first}, a.ID, 1, Event{Type: EventStarted, Node: first})
	must(err)

	if _, err := srv.Requeue(ctx, rival, a.ID); !isCode(err, CodeForbidden) {
		t.Errorf("another tenant's requeue: %v, want Forbidden", err)
	}
	_, err = srv.DrainNode(ctx, admin, first, "maintenance")
	must(err)
	j, err = srv.Requeue(ctx, admin, a.ID)
	must(err)
	if j.Status.State != model.StatePreempted || j.Status.Reason != ReasonRequeued || !strings.Contains(j.Status.Detail, "requeued by admin") ||
		!strings.Contains(j.Status.Detail, "stopping now") || len(j.Status.Allocations) != 0 {
		t.Fatalf("right after the requeue: %s %s %q allocations %v, want Preempted Requeued with the eviction notice and nothing held",
			j.Status.State, j.Status.Reason, j.Status.Detail, j.Status.Allocations)
	}
	if _, err := srv.Requeue(ctx, admin, a.ID); !isCode(err, CodeConflict) {
		t.Errorf("a second requeue while it stops: %v, want Conflict", err)
	}
	// Its process stops within the grace: queued, then bound elsewhere.
	_, err = srv.ReportEvent(ctx, Principal{Node: first}, a.ID, 1, Event{Type: EventExited, Node: first, ExitCode: -1, Outcome: OutcomeStopped})
	must(err)
	j = wholeJob(t, srv, a.ID)
	if j.Status.State != model.StateQueued || j.Status.Reason != ReasonRequeued {
		t.Fatalf("after the process stopped: %s %s, want Queued Requeued", j.Status.State, j.Status.Reason)
	}
	must(srv.Cycle(ctx))
	j = wholeJob(t, srv, a.ID)
	if len(j.Status.Attempts) != 2 || j.Status.Attempts[0].Reason != ReasonRequeued || j.Status.Allocations[0].Node == first {
		t.Fatalf("attempts %+v on %v, want the first Requeued and the second away from drained %s", j.Status.Attempts, j.Status.Allocations, first)
	}
	if j.Status.Retries != 0 || j.Status.Preemptions != 0 {
		t.Errorf("retries %d preemptions %d, want none counted", j.Status.Retries, j.Status.Preemptions)
	}
	recs, _, err := srv.Audit(ctx, admin, AuditQuery{})
	must(err)
	found := false
	for _, r := range recs {
		found = found || r.Action == ActionJobRequeue && r.Object == "job/"+a.ID && strings.Contains(r.Detail, "on "+first)
	}
	if !found {
		t.Errorf("no job.requeue record for %s in %+v", a.ID, recs)
	}

	// The tenant requeues its own job before it started (Preparing): no
	// process ran, so it is Queued at once.
	j, err = srv.Requeue(ctx, team, a.ID)
	must(err)
	if j.Status.State != model.StateQueued || !strings.Contains(j.Status.Detail, "requeued by team") {
		t.Errorf("requeue while Preparing: %s %q, want Queued at once", j.Status.State, j.Status.Detail)
	}
	must(srv.Cycle(ctx))
	_, err = srv.Cancel(ctx, team, a.ID)
	must(err)
	if _, err := srv.Requeue(ctx, team, a.ID); !isCode(err, CodeConflict) {
		t.Errorf("requeue of a canceled job: %v, want Conflict", err)
	}
	if _, err := srv.Requeue(ctx, team, "no-such-job"); !isCode(err, CodeNotFound) {
		t.Errorf("requeue of no job: %v, want NotFound", err)
	}
}

// Node describes a node: what its agent registered, its last heartbeat,
// and each GPU's use by job; an unknown name is NotFound with the nearest.
func TestNodeDetail(t *testing.T) {
	ctx := context.Background()
	srv, _, must := labWithNodes(t)
	for _, doc := range []string{`{name: a, tenant: team, command: [x], resources: {gpus_per_instance: 2}}`,
		`{name: b, tenant: team, command: [x], resources: {gpu_milli: 250}}`} {
		specs, err := spec.ParseJobs("test", []byte(doc), nil)
		must(err)
		_, err = srv.Submit(ctx, Principal{Tenant: "team"}, specs[0])
		must(err)
	}
	must(srv.Cycle(ctx))
	must(srv.Heartbeat(ctx, "h100-01"))
	d, err := srv.Node("h100-01")
	must(err)
	if len(d.GPUs) != 8 || d.GPUs[0].UUID != "GPU-0" || d.GPUs[0].Model != "H100" || d.LastHeartbeat.IsZero() || d.HealthSince.IsZero() {
		t.Fatalf("node %+v, want 8 registered GPUs and a heartbeat", d)
	}
	held := map[int]string{}
	for _, g := range d.GPUs {
		if g.UsedMilli > 0 {
			held[g.Index] = fmt.Sprintf("%d %v", g.UsedMilli, g.Jobs)
		}
	}
	if len(held) != 3 || len(d.Jobs) != 2 || d.FreeMilli != 8000-2250 {
		t.Errorf("GPUs held %v, jobs %v, free %d; want a's 2 whole GPUs and b's quarter of one, 5750 free", held, d.Jobs, d.FreeMilli)
	}
	if _, err := srv.Node("h100-1"); !isCode(err, CodeNotFound) || !strings.Contains(err.Error(), "did you mean h100-01") {
		t.Errorf("unknown node: %v", err)
	}
}
