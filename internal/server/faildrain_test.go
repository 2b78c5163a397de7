package server

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/allot-dev/allot/internal/endpoint"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server/servertest"
	"github.com/allot-dev/allot/internal/spec"
)

// replicaFailure is f as a failure of a replica of team's endpoint chat.
func replicaFailure(f NodeFailure) NodeFailure {
	f.source = failureSource(&model.Job{ID: f.Job, Spec: model.JobSpec{Tenant: f.Tenant,
		Labels: map[string]string{endpoint.LabelEndpoint: "chat", model.LabelWorkload: model.WorkloadInference}}})
	return f
}

// TestHostFailures checks the evidence a node's failures make: different
// jobs (the replicas of one endpoint being one), of two tenants, recent,
// after the last resume, not steered to the node and not failing
// elsewhere.
func TestHostFailures(t *testing.T) {
	now := t0.Add(time.Hour)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	f := func(job, tenant string, at time.Time) NodeFailure {
		return NodeFailure{Job: job, Tenant: tenant, Attempt: 1, ExitCode: 1, At: at}
	}
	three := []NodeFailure{f("a", "team", ago(9*time.Minute)), f("b", "rival", ago(5*time.Minute)), f("c", "team", ago(time.Minute))}
	with := func(fs []NodeFailure, g func(*NodeFailure)) []NodeFailure {
		out := append([]NodeFailure(nil), fs...)
		g(&out[1])
		return out
	}
	tests := []struct {
		name    string
		here    []NodeFailure
		other   []string // jobs that failed elsewhere since
		since   time.Time
		jobs    []string
		tenants int
		enough  bool
	}{
		{name: "three jobs of two tenants", here: three, jobs: []string{"a", "b", "c"}, tenants: 2, enough: true},
		{name: "one tenant", here: with(three, func(f *NodeFailure) { f.Tenant = "team" }), jobs: []string{"a", "b", "c"}, tenants: 1},
		{name: "one job failing thrice is one",
			here: []NodeFailure{f("a", "team", ago(3*time.Minute)), f("b", "rival", ago(2*time.Minute)), f("a", "team", ago(time.Minute))},
			jobs: []string{"b", "a"}, tenants: 2},
		{name: "older than the window", here: with(three, func(f *NodeFailure) { f.At = ago(11 * time.Minute) }),
			jobs: []string{"a", "c"}, tenants: 1},
		{name: "before the last resume", here: three, since: ago(2 * time.Minute), jobs: []string{"c"}, tenants: 1},
		{name: "a job naming its nodes", here: with(three, func(f *NodeFailure) { f.steered = true }), jobs: []string{"a", "c"}, tenants: 1},
		{name: "a job that failed elsewhere before", here: with(three, func(f *NodeFailure) { f.elsewhere = true }),
			jobs: []string{"a", "c"}, tenants: 1},
		{name: "a job failing elsewhere since", here: three, other: []string{"b"}, jobs: []string{"a", "c"}, tenants: 1},
		{name: "another job failing elsewhere", here: three, other: []string{"d"},
			jobs: []string{"a", "b", "c"}, tenants: 2, enough: true},
		{name: "replicas of one endpoint are one", here: []NodeFailure{replicaFailure(f("a", "team", ago(3*time.Minute))),
			f("b", "rival", ago(2*time.Minute)), replicaFailure(f("c", "team", ago(time.Minute)))},
			jobs: []string{"b", "c"}, tenants: 2},
		{name: "an endpoint whose replicas fail elsewhere", here: []NodeFailure{f("a", "team", ago(3*time.Minute)),
			f("b", "rival", ago(2*time.Minute)), replicaFailure(f("c", "team", ago(time.Minute)))},
			other: []string{"endpoint team/chat"}, jobs: []string{"a", "b"}, tenants: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := hostFailures(tt.here, tt.since, now, func(job string) bool { return slices.Contains(tt.other, job) })
			var jobs []string
			for _, f := range ev.failures {
				jobs = append(jobs, f.Job)
			}
			if fmt.Sprint(jobs) != fmt.Sprint(tt.jobs) || ev.tenants != tt.tenants {
				t.Errorf("evidence %v of %d tenants, want %v of %d", jobs, ev.tenants, tt.jobs, tt.tenants)
			}
			if got := ev.enough(3); got != tt.enough {
				t.Errorf("enough for 3: %v, want %v", got, tt.enough)
			}
		})
	}
	ev := hostFailures(three, time.Time{}, now, func(string) bool { return false })
	if ev.enough(4) || ev.enough(0) || !ev.enough(2) {
		t.Error("three jobs of two tenants: enough for 2 only among 0, 2 and 4")
	}
	want := "attempts of 3 jobs of 2 tenants failed here within 10m0s, on no other node: a (team) exit 1, b (rival) exit 1, c (team) exit 1; check the host, then allot node resume n1"
	if got := ev.reason("n1"); got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
}

// TestDrainFailingNode runs jobs of two tenants that fail on the one free
// node of the lab: the third drains it, by the server, with the failures
// as its reason; nothing new lands there; a resume gives it back and
// forgets the failures. At most one node of the lab's three is drained so,
// one in 10 minutes, an administrator's drain is never replaced, and 0
// turns it off.
func TestDrainFailingNode(t *testing.T) {
	ctx := context.Background()
	srv, clock, must := labWithNodes(t)
	submit := func(tenant, name string, placement ...string) *model.Job {
		t.Helper()
		specs, err := spec.ParseJobs("test", fmt.Appendf(nil, `{name: %s, tenant: %s, command: [x], resources: {gpus_per_instance: 8}%s}`,
			name, tenant, strings.Join(placement, "")), nil)
		must(err)
		j, err := srv.Submit(ctx, Principal{Tenant: tenant}, specs[0])
		must(err)
		must(srv.Cycle(ctx))
		j = wholeJob(t, srv, j.ID)
		if j.Status.State != model.StatePreparing {
			t.Fatalf("%s is %s %s, want Preparing", name, j.Status.State, j.Status.Reason)
		}
		return j
	}
	// Two long jobs fill two nodes; the third is the one left.
	busy := map[string]bool{}
	for _, name := range []string{"long-1", "long-2"} {
		busy[submit("team", name).Status.Allocations[0].Node] = true
	}
	var bad string
	for _, n := range []string{"h100-01", "h100-02", "h100-03"} {
		if !busy[n] {
			bad = n
		}
	}
	fail := func(tenant, name string, placement ...string) {
		t.Helper()
		j := submit(tenant, name, placement...)
		if n := j.Status.Allocations[0].Node; n != bad {
			t.Fatalf("%s on %s, want %s", name, n, bad)
		}
		_, err := srv.ReportEvent(ctx, admin, j.ID, 1, Event{Type: EventStarted, Rank: 0, Node: bad})
		must(err)
		_, err = srv.ReportEvent(ctx, admin, j.ID, 1, Event{Type: EventExited, Rank: 0, Node: bad, ExitCode: 9, Outcome: OutcomeExited})
		must(err)
		clock.Advance(time.Minute)
	}
	drainOf := func(node string) *NodeDrain {
		rec, _, _ := srv.cache.node(node)
		return rec.Drain
	}
	fail("team", "one")
	fail("rival", "two")
	fail("rival", "steered", ", placement: {exclude_nodes: ["+strings.Join(slices.Collect(maps.Keys(busy)), ",")+"]}")
	if d := drainOf(bad); d != nil {
		t.Fatalf("drained after two jobs and one that named its nodes: %+v", d)
	}
	fail("team", "three")
	d := drainOf(bad)
	if d == nil || d.By != "server" || !strings.Contains(d.Reason, "attempts of 3 jobs of 2 tenants failed here") ||
		!strings.Contains(d.Reason, "(rival) exit 9") || !strings.HasSuffix(d.Reason, "allot node resume "+bad) {
		t.Fatalf("after three jobs of two tenants failed on %s: drain %+v, want one by server naming them", bad, d)
	}
	if got := autoDrained(t, srv, bad); got != 1 {
		t.Errorf("allot_node_auto_drained{node=%s} = %v, want 1", bad, got)
	}
	recs, _, err := srv.Audit(ctx, admin, AuditQuery{})
	must(err)
	if r := recs[len(recs)-1]; r.Actor != "server" || r.Action != ActionNodeDrain || r.Object != "node/"+bad {
		t.Errorf("last audit record %+v, want node.drain of node/%s by server", r, bad)
	}
	// Nothing new lands there.
	specs, err := spec.ParseJobs("test", []byte(`{name: next, tenant: rival, command: [x], resources: {gpus_per_instance: 8}}`), nil)
	must(err)
	next, err := srv.Submit(ctx, Principal{Tenant: "rival"}, specs[0])
	must(err)
	must(srv.Cycle(ctx))
	if j := wholeJob(t, srv, next.ID); j.Status.State != model.StateQueued {
		t.Fatalf("a job submitted after the drain is %s on %v, want Queued", j.Status.State, j.Status.Allocations)
	}

	// A resume gives the node back and forgets its failures.
	_, err = srv.ResumeNode(ctx, admin, bad)
	must(err)
	srv.lastAutoDrain = time.Time{} // as if the last drain were long ago: only the resume stands in the way
	srv.drainIfFailing(ctx, bad)
	if d := drainOf(bad); d != nil {
		t.Fatalf("re-drained on the failures from before its resume: %+v", d)
	}
	srv.lastAutoDrain = clock.Now()
	if got := autoDrained(t, srv, bad); got != 0 {
		t.Errorf("allot_node_auto_drained{node=%s} = %v after resume, want 0", bad, got)
	}

	// The server drains one node in 10 minutes at most, and at most one of
	// the lab's three at a time.
	others := []string{}
	for _, n := range []string{"h100-01", "h100-02", "h100-03"} {
		if n != bad {
			others = append(others, n)
		}
	}
	other, third := others[0], others[1]
	failing := func(node string) {
		t.Helper()
		for i, tenant := range []string{"team", "rival", "team"} {
			srv.noteFailure(node, NodeFailure{Job: fmt.Sprintf("%s-%d-%d", node, clock.Now().Unix(), i), Tenant: tenant, Attempt: 1, ExitCode: 1, At: clock.Now()})
		}
		srv.drainIfFailing(ctx, node)
	}
	failing(other)
	if d := drainOf(other); d != nil {
		t.Fatalf("%s drained less than 10 minutes after %s: %+v", other, bad, d)
	}
	clock.Advance(failureDrainWindow)
	failing(other)
	if d := drainOf(other); d == nil || d.By != "server" {
		t.Fatalf("%s not drained 10 minutes after %s: %+v", other, bad, d)
	}
	clock.Advance(failureDrainWindow)
	failing(bad)
	if d := drainOf(bad); d != nil {
		t.Fatalf("a second node drained with %s drained by the server in a fleet of 3: %+v", other, d)
	}
	_, err = srv.ResumeNode(ctx, admin, other)
	must(err)
	srv.drainIfFailing(ctx, bad)
	if d := drainOf(bad); d == nil || d.By != "server" {
		t.Fatalf("%s not drained once %s was resumed: %+v", bad, other, d)
	}
	_, err = srv.ResumeNode(ctx, admin, bad)
	must(err)

	// An administrator's drain stays as it is and does not count against
	// the bound; 0 turns the drains off.
	_, err = srv.DrainNode(ctx, admin, other, "BIOS update")
	must(err)
	clock.Advance(failureDrainWindow)
	failing(other)
	if d := drainOf(other); d == nil || d.By != "admin" || d.Reason != "BIOS update" {
		t.Fatalf("the administrator's drain became %+v", d)
	}
	srv.cfg.DrainAfterFailures = -1
	failing(third)
	if d := drainOf(third); d != nil {
		t.Fatalf("drained with --drain-after-failures 0: %+v", d)
	}
	srv.cfg.DrainAfterFailures = DefaultDrainAfterFailures
	srv.drainIfFailing(ctx, third)
	if d := drainOf(third); d == nil || d.By != "server" {
		t.Fatalf("%s not drained beside the administrator's drain of %s: %+v", third, other, d)
	}
}

// autoDrained reads allot_node_auto_drained of node from a scrape.
func autoDrained(t *testing.T, srv *Server, node string) float64 {
	t.Helper()
	fams, err := srv.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "allot_node_auto_drained" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "node") == node {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no allot_node_auto_drained series for %s", node)
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// A server refuses a drain threshold it cannot judge: 1 (one tenant's
// job) or more failures than it remembers.
func TestDrainAfterFailuresBounds(t *testing.T) {
	fleet, ten := servertest.Lab(t)
	for _, n := range []int{1, MaxDrainAfterFailures + 1} {
		if _, err := New(context.Background(), Config{Store: servertest.Store(t, ""), Fleet: fleet, Tenancy: ten, DrainAfterFailures: n}); err == nil {
			t.Errorf("DrainAfterFailures %d accepted", n)
		}
	}
}

// A failure records what the drain weighs: whether the job named its nodes
// and whether an earlier attempt failed on another node.
func TestFailureNotesSteeredAndElsewhere(t *testing.T) {
	ctx := context.Background()
	srv, clock, must := labWithNodes(t)
	specs, err := spec.ParseJobs("test", []byte(`{name: flaky, tenant: team, command: [x], resources: {gpus_per_instance: 8}, retry: {max_retries: 1}}
---
{name: pinned, tenant: rival, command: [x], resources: {gpus_per_instance: 8}, placement: {exclude_nodes: [h100-01]}}`), nil)
	must(err)
	var nodes []string
	run := func(id string, attempt int) {
		t.Helper()
		must(srv.Cycle(ctx))
		j := wholeJob(t, srv, id)
		if j.Status.State != model.StatePreparing {
			t.Fatalf("%s is %s %s, want Preparing", id, j.Status.State, j.Status.Reason)
		}
		node := j.Status.Allocations[0].Node
		nodes = append(nodes, node)
		_, err := srv.ReportEvent(ctx, admin, id, attempt, Event{Type: EventStarted, Rank: 0, Node: node})
		must(err)
		_, err = srv.ReportEvent(ctx, admin, id, attempt, Event{Type: EventExited, Rank: 0, Node: node, ExitCode: 1, Outcome: OutcomeExited})
		must(err)
	}
	flaky, err := srv.Submit(ctx, Principal{Tenant: "team"}, specs[0])
	must(err)
	run(flaky.ID, 1)
	clock.Advance(DefaultRetryBackoff)
	run(flaky.ID, 2)
	pinned, err := srv.Submit(ctx, Principal{Tenant: "rival"}, specs[1])
	must(err)
	run(pinned.ID, 1)
	if nodes[0] == nodes[1] {
		t.Fatalf("the retry ran on %s again", nodes[0])
	}
	first, second := srv.failures[nodes[0]][0], srv.failures[nodes[1]][0]
	if first.Job != flaky.ID || first.elsewhere || first.steered || second.Job != flaky.ID || !second.elsewhere || second.steered {
		t.Errorf("flaky's failures: %+v on %s and %+v on %s, want elsewhere only on the second", first, nodes[0], second, nodes[1])
	}
	fs := srv.failures[nodes[2]]
	if last := fs[len(fs)-1]; last.Job != pinned.ID || !last.steered || last.elsewhere {
		t.Errorf("pinned's failure %+v, want steered", last)
	}
	// flaky has ended (its record in the cache is compact): its failure on
	// the first node is still known to have a twin elsewhere.
	srv.beatsMu.Lock()
	defer srv.beatsMu.Unlock()
	if !srv.failedElsewhere(nodes[0])(flaky.ID) {
		t.Errorf("failedElsewhere(%s)(flaky) is false after its second attempt failed on %s", nodes[0], nodes[1])
	}
}

// The memory of which jobs failed where forgets jobs whose failures all
// left the window, once it doubled.
func TestFailedJobsPruned(t *testing.T) {
	srv, clock := agentHarness(t)
	srv.beatsMu.Lock()
	defer srv.beatsMu.Unlock()
	for i := range 1023 {
		srv.noteFailedJob("h100-01", NodeFailure{Job: fmt.Sprintf("old-%d", i), At: clock.Now()})
	}
	if len(srv.failedJobs) != 1023 {
		t.Fatalf("%d jobs remembered, want 1023", len(srv.failedJobs))
	}
	clock.Advance(failureDrainWindow + time.Second)
	srv.noteFailedJob("h100-02", NodeFailure{Job: "new", At: clock.Now()})
	if len(srv.failedJobs) != 1 || srv.failedJobs["new"] == nil || srv.failedJobsPruned != 1 {
		t.Errorf("after the window: %d jobs remembered (pruned to %d), want only new", len(srv.failedJobs), srv.failedJobsPruned)
	}
	if !srv.failedElsewhere("h100-01")("new") || srv.failedElsewhere("h100-02")("new") {
		t.Error("failedElsewhere of new: want true from h100-01, false from h100-02")
	}
}

// TestFailuresSurviveRestart: a server that begins to lead rebuilds the
// failures of nodes from the stored jobs, and their resumes from the node
// records. Two failures noted by one server and a third seen by the next
// drain the node, as three seen by one would; 'node show' lists them; a
// node resumed before the next server starts is not drained again on the
// failures from before its resume.
func TestFailuresSurviveRestart(t *testing.T) {
	ctx := context.Background()
	first, clock, must := labWithNodes(t)
	// A long job fills h100-01 and h100-02, so that every failing job
	// lands on h100-03.
	run := func(srv *Server, tenant, name string) *model.Job {
		t.Helper()
		specs, err := spec.ParseJobs("test", fmt.Appendf(nil, `{name: %s, tenant: %s, command: [x], resources: {gpus_per_instance: 8}}`, name, tenant), nil)
		must(err)
		j, err := srv.Submit(ctx, Principal{Tenant: tenant}, specs[0])
		must(err)
		must(srv.Cycle(ctx))
		return wholeJob(t, srv, j.ID)
	}
	run(first, "team", "long-1")
	run(first, "team", "long-2")
	const bad = "h100-03"
	fail := func(srv *Server, tenant, name string) {
		t.Helper()
		j := run(srv, tenant, name)
		if len(j.Status.Allocations) == 0 || j.Status.Allocations[0].Node != bad {
			t.Fatalf("%s is %s on %v, want it on %s", name, j.Status.State, j.Status.Allocations, bad)
		}
		_, err := srv.ReportEvent(ctx, admin, j.ID, 1, Event{Type: EventStarted, Rank: 0, Node: bad})
		must(err)
		_, err = srv.ReportEvent(ctx, admin, j.ID, 1, Event{Type: EventExited, Rank: 0, Node: bad, ExitCode: 9, Outcome: OutcomeExited})
		must(err)
		clock.Advance(time.Minute)
	}
	next := func() *Server { // the next leader, on the same store
		t.Helper()
		cfg := first.cfg
		cfg.Registry = nil
		srv, err := New(ctx, cfg)
		must(err)
		// Lead until the first cycle is done, then stop the loop: the test
		// drives the server itself.
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- srv.Run(rctx) }()
		for deadline := time.Now().Add(10 * time.Second); !srv.Ready() || !srv.failuresRebuilt.Load(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the next server did not lead")
			}
		}
		stop()
		must(<-done)
		return srv
	}
	drained := func(srv *Server) *NodeDrain {
		rec, _, _ := srv.cache.node(bad)
		return rec.Drain
	}

	fail(first, "team", "one")
	fail(first, "rival", "two")
	second := next()
	d, err := second.Node(bad)
	must(err)
	if len(d.Failures) != 2 || d.Failures[0].Tenant != "team" || d.Failures[1].Tenant != "rival" {
		t.Fatalf("the next server shows the failures %+v, want the two the first noted", d.Failures)
	}
	fail(second, "team", "three")
	if d := drained(second); d == nil || d.By != autoDrainer || !strings.Contains(d.Reason, "attempts of 3 jobs of 2 tenants") {
		t.Fatalf("after two failures before a restart and one after: drain %+v, want one by the server", d)
	}
	if second.lastAutoDrain.IsZero() {
		t.Fatal("the drain is not remembered")
	}
	// Read back again, the stored failures merge with what the server
	// noted itself (here one that no stored job has): none twice, none lost.
	second.noteFailure(bad, NodeFailure{Job: "noted-only", Tenant: "team", Attempt: 1, ExitCode: 2, At: clock.Now()})
	second.rebuildFailures(ctx, clock.Now())
	if d, err := second.Node(bad); err != nil || len(d.Failures) != 4 || d.Failures[3].Job != "noted-only" {
		t.Fatalf("after reading back again: %+v, %v; want the three stored and the one noted, once each", d.Failures, err)
	}
	if third := next(); !third.lastAutoDrain.Equal(second.lastAutoDrain) {
		t.Errorf("the next server's last drain %v, want %v (from the node record)", third.lastAutoDrain, second.lastAutoDrain)
	}

	_, err = second.ResumeNode(ctx, admin, bad)
	must(err)
	third := next()
	third.lastAutoDrain = time.Time{} // only the resume stands in the way
	third.drainIfFailing(ctx, bad)
	if d := drained(third); d != nil {
		t.Fatalf("drained again after a restart on the failures from before its resume: %+v", d)
	}
}
