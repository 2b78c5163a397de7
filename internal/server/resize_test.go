package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/spec"
)

// resizeOnce makes the next cycle's Plan resize job to the instances on
// nodes (every GPU of each), as the core's growth or shrink would.
func resizeOnce(t *testing.T, srv *Server, id string, reason sched.Reason, forJob, detail string, nodes ...string) {
	t.Helper()
	j := wholeJob(t, srv, id)
	r := sched.Resize{Job: id, From: len(j.Status.Allocations), To: len(nodes), For: forJob, Reason: reason, Detail: detail}
	for _, n := range nodes {
		r.Nodes = append(r.Nodes, sched.Placement{Node: n, GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, GPUMilli: model.MilliPerGPU})
	}
	planned = func(p *sched.Plan) {
		p.Resizes = append(p.Resizes, r)
		planned = nil
	}
	t.Cleanup(func() { planned = nil })
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

// TestResizeWithAgents follows an elastic job through a growth and a
// shrink on agents: each resize ends the attempt (Resized) and tells the
// old ranks to stop with their grace; no rank of the new attempt starts
// before every old one exited, then all start together with the new world
// size, resuming from the job-level checkpoint saved meanwhile; the job
// stays Preparing or Running, never Queued; each attempt is billed for the
// instances it held while they ran.
func TestResizeWithAgents(t *testing.T) {
	ctx := context.Background()
	srv, clock, must := labWithNodes(t)
	team := Principal{Tenant: "team"}
	all := []string{"h100-01", "h100-02", "h100-03"}
	specs, err := spec.ParseJobs("test", []byte(`{name: e, tenant: team, command: [train], resources: {gpus_per_instance: 8},
		elastic: {min_instances: 1, max_instances: 3}, checkpoint: {grace: 1m}}`), nil)
	must(err)
	sub, err := srv.Submit(ctx, team, specs[0])
	must(err)
	id := sub.ID
	must(srv.Cycle(ctx))
	j := wholeJob(t, srv, id)
	first := j.Status.Allocations[0].Node
	_, err = srv.ReportEvent(ctx, admin, id, 1, Event{Type: EventStarted, Rank: 0, Node: first})
	must(err)
	started := clock.Now()

	// Growth 1 → 2 into a free node.
	clock.Advance(10 * time.Minute)
	var free string
	for _, n := range all {
		if n != first && free == "" {
			free = n
		}
	}
	resizeOnce(t, srv, id, sched.IdleCapacity, "", "8 idle H100", first, free)
	must(srv.Cycle(ctx))
	resizedAt := clock.Now()
	j = wholeJob(t, srv, id)
	old := j.Status.Attempts[0]
	if j.Status.State != model.StatePreparing || j.Status.Resizes != 1 || len(j.Status.Attempts) != 2 || len(j.Status.Allocations) != 2 ||
		old.Reason != ReasonResized || old.Detail != "grew 1→2: 8 idle H100" || !old.Ended.IsZero() || !old.StopOrdered.Equal(resizedAt) {
		t.Fatalf("after the growth: %s, %d resizes, %d attempts, %d allocations, attempt 1 %+v", j.Status.State, j.Status.Resizes,
			len(j.Status.Attempts), len(j.Status.Allocations), old)
	}
	run, stop := ranksOn(t, srv, id, all...)
	if len(run) != 0 || len(stop) != 1 || stop[0].Attempt != 1 || stop[0].Rank != 0 || stop[0].Reason != ReasonResized || stop[0].Grace != time.Minute {
		t.Fatalf("while the old rank stops: run %+v, stop %+v; want no rank run and attempt 1's rank 0 told to stop with its grace", run, stop)
	}
	// The old rank saves the job's checkpoint in its grace (on a shared
	// root: every world size resumes from it); a part of its own world is
	// not recorded.
	rank := 0
	_, err = srv.ReportCheckpoint(ctx, admin, id, CheckpointReport{Path: "/ckpt/e/rank-0/step-9", Node: first, Rank: &rank})
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
	j = wholeJob(t, srv, id)
	for _, x := range run {
		_, err = srv.ReportEvent(ctx, admin, id, 2, Event{Type: EventStarted, Rank: x.Rank, Node: j.Status.Allocations[x.Rank].Node})
		must(err)
	}
	running := clock.Now()
	if j = wholeJob(t, srv, id); j.Status.State != model.StateRunning || !j.Status.Attempts[1].Started.Equal(running) {
		t.Fatalf("every new rank started: %s, attempt 2 started %v", j.Status.State, j.Status.Attempts[1].Started)
	}

	// Shrink 2 → 1 for another job: the dropped node counts as stopping
	// for other gangs until its rank is gone.
	clock.Advance(30 * time.Minute)
	resizeOnce(t, srv, id, sched.HigherClass, "urgent-1", "room for 1 instance", first)
	must(srv.Cycle(ctx))
	j = wholeJob(t, srv, id)
	if j.Status.Resizes != 2 || j.Status.Attempts[1].Reason != ReasonResized ||
		!strings.HasPrefix(j.Status.Attempts[1].Detail, "shrunk 2→1 for urgent-1 (HigherClass): room for 1 instance") {
		t.Fatalf("after the shrink: %d resizes, attempt 2 %+v", j.Status.Resizes, j.Status.Attempts[1])
	}
	if by := stoppingNodes(srv.cache.holding())[free]; by != id {
		t.Errorf("node %s, given up by the shrink, is stopping for %q, want %s", free, by, id)
	}
	_, stop = ranksOn(t, srv, id, all...)
	if len(stop) != 2 {
		t.Fatalf("the shrink stops %d ranks, want both of attempt 2", len(stop))
	}
	clock.Advance(5 * time.Second)
	for r, n := range []string{first, free} {
		_, err = srv.ReportEvent(ctx, admin, id, 2, Event{Type: EventExited, Rank: r, Node: n, ExitCode: 143, Outcome: OutcomeExited})
		must(err)
	}
	shrunk := clock.Now()
	run, _ = ranksOn(t, srv, id, all...)
	if len(run) != 1 || run[0].WorldSize != 1 || run[0].Attempt != 3 {
		t.Fatalf("after the shrink's old ranks exited: %+v, want rank 0 of attempt 3 alone", run)
	}
	_, err = srv.ReportEvent(ctx, admin, id, 3, Event{Type: EventStarted, Rank: 0, Node: first})
	must(err)
	clock.Advance(time.Hour)

	// The bill: 8 GPUs until the first resize's rank was gone, 16 while
	// attempt 2 ran, 8 since.
	j = wholeJob(t, srv, id)
	secs, n := GPUSeconds(j, started, clock.Now())
	want := 8*gone.Sub(started).Seconds() + 16*shrunk.Sub(running).Seconds() + 8*clock.Now().Sub(shrunk).Seconds()
	if n != 3 || secs != want {
		t.Errorf("GPU-seconds %v over %d attempts, want %v over 3", secs, n, want)
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
	specs, err := spec.ParseJobs("test", []byte(`{name: e, tenant: team, resources: {gpus_per_instance: 8}, duration: 1h,
		elastic: {min_instances: 1, max_instances: 2}}`), nil)
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
	first := wholeJob(t, srv, j.ID).Status.Allocations[0].Node
	other := "h100-02"
	if first == other {
		other = "h100-01"
	}
	clock.Advance(40 * time.Minute)
	resizeOnce(t, srv, j.ID, sched.IdleCapacity, "", "8 idle H100", first, other)
	if err := srv.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	got := wholeJob(t, srv, j.ID)
	at := got.Status.Attempts
	if got.Status.State != model.StateRunning || len(at) != 2 || !at[0].Ended.Equal(clock.Now()) || at[0].Reason != ReasonResized ||
		!at[1].Started.Equal(clock.Now()) || len(got.Status.Allocations) != 2 || got.Status.Resizes != 1 {
		t.Fatalf("after the resize: %s, attempts %+v, %d allocations", got.Status.State, at, len(got.Status.Allocations))
	}
	clock.Advance(19 * time.Minute)
	if err := srv.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if s := wholeJob(t, srv, j.ID).Status.State; s != model.StateRunning {
		t.Fatalf("59 minutes into its hour: %s", s)
	}
	clock.Advance(time.Minute)
	if err := srv.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if s := wholeJob(t, srv, j.ID).Status.State; s != model.StateSucceeded {
		t.Fatalf("an hour after it started, across its resize: %s, want Succeeded", s)
	}
}

// TestResizeFoldedByCancel: a job canceled while the old ranks of a
// resize stop is stopped as a whole: the new attempt, which never ran, is
// dropped, the old ranks are the ones told to stop, and once they exit the
// job is Canceled.
func TestResizeFoldedByCancel(t *testing.T) {
	ctx := context.Background()
	srv, _, must := labWithNodes(t)
	specs, err := spec.ParseJobs("test", []byte(`{name: e, tenant: team, command: [train], resources: {gpus_per_instance: 8},
		elastic: {min_instances: 1, max_instances: 3}}`), nil)
	must(err)
	sub, err := srv.Submit(ctx, Principal{Tenant: "team"}, specs[0])
	must(err)
	id := sub.ID
	must(srv.Cycle(ctx))
	first := wholeJob(t, srv, id).Status.Allocations[0].Node
	_, err = srv.ReportEvent(ctx, admin, id, 1, Event{Type: EventStarted, Rank: 0, Node: first})
	must(err)
	others := []string{}
	for _, n := range []string{"h100-01", "h100-02", "h100-03"} {
		if n != first {
			others = append(others, n)
		}
	}
	resizeOnce(t, srv, id, sched.IdleCapacity, "", "16 idle H100", first, others[0], others[1])
	must(srv.Cycle(ctx))
	_, err = srv.Cancel(ctx, admin, id)
	must(err)
	j := wholeJob(t, srv, id)
	if j.Status.State != model.StatePreempted || !j.Status.Canceling || len(j.Status.Attempts) != 1 || j.Status.Resizes != 0 ||
		j.Status.Attempts[0].Reason != "Canceled" || len(j.Status.Resizing) != 0 {
		t.Fatalf("canceled while resizing: %s canceling %v, %d attempts (%+v), %d resizes", j.Status.State, j.Status.Canceling,
			len(j.Status.Attempts), j.Status.Attempts, j.Status.Resizes)
	}
	run, stop := ranksOn(t, srv, id, append(others, first)...)
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
	specs, err := spec.ParseJobs("test", []byte(`{name: e, tenant: team, command: [train], resources: {gpus_per_instance: 8},
		elastic: {min_instances: 1, max_instances: 2}, checkpoint: {grace: 10s}}`), nil)
	must(err)
	sub, err := srv.Submit(ctx, Principal{Tenant: "team"}, specs[0])
	must(err)
	id := sub.ID
	must(srv.Cycle(ctx))
	first := wholeJob(t, srv, id).Status.Allocations[0].Node
	_, err = srv.ReportEvent(ctx, admin, id, 1, Event{Type: EventStarted, Rank: 0, Node: first})
	must(err)
	other := "h100-02"
	if first == other {
		other = "h100-01"
	}
	resizeOnce(t, srv, id, sched.IdleCapacity, "", "8 idle H100", first, other)
	must(srv.Cycle(ctx))
	for _, n := range []string{first, other} {
		must(srv.Heartbeat(ctx, n))
	}
	clock.Advance(11 * time.Second) // past the grace, within grace and node timeout (2s)
	must(srv.Cycle(ctx))
	if run, _ := ranksOn(t, srv, id, first, other); len(run) != 0 {
		t.Fatalf("within grace and node timeout: %d ranks handed out", len(run))
	}
	clock.Advance(2 * time.Second)
	for _, n := range []string{first, other} {
		must(srv.Heartbeat(ctx, n))
	}
	must(srv.Cycle(ctx))
	j := wholeJob(t, srv, id)
	if run, _ := ranksOn(t, srv, id, first, other); len(run) != 2 || len(j.Status.Resizing) != 0 || !j.Status.Attempts[0].Ended.Equal(clock.Now()) {
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
