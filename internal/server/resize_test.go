package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/spec"
)

// elasticJob submits an elastic job of the lab's tenant team from doc
// and runs a cycle, which binds it; with agents, its ranks start.
func elasticJob(t *testing.T, srv *Server, doc string, agents bool) string {
	t.Helper()
	ctx := t.Context()
	specs, err := spec.ParseJobs("test", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	j, err := srv.Submit(ctx, Principal{Tenant: "team"}, specs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if agents {
		startRanks(t, srv, j.ID)
	}
	return j.ID
}

// startRanks reports every rank of job id's current attempt started.
func startRanks(t *testing.T, srv *Server, id string) {
	t.Helper()
	j := wholeJob(t, srv, id)
	for r, a := range j.Status.Allocations {
		if _, err := srv.ReportEvent(t.Context(), admin, id, len(j.Status.Attempts), Event{Type: EventStarted, Rank: r, Node: a.Node}); err != nil {
			t.Fatal(err)
		}
	}
}

// ranksOn lists, by node, the ranks of job id that the nodes' agents are
// told to run and to stop.
func ranksOn(t *testing.T, srv *Server, id string, nodes ...string) (run []Assignment, stop []StopOrder) {
	t.Helper()
	for _, n := range nodes {
		as, err := srv.NodeAssignments(t.Context(), n, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range as.Run {
			if x.Job == id {
				run = append(run, x)
			}
		}
		for _, x := range as.Stop {
			if x.Job == id {
				stop = append(stop, x)
			}
		}
	}
	return run, stop
}

// TestResizeWithAgents follows an elastic job through the core's growth
// and shrink on agents: each resize ends the attempt (Resized) and tells
// the old ranks to stop with their grace; no rank of the new attempt
// starts before every old one exited, then all start together with the
// new world size, resuming from the job-level checkpoint saved meanwhile;
// the job stays Preparing or Running, never Queued; a node the shrink gave
// up holds back the gang it made room for until its rank is gone; each
// attempt is billed for the instances it held while they ran.
func TestResizeWithAgents(t *testing.T) {
	ctx := context.Background()
	srv, clock, must := labWithNodes(t)
	all := []string{"h100-01", "h100-02", "h100-03"}
	id := elasticJob(t, srv, `{name: e, tenant: team, command: [train], priority: spot, resources: {gpus_per_instance: 8},
		elastic: {min_instances: 1, max_instances: 2}, checkpoint: {grace: 1m}}`, true)
	started := clock.Now()
	first := wholeJob(t, srv, id).Status.Allocations[0].Node

	// Growth 1 → 2 into a free node, once the resize interval passed.
	clock.Advance(model.DefaultResizeInterval)
	must(srv.Cycle(ctx))
	resizedAt := clock.Now()
	j := wholeJob(t, srv, id)
	old := j.Status.Attempts[0]
	if j.Status.State != model.StatePreparing || j.Status.Resizes != 1 || len(j.Status.Attempts) != 2 || len(j.Status.Allocations) != 2 ||
		j.Status.Allocations[0].Node != first || old.Reason != ReasonResized || !strings.HasPrefix(old.Detail, "grew 1→2") ||
		!old.Ended.IsZero() || !old.StopOrdered.Equal(resizedAt) {
		t.Fatalf("after the growth: %s, %d resizes, %d attempts, allocations %+v, attempt 1 %+v", j.Status.State, j.Status.Resizes,
			len(j.Status.Attempts), j.Status.Allocations, old)
	}
	second := j.Status.Allocations[1].Node
	run, stop := ranksOn(t, srv, id, all...)
	if len(run) != 0 || len(stop) != 1 || stop[0].Attempt != 1 || stop[0].Rank != 0 || stop[0].Reason != ReasonResized || stop[0].Grace != time.Minute {
		t.Fatalf("while the old rank stops: run %+v, stop %+v; want no rank run and attempt 1's rank 0 told to stop with its grace", run, stop)
	}
	// The old rank saves the job's checkpoint in its grace (on a shared
	// root: every world size resumes from it); a part of its own world is
	// not recorded.
	rank := 0
	_, err := srv.ReportCheckpoint(ctx, admin, id, CheckpointReport{Path: "/ckpt/e/rank-0/step-9", Node: first, Rank: &rank})
	must(err)
	_, err = srv.ReportCheckpoint(ctx, admin, id, CheckpointReport{Path: "/ckpt/e/step-10", Shared: true})
	must(err)
	clock.Advance(20 * time.Second)
	_, err = srv.ReportEvent(ctx, admin, id, 1, Event{Type: EventExited, Rank: 0, Node: first, ExitCode: 143, Outcome: OutcomeExited})
	must(err)
	gone := clock.Now()
	j = wholeJob(t, srv, id)
	if j.Status.State != model.StatePreparing || !j.Status.Attempts[0].Ended.Equal(gone) || len(j.Status.Resizing) != 0 ||
		len(j.Status.PartsPending) != 0 {
		t.Fatalf("after the old rank exited: %s, attempt 1 ended %v (want %v), resizing %v, parts pending %v", j.Status.State,
			j.Status.Attempts[0].Ended, gone, j.Status.Resizing, j.Status.PartsPending)
	}
	run, _ = ranksOn(t, srv, id, all...)
	if len(run) != 2 {
		t.Fatalf("after the old rank exited: %d ranks to run, want 2", len(run))
	}
	for _, x := range run {
		if x.Attempt != 2 || x.WorldSize != 2 || x.ResumeFrom != "/ckpt/e/step-10" || x.MasterAddr != first || x.NoResume != "" {
			t.Errorf("rank %d: %+v; want attempt 2 of world 2 resuming from /ckpt/e/step-10, master %s", x.Rank, x, first)
		}
	}
	startRanks(t, srv, id)
	running := clock.Now()
	if j = wholeJob(t, srv, id); j.Status.State != model.StateRunning || !j.Status.Attempts[1].Started.Equal(running) {
		t.Fatalf("every new rank started: %s, attempt 2 started %v", j.Status.State, j.Status.Attempts[1].Started)
	}

	// A standard gang of two nodes arrives: the spot job gives its added
	// instance back (2 → 1) rather than being evicted, and the gang waits
	// for the rank on the node it takes to be gone.
	clock.Advance(model.DefaultResizeInterval)
	specs, err := spec.ParseJobs("test", []byte(`{name: g, tenant: team, command: [x], resources: {instance_count: 2, gpus_per_instance: 8}}`), nil)
	must(err)
	g, err := srv.Submit(ctx, Principal{Tenant: "team"}, specs[0])
	must(err)
	must(srv.Cycle(ctx))
	j = wholeJob(t, srv, id)
	if j.Status.Resizes != 2 || j.Status.Attempts[1].Reason != ReasonResized ||
		!strings.HasPrefix(j.Status.Attempts[1].Detail, "shrank 2→1 for "+g.ID+" (standard)") || j.Status.Allocations[0].Node != first {
		t.Fatalf("after the gang came: %s, %d resizes, attempt 2 %+v", j.Status.State, j.Status.Resizes, j.Status.Attempts[1])
	}
	if by := stoppingNodes(srv.cache.holding())[second]; by != id {
		t.Errorf("node %s, given up by the shrink, is stopping for %q, want %s", second, by, id)
	}
	if gj := wholeJob(t, srv, g.ID); gj.Status.State != model.StatePreparing {
		t.Fatalf("the gang is %s, want Preparing", gj.Status.State)
	}
	if run, _ := ranksOn(t, srv, g.ID, all...); len(run) != 0 {
		t.Fatalf("the gang's ranks handed out while the shrunk rank still runs on %s: %+v", second, run)
	}
	_, stop = ranksOn(t, srv, id, all...)
	if len(stop) != 2 {
		t.Fatalf("the shrink stops %d ranks, want both of attempt 2", len(stop))
	}
	clock.Advance(5 * time.Second)
	for r, n := range []string{first, second} {
		_, err = srv.ReportEvent(ctx, admin, id, 2, Event{Type: EventExited, Rank: r, Node: n, ExitCode: 143, Outcome: OutcomeExited})
		must(err)
	}
	shrunk := clock.Now()
	run, _ = ranksOn(t, srv, id, all...)
	if len(run) != 1 || run[0].WorldSize != 1 || run[0].Attempt != 3 {
		t.Fatalf("after the shrink's old ranks exited: %+v, want rank 0 of attempt 3 alone", run)
	}
	if run, _ := ranksOn(t, srv, g.ID, all...); len(run) != 2 {
		t.Fatalf("the gang's ranks once the shrunk rank is gone: %d, want 2", len(run))
	}
	startRanks(t, srv, id)
	clock.Advance(time.Hour)

	// The bill: 8 GPUs until the growth's old rank was gone, 16 while
	// attempt 2 ran, 8 since.
	j = wholeJob(t, srv, id)
	secs, n := GPUSeconds(j, started, clock.Now())
	want := 8*gone.Sub(started).Seconds() + 16*shrunk.Sub(running).Seconds() + 8*clock.Now().Sub(shrunk).Seconds()
	if n != 3 || secs != want {
		t.Errorf("GPU-seconds %v over %d attempts, want %v over 3", secs, n, want)
	}
	for _, a := range j.Status.Attempts {
		if len(a.Rates) != len(a.Nodes) || a.Rates[0] <= 0 || a.Pricing == "" {
			t.Errorf("attempt %d on %d nodes is priced %q at %v per hour: want a rate per instance", a.Number, len(a.Nodes), a.Pricing, a.Rates)
		}
	}
}

// TestResizeSimulated: on simulated nodes a resize takes effect at once:
// the job runs on with the new instances in a new attempt, its run's
// duration counting through the resize.
func TestResizeSimulated(t *testing.T) {
	ctx := context.Background()
	fleet, ten := servertest.Lab(t)
	clock := NewManualClock(t0)
	srv, err := New(ctx, Config{Store: servertest.Store(t, ""), Fleet: fleet, Tenancy: ten, Clock: clock, CheckIncremental: true})
	if err != nil {
		t.Fatal(err)
	}
	id := elasticJob(t, srv, `{name: e, tenant: team, resources: {gpus_per_instance: 8}, duration: 1h,
		elastic: {min_instances: 1, max_instances: 2}}`, false)
	clock.Advance(40 * time.Minute)
	if err := srv.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	got := wholeJob(t, srv, id)
	at := got.Status.Attempts
	if got.Status.State != model.StateRunning || len(at) != 2 || !at[0].Ended.Equal(clock.Now()) || at[0].Reason != ReasonResized ||
		!at[1].Started.Equal(clock.Now()) || len(got.Status.Allocations) != 2 || got.Status.Resizes != 1 {
		t.Fatalf("after the resize: %s, attempts %+v, %d allocations", got.Status.State, at, len(got.Status.Allocations))
	}
	clock.Advance(19 * time.Minute)
	if err := srv.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if s := wholeJob(t, srv, id).Status.State; s != model.StateRunning {
		t.Fatalf("59 minutes into its hour: %s", s)
	}
	clock.Advance(time.Minute)
	if err := srv.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if s := wholeJob(t, srv, id).Status.State; s != model.StateSucceeded {
		t.Fatalf("an hour after it started, across its resize: %s, want Succeeded", s)
	}
}

// TestResizeFoldedByCancel: a job canceled while the old ranks of a
// resize stop is stopped as a whole: the new attempt, which never ran, is
// dropped, the old ranks are the ones told to stop, and once they exit the
// job is Canceled.
func TestResizeFoldedByCancel(t *testing.T) {
	ctx := context.Background()
	srv, clock, must := labWithNodes(t)
	all := []string{"h100-01", "h100-02", "h100-03"}
	id := elasticJob(t, srv, `{name: e, tenant: team, command: [train], resources: {gpus_per_instance: 8},
		elastic: {min_instances: 1, max_instances: 3}}`, true)
	first := wholeJob(t, srv, id).Status.Allocations[0].Node
	clock.Advance(model.DefaultResizeInterval)
	must(srv.Cycle(ctx))
	if j := wholeJob(t, srv, id); !resizing(j) || len(j.Status.Allocations) != 3 {
		t.Fatalf("not resizing to 3: %+v", j.Status)
	}
	_, err := srv.Cancel(ctx, admin, id)
	must(err)
	j := wholeJob(t, srv, id)
	if j.Status.State != model.StatePreempted || !j.Status.Canceling || len(j.Status.Attempts) != 1 || j.Status.Resizes != 0 ||
		j.Status.Attempts[0].Reason != "Canceled" || len(j.Status.Resizing) != 0 {
		t.Fatalf("canceled while resizing: %s canceling %v, %d attempts (%+v), %d resizes", j.Status.State, j.Status.Canceling,
			len(j.Status.Attempts), j.Status.Attempts, j.Status.Resizes)
	}
	run, stop := ranksOn(t, srv, id, all...)
	if len(run) != 0 || len(stop) != 1 || stop[0].Attempt != 1 {
		t.Fatalf("canceled while resizing: run %+v, stop %+v; want attempt 1's rank told to stop", run, stop)
	}
	_, err = srv.ReportEvent(ctx, admin, id, 1, Event{Type: EventExited, Rank: 0, Node: first, ExitCode: 143, Outcome: OutcomeExited})
	must(err)
	if s := wholeJob(t, srv, id).Status.State; s != model.StateCanceled {
		t.Fatalf("once the old rank exited: %s, want Canceled", s)
	}
}

// TestResizeOverdue: old ranks of a resize whose exits never come are
// taken as gone after their grace and the node timeout, and the new
// attempt's ranks are handed out.
func TestResizeOverdue(t *testing.T) {
	ctx := context.Background()
	srv, clock, must := labWithNodes(t)
	all := []string{"h100-01", "h100-02", "h100-03"}
	id := elasticJob(t, srv, `{name: e, tenant: team, command: [train], resources: {gpus_per_instance: 8},
		elastic: {min_instances: 1, max_instances: 2}, checkpoint: {grace: 10s}}`, true)
	clock.Advance(model.DefaultResizeInterval)
	beat := func() {
		for _, n := range all {
			must(srv.Heartbeat(ctx, n))
		}
	}
	beat()
	must(srv.Cycle(ctx))
	if !resizing(wholeJob(t, srv, id)) {
		t.Fatal("the job did not grow")
	}
	clock.Advance(11 * time.Second) // past the grace, within grace and node timeout (2s)
	beat()
	must(srv.Cycle(ctx))
	if run, _ := ranksOn(t, srv, id, all...); len(run) != 0 {
		t.Fatalf("within grace and node timeout: %d ranks handed out", len(run))
	}
	clock.Advance(2 * time.Second)
	beat()
	must(srv.Cycle(ctx))
	j := wholeJob(t, srv, id)
	if run, _ := ranksOn(t, srv, id, all...); len(run) != 2 || len(j.Status.Resizing) != 0 || !j.Status.Attempts[0].Ended.Equal(clock.Now()) {
		t.Fatalf("past grace and node timeout: %d ranks handed out, resizing %v, attempt 1 ended %v", len(run), j.Status.Resizing, j.Status.Attempts[0].Ended)
	}
}

// TestExplainElastic: 'job why' on an elastic job says its size in its
// range and why it is not larger, and its last resize.
func TestExplainElastic(t *testing.T) {
	now := t0.Add(time.Hour)
	el := func(state model.State, size int, started time.Time, attempts ...model.Attempt) *model.Job {
		return &model.Job{Spec: model.JobSpec{Resources: model.Resources{InstanceCount: 2, GPUsPerInstance: 8},
			Elastic: &model.Elastic{MinInstances: 2, MaxInstances: 6, Step: 2}},
			Status: model.JobStatus{State: state, StartedAt: started, Allocations: make([]model.Allocation, size), Attempts: attempts}}
	}
	grew := model.Attempt{Number: 1, Started: t0, Ended: t0.Add(50 * time.Minute), Reason: ReasonResized, Detail: "grew 2→4: 16 idle H100"}
	for _, tc := range []struct {
		name string
		j    *model.Job
		want string
	}{
		{"too soon", el(model.StateRunning, 4, now.Add(-5*time.Minute), grew, model.Attempt{Number: 2}),
			"4 of 2-6 instances, step 2; no resize before 2026-06-01T13:05:00Z (--resize-interval 10m0s from the start of attempt 2); last resized at 2026-06-01T12:50:00Z: grew 2→4: 16 idle H100"},
		{"no idle capacity", el(model.StateRunning, 2, t0, model.Attempt{Number: 1}),
			"2 of 2-6 instances, step 2; not larger: it grows by 2 instance(s) (16 GPUs) only into capacity that nothing queued needs"},
		{"at its maximum", el(model.StateRunning, 6, t0, model.Attempt{Number: 1}), "6 of 2-6 instances, step 2; at its maximum"},
		{"resizing", func() *model.Job {
			j := el(model.StatePreparing, 4, now, grew, model.Attempt{Number: 2})
			j.Status.Resizing = []model.Instance{{Started: true}, {Started: true}}
			return j
		}(), "4 of 2-6 instances, step 2; resizing: the ranks of attempt 1 stop, then the 4 of attempt 2 start together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := explainElastic(tc.j, now, 10*time.Minute); !strings.HasPrefix(got, tc.want) {
				t.Errorf("explainElastic =\n%s\nwant it to begin\n%s", got, tc.want)
			}
		})
	}
	if got := explainElastic(&model.Job{Status: model.JobStatus{State: model.StateRunning}}, now, time.Minute); got != "" {
		t.Errorf("a job of a fixed size: %q", got)
	}
}
