package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/spec"
)

// running2 is a two-instance job bound on n1 and n2, both started.
func running2(maxRetries int) *model.Job {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &model.Job{ID: "j", Spec: model.JobSpec{Name: "j", Tenant: "team", Retry: model.Retry{MaxRetries: maxRetries, Timeout: time.Minute}},
		Status: model.JobStatus{State: model.StateRunning, StartedAt: t,
			Allocations: []model.Allocation{{Node: "n1", GPUs: []int{0}, GPUMilli: 1000}, {Node: "n2", GPUs: []int{0}, GPUMilli: 1000}},
			Attempts:    []model.Attempt{{Number: 1, Nodes: []string{"n1", "n2"}, Started: t}},
			Instances:   []model.Instance{{Started: true}, {Started: true}}}}
}

func TestApplyEvent(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	exited := func(rank, code int, outcome string) Event {
		return Event{Type: EventExited, Rank: rank, Node: fmt.Sprintf("n%d", rank+1), ExitCode: code, Outcome: outcome}
	}
	tests := []struct {
		name       string
		job        func() *model.Job
		attempt    int
		events     []Event
		wantState  model.State
		wantReason string
		wantErr    Code
		attempts   int // closed attempts expected, with the last reason below
		lastReason string
		retries    int
	}{
		{name: "all started: Preparing to Running", job: func() *model.Job {
			j := running2(0)
			j.Status.State, j.Status.Instances = model.StatePreparing, make([]model.Instance, 2)
			return j
		}, attempt: 1, events: []Event{{Type: EventStarted, Rank: 0}, {Type: EventStarted, Rank: 1}}, wantState: model.StateRunning},
		{name: "one started stays Preparing", job: func() *model.Job {
			j := running2(0)
			j.Status.State, j.Status.Instances = model.StatePreparing, make([]model.Instance, 2)
			return j
		}, attempt: 1, events: []Event{{Type: EventStarted, Rank: 1}}, wantState: model.StatePreparing},
		{name: "both exit 0: Succeeded", job: func() *model.Job { return running2(0) }, attempt: 1,
			events: []Event{exited(0, 0, OutcomeExited), exited(1, 0, OutcomeExited)}, wantState: model.StateSucceeded,
			wantReason: "Completed", attempts: 1, lastReason: "Completed"},
		{name: "one exits 0: still Running", job: func() *model.Job { return running2(0) }, attempt: 1,
			events: []Event{exited(0, 0, OutcomeExited)}, wantState: model.StateRunning},
		{name: "non-zero with retries left: Queued", job: func() *model.Job { return running2(1) }, attempt: 1,
			events: []Event{exited(1, 2, OutcomeExited)}, wantState: model.StateQueued, wantReason: "Retrying",
			attempts: 1, lastReason: "Failed", retries: 1},
		{name: "non-zero without retries: Failed", job: func() *model.Job {
			j := running2(1)
			j.Status.Retries = 1
			return j
		}, attempt: 1, events: []Event{exited(0, 2, OutcomeExited)}, wantState: model.StateFailed, wantReason: "Failed",
			attempts: 1, lastReason: "Failed", retries: 1},
		{name: "timed out", job: func() *model.Job { return running2(3) }, attempt: 1,
			events: []Event{exited(0, -1, OutcomeTimedOut)}, wantState: model.StateTimedOut, wantReason: "TimedOut",
			attempts: 1, lastReason: "TimedOut"},
		{name: "lost by its agent: NodeLost, no retry counted", job: func() *model.Job { return running2(0) }, attempt: 1,
			events: []Event{exited(1, -1, OutcomeNodeLost)}, wantState: model.StateQueued, wantReason: "BackingOff",
			attempts: 1, lastReason: "NodeLost"},
		{name: "stopped by its agent going down: requeued, no retry counted, the other rank stopped", job: func() *model.Job { return running2(0) }, attempt: 1,
			events: []Event{exited(0, -1, OutcomeStopped)}, wantState: model.StatePreempted, wantReason: ReasonRequeued},
		{name: "stopped by its agents going down: Queued once both are gone", job: func() *model.Job { return running2(0) }, attempt: 1,
			events: []Event{exited(0, -1, OutcomeStopped), exited(1, -1, OutcomeStopped)}, wantState: model.StateQueued, wantReason: ReasonRequeued,
			attempts: 1, lastReason: ReasonRequeued},
		{name: "preempted waits for its last live instance", job: func() *model.Job {
			j := running2(0)
			j.Status.State, j.Status.Allocations = model.StatePreempted, nil
			j.Status.Instances[0] = model.Instance{Started: true, Exited: true, ExitCode: -1, Outcome: OutcomeStopped}
			return j
		}, attempt: 1, events: []Event{exited(1, -1, OutcomeStopped)}, wantState: model.StateQueued},
		{name: "stale attempt refused", job: func() *model.Job { return running2(0) }, attempt: 2,
			events: []Event{exited(0, 0, OutcomeExited)}, wantErr: CodeConflict},
		{name: "rank out of range refused", job: func() *model.Job { return running2(0) }, attempt: 1,
			events: []Event{exited(5, 0, OutcomeExited)}, wantErr: CodeInvalidSpec},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := tc.job()
			for _, e := range tc.events {
				next, _, err := applyEvent(j, tc.attempt, e, now, limits{maxLost: DefaultMaxLost, retryBackoff: -1})
				if tc.wantErr != "" {
					se, ok := err.(*Error)
					if !ok || se.Code != tc.wantErr {
						t.Fatalf("err %v, want %s", err, tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if next != nil {
					j = next
				}
			}
			if j.Status.State != tc.wantState || (tc.wantReason != "" && j.Status.Reason != tc.wantReason) {
				t.Fatalf("state %s reason %s (%s), want %s %s", j.Status.State, j.Status.Reason, j.Status.Detail, tc.wantState, tc.wantReason)
			}
			if j.Status.Retries != tc.retries {
				t.Errorf("retries %d, want %d", j.Status.Retries, tc.retries)
			}
			if tc.attempts > 0 {
				a := j.Status.Attempts[len(j.Status.Attempts)-1]
				if a.Ended.IsZero() || a.Reason != tc.lastReason {
					t.Errorf("last attempt %+v, want ended with %s", a, tc.lastReason)
				}
			}
			if j.Status.State == model.StateQueued && (len(j.Status.Allocations) != 0 || len(j.Status.Instances) != 0) {
				t.Errorf("queued job keeps allocations %v or instances %v", j.Status.Allocations, j.Status.Instances)
			}
		})
	}
}

func TestPreemptJobAgentMode(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	p := sched.Preemption{Job: "j", For: "big", Reason: sched.HigherClass, LostGPUSeconds: 600}
	j := preemptJob(running2(0), p, now, true, model.DefaultGrace)
	if j.Status.State != model.StatePreempted || j.Status.Allocations != nil || j.Status.Preemptions != 1 {
		t.Fatalf("got %s allocations %v preemptions %d, want Preempted, released, 1", j.Status.State, j.Status.Allocations, j.Status.Preemptions)
	}
	if d := j.Status.Attempts[0].Detail; !strings.Contains(d, "preempted for big (HigherClass) at 2026-01-01T00:05:00Z, 600 GPU-seconds lost") {
		t.Errorf("attempt detail %q lacks the eviction notice", d)
	}
	// The default grace of 30 s sets the deadline of the notice.
	if d := j.Status.Detail; !strings.Contains(d, "eviction notice: stopping now, stopped by 2026-01-01T00:05:30Z (grace 30s)") {
		t.Errorf("job detail %q lacks the eviction deadline", d)
	}
	idle := running2(0)
	idle.Status.Instances = make([]model.Instance, 2) // nothing started yet
	if j := preemptJob(idle, p, now, true, model.DefaultGrace); j.Status.State != model.StateQueued {
		t.Errorf("a victim with no live instance is %s, want Queued at once", j.Status.State)
	}
}

// agentHarness is a server in agent mode on the three-node test fleet,
// with a manual clock.
func agentHarness(t *testing.T) (*Server, *ManualClock) {
	t.Helper()
	fleet, ten := servertest.Lab(t)
	st := servertest.Store(t, "")
	clock := NewManualClock(t0)
	srv, err := New(context.Background(), Config{Store: st, Fleet: fleet, Tenancy: ten, Clock: clock,
		Nodes: Agents{Timeout: 2 * time.Second}, CheckIncremental: true})
	if err != nil {
		t.Fatal(err)
	}
	return srv, clock
}

// labWithNodes is agentHarness with the lab's three nodes registered, and
// a function that fails the test on an error.
func labWithNodes(t *testing.T) (*Server, *ManualClock, func(error)) {
	t.Helper()
	srv, clock := agentHarness(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"h100-01", "h100-02", "h100-03"} {
		must(srv.RegisterNode(context.Background(), n, h100s(8), ""))
	}
	return srv, clock, must
}

func h100s(n int) []GPU {
	g := make([]GPU, n)
	for i := range g {
		g[i] = GPU{Index: i, UUID: fmt.Sprintf("GPU-%d", i), Model: "H100"}
	}
	return g
}

func TestAgentModeLifecycle(t *testing.T) {
	ctx := context.Background()
	srv, clock := agentHarness(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	state := func(id string) model.State {
		j := wholeJob(t, srv, id)
		return j.Status.State
	}

	// Registration checks the SKU.
	err := srv.RegisterNode(ctx, "h100-01", h100s(4), "")
	if se, ok := err.(*Error); !ok || se.Field != "gpus" {
		t.Fatalf("4 GPUs on an 8-GPU node: %v, want InvalidSpec on gpus", err)
	}
	bad := h100s(8)
	bad[3].Model = "A100"
	if se, ok := srv.RegisterNode(ctx, "h100-01", bad, "").(*Error); !ok || se.Field != "gpus[3].model" {
		t.Fatalf("an A100 among H100s: want InvalidSpec on gpus[3].model")
	}
	if se, ok := srv.RegisterNode(ctx, "nope", h100s(8), "").(*Error); !ok || se.Code != CodeNotFound {
		t.Fatalf("unknown node: want NotFound")
	}

	// Nothing runs before a node registers.
	specs, err := spec.ParseJobs("test", []byte(`{name: a, tenant: team, command: [x], resources: {gpus_per_instance: 8}, retry: {max_retries: 1}}`), nil)
	must(err)
	j, err := srv.Submit(ctx, Principal{Tenant: "team"}, specs[0])
	must(err)
	must(srv.Cycle(ctx))
	if s := state(j.ID); s != model.StateQueued {
		t.Fatalf("with no agent the job is %s, want Queued", s)
	}
	for _, n := range []string{"h100-01", "h100-02"} {
		must(srv.RegisterNode(ctx, n, h100s(8), "10.0.0.1"))
	}
	must(srv.Cycle(ctx))
	if s := state(j.ID); s != model.StatePreparing {
		t.Fatalf("bound job is %s, want Preparing", s)
	}
	bound := wholeJob(t, srv, j.ID)
	node := bound.Status.Allocations[0].Node
	as, err := srv.NodeAssignments(ctx, node, 0, 0)
	must(err)
	if len(as.Run) != 1 || as.Run[0].Job != j.ID || len(as.Run[0].GPUs) != 8 || as.Run[0].GPUs[0].UUID != "GPU-0" {
		t.Fatalf("assignments of %s: %+v", node, as)
	}
	_, err = srv.ReportEvent(ctx, admin, j.ID, 1, Event{Type: EventStarted, Rank: 0, Node: node})
	must(err)
	if s := state(j.ID); s != model.StateRunning {
		t.Fatalf("started job is %s, want Running", s)
	}

	// Its node misses heartbeats: NotReady, and the job is requeued with
	// NodeLost, not counted as a retry, and bound on the other node.
	other := "h100-01"
	if node == other {
		other = "h100-02"
	}
	clock.Advance(1500 * time.Millisecond)
	must(srv.Heartbeat(ctx, other))
	clock.Advance(time.Second)
	must(srv.CheckHeartbeats(ctx))
	if h, _ := srv.cache.nodeHealth(); h[node] != model.NodeNotReady || h[other] != model.NodeReady {
		t.Fatalf("health %v, want %s NotReady and %s Ready", h, node, other)
	}
	must(srv.Cycle(ctx))
	got := wholeJob(t, srv, j.ID)
	if got.Status.Attempts[0].Reason != "NodeLost" || got.Status.Retries != 0 || got.Status.Attempts[0].FailedNode != node {
		t.Fatalf("attempt 1 %+v retries %d, want NodeLost on %s and no retry", got.Status.Attempts[0], got.Status.Retries, node)
	}
	// Fencing: the lost node's processes may run until its agent stops
	// them (node timeout, already passed, plus the job's grace), so the
	// job waits that long before it starts elsewhere.
	must(srv.Cycle(ctx))
	got = wholeJob(t, srv, j.ID)
	hold := got.Spec.Checkpoint.GraceOrDefault() + fenceMargin
	if got.Status.State != model.StateQueued || got.Status.Reason != "BackingOff" || !got.Status.NotBefore.Equal(clock.Now().Add(hold)) {
		t.Fatalf("right after NodeLost: %s %s %q not before %s, want Queued BackingOff until now+%s",
			got.Status.State, got.Status.Reason, got.Status.Detail, got.Status.NotBefore, hold)
	}
	clock.Advance(hold)
	must(srv.Cycle(ctx))
	got = wholeJob(t, srv, j.ID)
	if got.Status.State != model.StatePreparing || got.Status.Allocations[0].Node != other {
		t.Fatalf("after NodeLost: %s on %v, want Preparing on %s", got.Status.State, got.Status.Allocations, other)
	}

	// The late exit of attempt 1 is refused as stale; attempt 2 fails, is
	// retried once, then fails for good: exactly max_retries+1 counted.
	if _, err := srv.ReportEvent(ctx, admin, j.ID, 1, Event{Type: EventExited, Rank: 0, ExitCode: 1, Outcome: OutcomeExited}); err == nil {
		t.Fatal("an exit of a past attempt was accepted")
	}
	for n := 2; n <= 3; n++ {
		_, err = srv.ReportEvent(ctx, admin, j.ID, n, Event{Type: EventStarted, Rank: 0, Node: other})
		must(err)
		_, err = srv.ReportEvent(ctx, admin, j.ID, n, Event{Type: EventExited, Rank: 0, Node: other, ExitCode: 7, Outcome: OutcomeExited})
		must(err)
		if n == 2 { // the retry waits out its back-off
			must(srv.Cycle(ctx))
			if got := wholeJob(t, srv, j.ID); got.Status.State != model.StateQueued || got.Status.Reason != "Retrying" {
				t.Fatalf("within the retry's back-off: %s %s, want Queued Retrying", got.Status.State, got.Status.Reason)
			}
			clock.Advance(DefaultRetryBackoff)
		}
		must(srv.Cycle(ctx))
	}
	got = wholeJob(t, srv, j.ID)
	if got.Status.State != model.StateFailed || len(got.Status.Attempts) != 3 || got.Status.Attempts[2].ExitCode != 7 {
		t.Fatalf("got %s after %d attempts (%+v), want Failed after 3 with exit code 7", got.Status.State, len(got.Status.Attempts), got.Status.Attempts)
	}
	// The two failed attempts count against their node, once each (an exit
	// reported again changes nothing); the lost one does not.
	_, _ = srv.ReportEvent(ctx, admin, j.ID, 3, Event{Type: EventExited, Rank: 0, Node: other, ExitCode: 7, Outcome: OutcomeExited})
	if n, lost := failedOn(t, srv, other), failedOn(t, srv, node); n != 2 || lost != 0 {
		t.Errorf("allot_node_failed_attempts_total: %s %v, %s %v; want 2 and 0", other, n, node, lost)
	}
	d, err := srv.Node(other)
	must(err)
	if len(d.Failures) != 2 || d.Failures[0].Attempt != 2 || d.Failures[1].Attempt != 3 || d.Failures[1].ExitCode != 7 ||
		d.Failures[1].Job != j.ID || !strings.Contains(d.Failures[1].Detail, "exited with code 7") {
		t.Errorf("node show's failed attempts of %s: %+v, want attempts 2 and 3 of %s, exit 7", other, d.Failures, j.ID)
	}
}

// A node keeps its latest failed attempts, oldest first, at most
// nodeFailuresKept; node show lists the latest nodeFailuresShown.
func TestNodeFailuresKept(t *testing.T) {
	srv, _ := agentHarness(t)
	for i := 1; i <= nodeFailuresKept+2; i++ {
		srv.noteFailure("h100-01", NodeFailure{Job: fmt.Sprintf("j%d", i), Attempt: 1})
	}
	if fs := srv.failures["h100-01"]; len(fs) != nodeFailuresKept || fs[0].Job != "j3" {
		t.Errorf("kept %d from %s, want %d from j3", len(fs), fs[0].Job, nodeFailuresKept)
	}
	d, err := srv.Node("h100-01")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range d.Failures {
		got = append(got, f.Job)
	}
	n := nodeFailuresKept + 2
	want := []string{fmt.Sprintf("j%d", n-4), fmt.Sprintf("j%d", n-3), fmt.Sprintf("j%d", n-2), fmt.Sprintf("j%d", n-1), fmt.Sprintf("j%d", n)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("shown %v, want %v", got, want)
	}
}

// failedOn reads allot_node_failed_attempts_total of node.
func failedOn(t *testing.T, srv *Server, node string) float64 {
	t.Helper()
	var m dto.Metric
	if err := srv.m.nodeFailed.WithLabelValues(node).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestStopOverdue(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	p := sched.Preemption{Job: "j", For: "big", Reason: sched.HigherClass}
	j := running2(0)
	j.Spec.Checkpoint.Grace = 10 * time.Second
	j = preemptJob(j, p, now, true, 10*time.Second)
	if stopOverdue(j, now.Add(11*time.Second), 2*time.Second, 10*time.Second) != nil {
		t.Fatal("requeued within grace + node timeout")
	}
	if a := j.Status.Attempts[0]; !a.Ended.IsZero() || !a.StopOrdered.Equal(now) {
		t.Errorf("a victim whose processes may run has attempt ended %v, stop ordered %v; want billed on (no end), ordered at %v", a.Ended, a.StopOrdered, now)
	}
	q := stopOverdue(j, now.Add(13*time.Second), 2*time.Second, 10*time.Second)
	if q == nil || q.Status.State != model.StateQueued || q.Status.Instances != nil {
		t.Fatalf("after grace + node timeout: %+v, want Queued without instances", q)
	}
	if end := q.Status.Attempts[0].Ended; !end.Equal(now.Add(13 * time.Second)) {
		t.Errorf("overdue attempt ended %v, want billed until the server gave up (%v)", end, now.Add(13*time.Second))
	}
}

// A node's token speaks only for the ranks bound to its node: it cannot
// end another node's rank of a gang (which would end the gang Succeeded
// while that rank still runs elsewhere).
func TestNodeReportsOnlyItsOwnRanks(t *testing.T) {
	ctx := context.Background()
	srv, _ := agentHarness(t)
	for _, n := range []string{"h100-01", "h100-02"} {
		if err := srv.RegisterNode(ctx, n, h100s(8), ""); err != nil {
			t.Fatal(err)
		}
	}
	specs, err := spec.ParseJobs("test", []byte(`{name: gang, tenant: team, command: [x], resources: {instance_count: 2, gpus_per_instance: 8}}`), nil)
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
	bound := wholeJob(t, srv, j.ID)
	if len(bound.Status.Allocations) != 2 {
		t.Fatalf("gang not bound: %+v", bound.Status)
	}
	n0, n1 := bound.Status.Allocations[0].Node, bound.Status.Allocations[1].Node
	for r, n := range []string{n0, n1} {
		if _, err := srv.ReportEvent(ctx, Principal{Node: n}, j.ID, 1, Event{Type: EventStarted, Rank: r, Node: n}); err != nil {
			t.Fatal(err)
		}
	}
	// The agent of rank 0's node reports rank 1 exited 0, in its own name.
	_, err = srv.ReportEvent(ctx, Principal{Node: n0}, j.ID, 1, Event{Type: EventExited, Rank: 1, Node: n0})
	if !isCode(err, CodeForbidden) {
		t.Fatalf("node %s reported rank 1 (on %s): %v, want Forbidden", n0, n1, err)
	}
	if _, err := srv.ReportEvent(ctx, Principal{Node: n0}, j.ID, 1, Event{Type: EventExited, Rank: 0, Node: n0}); err != nil {
		t.Fatal(err)
	}
	after := wholeJob(t, srv, j.ID)
	if after.Status.State != model.StateRunning || !after.Status.Instances[1].Live() {
		t.Fatalf("rank 1 still runs on %s, but the job is %s with instances %+v", n1, after.Status.State, after.Status.Instances)
	}
}

// A job whose attempts keep being lost (its node keeps dying, or it kills
// its own agent) is held back longer each time and fails past the limit:
// it never loops forever, and no lost attempt counts as a retry.
func TestLostAttemptsBackOffThenFail(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	j := running2(3)
	j.Status.Instances = []model.Instance{{Started: true}, {}} // rank 1 never started
	var holds []time.Duration
	for k := 1; ; k++ {
		next, _, err := applyEvent(j, k, Event{Type: EventExited, Rank: 0, Node: "n1", ExitCode: -1, Outcome: OutcomeNodeLost}, now, limits{maxLost: 3, retryBackoff: DefaultRetryBackoff})
		if err != nil {
			t.Fatal(err)
		}
		if next.Status.Retries != 0 || next.Status.Lost != k {
			t.Fatalf("after lost attempt %d: retries %d lost %d", k, next.Status.Retries, next.Status.Lost)
		}
		if next.Status.State == model.StateFailed {
			if k != 4 || next.Status.Reason != "LostTooOften" {
				t.Fatalf("failed after %d lost attempts with %s (%s); want the 4th, LostTooOften", k, next.Status.Reason, next.Status.Detail)
			}
			break
		}
		if k > 4 {
			t.Fatalf("still %s after %d lost attempts with a limit of 3", next.Status.State, k)
		}
		holds = append(holds, next.Status.NotBefore.Sub(now))
		// Bound again on n1 and n2 once the hold is over.
		now = next.Status.NotBefore
		j = bindJob(next, sched.Bind{Job: j.ID, Nodes: []sched.Placement{{Node: "n1", GPUs: []int{0}, GPUMilli: 1000}, {Node: "n2", GPUs: []int{0}, GPUMilli: 1000}}}, now)
		j.Status.Instances = []model.Instance{{Started: true}, {}}
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second}
	if fmt.Sprint(holds) != fmt.Sprint(want) {
		t.Fatalf("holds %v, want %v (confirmed by the agent: back-off only)", holds, want)
	}
	if lostBackoffAfter(20) != maxLostBackoff {
		t.Fatalf("back-off after 20 losses %s, want the cap %s", lostBackoffAfter(20), maxLostBackoff)
	}
}

// A failed attempt is retried after a back-off that doubles up to a cap,
// so that a job that crashes on start does not burn its retries within a
// second; the hold is in the detail 'job why' shows, and the job fails
// with its last retry as before. --retry-backoff 0 retries at once.
func TestFailedAttemptsBackOff(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	for _, tc := range []struct {
		first time.Duration
		want  []time.Duration
	}{
		{first: DefaultRetryBackoff, want: []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second}},
		{first: 2 * time.Minute, want: []time.Duration{2 * time.Minute, 4 * time.Minute, 5 * time.Minute}},
		{first: -1, want: []time.Duration{0, 0, 0}},
	} {
		now, j := start, running2(3)
		var holds []time.Duration
		for k := 1; ; k++ {
			next, _, err := applyEvent(j, k, Event{Type: EventExited, Rank: 1, Node: "n2", ExitCode: 3, Outcome: OutcomeExited}, now,
				limits{maxLost: DefaultMaxLost, retryBackoff: tc.first})
			if err != nil {
				t.Fatal(err)
			}
			if at := next.Status.Attempts[len(next.Status.Attempts)-1]; at.FailedNode != "n2" {
				t.Fatalf("attempt %d failed on rank 1's n2, but records failed node %q", k, at.FailedNode)
			}
			if next.Status.State == model.StateFailed {
				if k != 4 {
					t.Fatalf("failed at attempt %d, want the 4th (max_retries 3)", k)
				}
				break
			}
			if next.Status.State != model.StateQueued || next.Status.Reason != "Retrying" {
				t.Fatalf("attempt %d: %s %s, want Queued Retrying", k, next.Status.State, next.Status.Reason)
			}
			hold := time.Duration(0)
			if !next.Status.NotBefore.IsZero() {
				hold = next.Status.NotBefore.Sub(now)
				if want := "held until " + next.Status.NotBefore.UTC().Format(time.RFC3339); !strings.Contains(next.Status.Detail, want) {
					t.Errorf("detail %q does not say %q", next.Status.Detail, want)
				}
			}
			holds = append(holds, hold)
			now = now.Add(hold + time.Minute)
			j = bindJob(next, sched.Bind{Job: j.ID, Nodes: []sched.Placement{{Node: "n1", GPUs: []int{0}, GPUMilli: 1000}, {Node: "n2", GPUs: []int{0}, GPUMilli: 1000}}}, now)
			j.Status.Instances = []model.Instance{{Started: true}, {Started: true}}
			if !j.Status.NotBefore.IsZero() {
				t.Fatalf("a bound job keeps its hold %s", j.Status.NotBefore)
			}
		}
		if fmt.Sprint(holds) != fmt.Sprint(tc.want) {
			t.Errorf("--retry-backoff %s: holds %v, want %v", tc.first, holds, tc.want)
		}
	}
	if got := retryBackoffAfter(30, 10*time.Minute); got != 10*time.Minute {
		t.Errorf("a first back-off over the cap: %s, want it kept (10m)", got)
	}
}

// A "pulling" event records how far a preparing instance's pull has come,
// and nothing else; the instance's start (or end) clears it; news of a
// pull for an instance that started, a job not Preparing, or the same
// figures again change nothing.
func TestPullingEvent(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	lim := limits{maxLost: DefaultMaxLost, retryBackoff: -1}
	preparing := func() *model.Job {
		j := running2(0)
		j.Status.State, j.Status.Instances = model.StatePreparing, make([]model.Instance, 2)
		return j
	}
	pulling := Event{Type: EventPulling, Rank: 1, Node: "n2", Pulled: 120e6, PullTotal: 340e6}
	j, _, err := applyEvent(preparing(), 1, pulling, now, lim)
	if err != nil || j == nil {
		t.Fatalf("pulling: %v, %v", j, err)
	}
	if in := j.Status.Instances[1]; !in.Pulling || in.PulledBytes != 120e6 || in.PullBytes != 340e6 || in.Started ||
		j.Status.State != model.StatePreparing || j.Status.Instances[0] != (model.Instance{}) {
		t.Fatalf("after pulling: %s %+v", j.Status.State, j.Status.Instances)
	}
	if again, _, err := applyEvent(j, 1, pulling, now, lim); again != nil || err != nil {
		t.Errorf("the same figures again: %v, %v; want no change", again, err)
	}
	started, _, err := applyEvent(j, 1, Event{Type: EventStarted, Rank: 1, Node: "n2"}, now, lim)
	if err != nil || started.Status.Instances[1] != (model.Instance{Started: true}) {
		t.Fatalf("started: %+v, %v; want the pull forgotten", started.Status.Instances[1], err)
	}
	if late, _, err := applyEvent(started, 1, pulling, now, lim); late != nil || err != nil {
		t.Errorf("a late pull report for a started instance: %v, %v; want no change", late, err)
	}
	if r, _, err := applyEvent(running2(0), 1, pulling, now, lim); r != nil || err != nil {
		t.Errorf("a pull report for a running job: %v, %v; want no change", r, err)
	}
	failed, _, err := applyEvent(j, 1, Event{Type: EventExited, Rank: 1, Node: "n2", ExitCode: 127, Outcome: OutcomeImagePullFailed,
		Message: "manifest unknown"}, now, lim)
	if err != nil || failed.Status.State == model.StatePreparing {
		t.Fatalf("pull failed: %v, %v", failed, err)
	}
	for _, in := range append(failed.Status.Instances, failed.Status.Resizing...) {
		if in.Pulling {
			t.Errorf("an ended instance still pulls: %+v", failed.Status.Instances)
		}
	}
}
