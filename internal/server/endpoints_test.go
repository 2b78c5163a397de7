package server

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/endpoint"
	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/spec"
)

// chatEndpoint is an endpoint of T4 quarters whose replica sustains 15
// requests/s at its SLO, tuned to scale in within seconds.
const chatEndpoint = `{name: chat, tenant: copilot, model: llama, resources: {gpu_milli: 250, gpu_models: [T4]},
  min_replicas: 1, max_replicas: 4, slo: {p95_ms: 150}, throughput: {T4: 15},
  autoscale: {scale_in_after: 10s, scale_in_interval: 2s, lead_time: 10s, peak_window: 10s}}`

func (h *harness) createEndpoint(p Principal, doc string) *endpoint.Endpoint {
	h.t.Helper()
	e, err := h.srv.CreateEndpoint(context.Background(), p, parseEndpoint(h.t, doc))
	if err != nil {
		h.t.Fatalf("create endpoint: %v", err)
	}
	return e
}

func parseEndpoint(t *testing.T, doc string) model.EndpointSpec {
	t.Helper()
	specs, err := spec.ParseEndpoints("test", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return specs[0]
}

func (h *harness) reconcile() {
	h.t.Helper()
	if err := h.srv.ReconcileEndpoints(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) endpointStatus(name string) endpoint.Status {
	h.t.Helper()
	st, err := h.srv.Endpoint(context.Background(), admin, name)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// replicaJobs returns the endpoint's live replica jobs.
func (h *harness) replicaJobsOf(name string) []*model.Job {
	h.t.Helper()
	var out []*model.Job
	for _, r := range h.endpointStatus(name).Replicas {
		out = append(out, h.job(r.Job))
	}
	return out
}

// report posts, as the endpoint's replicas, rps from the first replica and
// nothing from the others.
func (h *harness) report(name string, rps float64) {
	h.t.Helper()
	for i, j := range h.replicaJobsOf(name) {
		p, ok := h.srv.Authenticate(j.Spec.Env[endpoint.EnvEndpointToken])
		if !ok {
			h.t.Fatalf("the token in replica %s's env does not authenticate", j.ID)
		}
		r := endpoint.Report{P95Ms: 21, Replica: j.ID + ".1"}
		if i == 0 {
			r.RequestsPerSec, r.Utilisation = rps, rps/400
		}
		if err := h.srv.ReportEndpointMetrics(context.Background(), p, name, r); err != nil {
			h.t.Fatalf("report: %v", err)
		}
	}
}

func kinds(evs []endpoint.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

func TestEndpointCreateStartsMinReplicas(t *testing.T) {
	h := newHarnessWith(t, func(c *Config) { c.URL = "http://allot.example:8080" })
	e := h.createEndpoint(copilot, strings.Replace(chatEndpoint, "min_replicas: 1", "min_replicas: 2", 1))
	if e.Desired != 2 || len(e.Events) != 1 || e.Events[0].Kind != endpoint.EventCreated || e.Events[0].To != 2 {
		t.Fatalf("created: desired %d, events %+v", e.Desired, e.Events)
	}
	reps := h.replicaJobsOf("chat")
	if len(reps) != 2 {
		t.Fatalf("%d replicas, want min_replicas 2", len(reps))
	}
	j := reps[0]
	tok := j.Spec.Env[endpoint.EnvEndpointToken]
	if j.Spec.Name != "chat-replica" || j.Spec.Tenant != "copilot" || j.Spec.Resources.InstanceCount != 1 ||
		j.Spec.Resources.GPUMilli != 250 || !slices.Equal(j.Spec.Command, model.DefaultEndpointCommand) ||
		j.Spec.Labels[endpoint.LabelEndpoint] != "chat" || j.Spec.Labels[model.LabelWorkload] != model.WorkloadInference ||
		j.Spec.Env[endpoint.EnvEndpoint] != "chat" || tok == "" ||
		j.Spec.Env[endpoint.EnvEndpointMetricsURL] != "http://allot.example:8080/v1/endpoints/chat/metrics" {
		t.Fatalf("replica spec: %+v", j.Spec)
	}
	if p, ok := h.srv.Authenticate(tok); !ok || p != (Principal{Endpoint: "chat"}) {
		t.Fatalf("endpoint token: %+v %v", p, ok)
	}
	h.cycle()
	for _, r := range h.endpointStatus("chat").Replicas {
		if r.State != model.StateRunning || r.Node == "" || r.GPUModel != "T4" {
			t.Fatalf("replica after a cycle: %+v", r)
		}
	}
	// A reconcile without metrics holds: nothing changes, nothing is written.
	kv, _ := h.st.Get(context.Background(), prefixEndpoints+"chat")
	h.reconcile()
	after, _ := h.st.Get(context.Background(), prefixEndpoints+"chat")
	if after.ModRev != kv.ModRev || len(h.replicaJobsOf("chat")) != 2 {
		t.Fatalf("a reconcile without metrics changed the endpoint (modrev %d → %d)", kv.ModRev, after.ModRev)
	}
	if _, err := h.srv.CreateEndpoint(context.Background(), copilot, parseEndpoint(t, chatEndpoint)); !isCode(err, CodeConflict) ||
		!strings.Contains(err.Error(), "'allot endpoint update' changes it (its SLO") {
		t.Fatalf("a second endpoint named chat: %v, want Conflict saying what changes an endpoint", err)
	}
	bad := parseEndpoint(t, chatEndpoint)
	bad.Name = "no/slash"
	if _, err := h.srv.CreateEndpoint(context.Background(), copilot, bad); !isCode(err, CodeInvalidSpec) {
		t.Fatalf("a bad name: %v, want InvalidSpec", err)
	}
	nowhere := parseEndpoint(t, strings.ReplaceAll(chatEndpoint, "T4", "Z999"))
	nowhere.Name = "nowhere"
	if _, err := h.srv.CreateEndpoint(context.Background(), copilot, nowhere); !isCode(err, CodeSkuNotAvailable) {
		t.Fatalf("a GPU model no SKU has: %v, want SkuNotAvailable", err)
	}
}

// TestEndpointScalesOutAndIn drives the autoscaler through the server:
// load beyond one replica adds replicas at once; once it stops, replicas
// go one at a time, no sooner than scale_in_after and at most one per
// scale_in_interval, down to min_replicas.
func TestEndpointScalesOutAndIn(t *testing.T) {
	h := newHarness(t)
	h.createEndpoint(copilot, chatEndpoint)
	h.cycle()
	for range 3 { // 60 req/s for 6 s: four replicas of 15 req/s are needed, and allowed
		h.clock.Advance(2 * time.Second)
		h.report("chat", 60)
		h.reconcile()
		h.cycle()
	}
	st := h.endpointStatus("chat")
	if st.Desired != 4 || len(st.Replicas) != 4 || st.Metrics == nil || st.Metrics.RequestsPerSec != 60 {
		t.Fatalf("under load: desired %d, %d replicas, metrics %+v; decision %s", st.Desired, len(st.Replicas), st.Metrics, st.Decision)
	}
	if k := kinds(st.Events); !slices.Equal(k, []string{endpoint.EventCreated, "ScaleOut"}) || st.Events[1].From != 1 || st.Events[1].To != 4 ||
		!strings.Contains(st.Events[1].Reason, "capped at max_replicas 4") {
		t.Fatalf("events %+v", st.Events)
	}
	for _, r := range st.Replicas {
		if r.State != model.StateRunning {
			t.Fatalf("replica %s is %s", r.Job, r.State)
		}
	}

	// The load stops.
	stop := h.clock.Now()
	var steps []int
	var firstIn time.Time
	for range 30 {
		h.clock.Advance(2 * time.Second)
		h.report("chat", 0)
		h.reconcile()
		h.cycle()
		st = h.endpointStatus("chat")
		if n := len(steps); n == 0 || steps[n-1] != st.Desired {
			steps = append(steps, st.Desired)
			if st.Desired < 4 && firstIn.IsZero() {
				firstIn = h.clock.Now()
			}
		}
		if len(st.Replicas) != st.Desired {
			t.Fatalf("desired %d, %d live replicas", st.Desired, len(st.Replicas))
		}
	}
	if !slices.Equal(steps, []int{4, 3, 2, 1}) {
		t.Fatalf("desired went %v after the load stopped, want 4 3 2 1", steps)
	}
	// The peak ages out of the 10 s peak window, then 10 s of stabilisation.
	if d := firstIn.Sub(stop); d < 20*time.Second || d > 26*time.Second {
		t.Fatalf("first scale-in %s after the load stopped, want 20s to 26s", d)
	}
	var ins []endpoint.Event
	for _, ev := range st.Events {
		if ev.Kind == "ScaleIn" {
			ins = append(ins, ev)
		}
	}
	if len(ins) != 3 || ins[2].To != 1 || ins[1].At.Sub(ins[0].At) < 2*time.Second || !strings.Contains(ins[0].Reason, "scaling in from 4 to 3") {
		t.Fatalf("scale-in events %+v", ins)
	}
	canceled := mustJobs(t, h.srv, admin, JobFilter{State: model.StateCanceled})
	if len(canceled) != 3 || !strings.Contains(canceled[0].Status.Detail, "endpoint:chat") {
		t.Fatalf("%d canceled replicas (%+v), want 3 stopped by endpoint:chat", len(canceled), canceled)
	}
	// The record survives a restart with its state and events.
	before := *st.Endpoint
	h.restart()
	after := h.endpointStatus("chat")
	if after.Desired != 1 || after.State != before.State || !slices.Equal(kinds(after.Events), kinds(before.Events)) ||
		after.State.LastScaleIn.IsZero() || len(after.Replicas) != 1 {
		t.Fatalf("after a restart: %+v, before: %+v", *after.Endpoint, before)
	}
}

// TestEndpointReplacesFailedReplica: a replica whose process fails (no
// retries) ends Failed, and the first reconcile once the back-off has
// passed submits another.
func TestEndpointReplacesFailedReplica(t *testing.T) {
	ctx := context.Background()
	srv, clock := agentHarness(t)
	team := Principal{Tenant: "team"}
	e, err := srv.CreateEndpoint(ctx, team, parseEndpoint(t, `{name: gen, tenant: team, model: m, command: [serve],
		resources: {gpu_models: [H100]}, slo: {p95_ms: 100}, throughput: {H100: 50}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.RegisterNode(ctx, "h100-01", h100s(8), "10.0.0.1"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ := srv.Endpoint(ctx, team, "gen")
	if len(st.Replicas) != 1 || st.Replicas[0].State != model.StatePreparing {
		t.Fatalf("replicas %+v", st.Replicas)
	}
	first := st.Replicas[0].Job
	for _, ev := range []Event{{Type: EventStarted, Node: "h100-01"}, {Type: EventExited, Node: "h100-01", ExitCode: 3, Outcome: OutcomeExited}} {
		clock.Advance(time.Second)
		if _, err := srv.ReportEvent(ctx, Principal{Admin: true}, first, 1, ev); err != nil {
			t.Fatal(err)
		}
	}
	if j, _ := srv.Job(t.Context(), team, first); j.Status.State != model.StateFailed {
		t.Fatalf("replica %s is %s, want Failed", first, j.Status.State)
	}
	if err := srv.ReconcileEndpoints(ctx); err != nil {
		t.Fatal(err)
	}
	// The failure starts the back-off: no replica for 10 s.
	st, _ = srv.Endpoint(ctx, team, "gen")
	if last := st.Events[len(st.Events)-1]; len(st.Replicas) != 0 || st.CrashLoop.Failures != 1 || last.Kind != endpoint.EventBackOff {
		t.Fatalf("right after the failure: replicas %+v, back-off %+v, last event %+v", st.Replicas, st.CrashLoop, last)
	}
	clock.Advance(10 * time.Second) // the first back-off
	if err := srv.ReconcileEndpoints(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ = srv.Endpoint(ctx, team, "gen")
	if len(st.Replicas) != 1 || st.Replicas[0].Job == first || st.Desired != e.Desired {
		t.Fatalf("after the failure: replicas %+v, desired %d", st.Replicas, st.Desired)
	}
	last := st.Events[len(st.Events)-1]
	if last.Kind != endpoint.EventReplicaReplaced || !strings.Contains(last.Reason, first+" ended Failed") {
		t.Fatalf("last event %+v", last)
	}
}

func TestEndpointScaleAndDelete(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.createEndpoint(copilot, chatEndpoint)
	e, err := h.srv.ScaleEndpoint(ctx, copilot, "chat", 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	if last := e.Events[len(e.Events)-1]; e.Desired != 3 || last.Kind != endpoint.EventScaled || last.From != 1 || last.To != 3 {
		t.Fatalf("scaled: desired %d, events %+v", e.Desired, e.Events)
	}
	if _, err := h.srv.ScaleEndpoint(ctx, copilot, "chat", 4, 2); !isCode(err, CodeInvalidSpec) {
		t.Fatalf("min above max: %v", err)
	}
	if _, err := h.srv.ScaleEndpoint(ctx, copilot, "chat", 0, 2); !isCode(err, CodeInvalidSpec) {
		t.Fatalf("min 0: %v", err)
	}
	h.reconcile()
	h.cycle()
	reps := h.replicaJobsOf("chat")
	if len(reps) != 3 {
		t.Fatalf("%d replicas after scaling to min 3", len(reps))
	}
	tok := reps[0].Spec.Env[endpoint.EnvEndpointToken]
	if err := h.srv.DeleteEndpoint(ctx, copilot, "chat"); err != nil {
		t.Fatal(err)
	}
	for _, j := range reps {
		if s := h.job(j.ID).Status.State; s != model.StateCanceled {
			t.Fatalf("replica %s is %s after the delete", j.ID, s)
		}
	}
	if _, ok := h.srv.Authenticate(tok); ok {
		t.Fatal("the endpoint's token still authenticates")
	}
	if _, err := h.srv.Endpoint(ctx, copilot, "chat"); !isCode(err, CodeNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	h.reconcile()
	if n := len(mustJobs(t, h.srv, admin, JobFilter{State: model.StateQueued})) + len(mustJobs(t, h.srv, admin, JobFilter{State: model.StateRunning})); n != 0 {
		t.Fatalf("%d replicas live after the delete and a reconcile", n)
	}
	// The name is free again; the old replicas are not the new endpoint's.
	h.createEndpoint(copilot, chatEndpoint)
	if n := len(h.replicaJobsOf("chat")); n != 1 {
		t.Fatalf("the new endpoint has %d replicas", n)
	}
}

// TestEndpointScopes: a tenant sees and changes only its own endpoints;
// an endpoint's token only reports its own endpoint's metrics; another
// tenant's job labelled as a replica is not taken for one.
func TestEndpointScopes(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	acme := Principal{Tenant: "acme"}
	h.createEndpoint(copilot, chatEndpoint)
	h.createEndpoint(acme, strings.NewReplacer("name: chat", "name: support", "tenant: copilot", "tenant: acme").Replace(chatEndpoint))
	if _, err := h.srv.CreateEndpoint(ctx, acme, parseEndpoint(t, strings.Replace(chatEndpoint, "name: chat", "name: x", 1))); !isCode(err, CodeForbidden) {
		t.Fatalf("acme creating for copilot: %v", err)
	}
	if _, err := h.srv.Endpoint(ctx, acme, "chat"); !isCode(err, CodeForbidden) {
		t.Fatalf("acme reading chat: %v", err)
	}
	if _, err := h.srv.ScaleEndpoint(ctx, acme, "chat", 1, 1); !isCode(err, CodeForbidden) {
		t.Fatalf("acme scaling chat: %v", err)
	}
	if err := h.srv.DeleteEndpoint(ctx, acme, "chat"); !isCode(err, CodeForbidden) {
		t.Fatalf("acme deleting chat: %v", err)
	}
	if err := h.srv.ReportEndpointMetrics(ctx, acme, "chat", endpoint.Report{RequestsPerSec: 1000}); !isCode(err, CodeForbidden) {
		t.Fatalf("acme reporting for chat: %v", err)
	}
	for _, tc := range []struct {
		p    Principal
		want []string
	}{{copilot, []string{"chat"}}, {acme, []string{"support"}}, {admin, []string{"chat", "support"}}, {Principal{Endpoint: "chat"}, nil}} {
		eps, err := h.srv.Endpoints(ctx, tc.p)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range eps {
			got = append(got, e.Spec.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s lists %v, want %v", tc.p.Name(), got, tc.want)
		}
	}

	chatTok, _ := h.srv.Authenticate(h.replicaJobsOf("chat")[0].Spec.Env[endpoint.EnvEndpointToken])
	if err := h.srv.ReportEndpointMetrics(ctx, chatTok, "chat", endpoint.Report{RequestsPerSec: 5, Replica: "r"}); err != nil {
		t.Fatalf("chat's token reporting for chat: %v", err)
	}
	for _, name := range []string{"support", "nope"} {
		if err := h.srv.ReportEndpointMetrics(ctx, chatTok, name, endpoint.Report{RequestsPerSec: 5}); !isCode(err, CodeForbidden) {
			t.Fatalf("chat's token reporting for %s: %v, want Forbidden", name, err)
		}
	}
	if _, err := h.srv.Endpoint(ctx, chatTok, "chat"); !isCode(err, CodeForbidden) {
		t.Fatalf("chat's token reading chat: %v", err)
	}
	if err := h.srv.DeleteEndpoint(ctx, chatTok, "chat"); !isCode(err, CodeForbidden) {
		t.Fatalf("chat's token deleting chat: %v", err)
	}
	if _, err := h.srv.Submit(ctx, chatTok, parseJob(t, chat)); !isCode(err, CodeForbidden) {
		t.Fatalf("chat's token submitting a job: %v", err)
	}
	for _, r := range []endpoint.Report{{RequestsPerSec: -1}, {P95Ms: 1e12}, {Utilisation: 1.5}, {Replica: "a\x1bb"}} {
		if err := h.srv.ReportEndpointMetrics(ctx, chatTok, "chat", r); !isCode(err, CodeInvalidSpec) {
			t.Errorf("report %+v: %v, want InvalidSpec", r, err)
		}
	}

	// acme labels a job of its own as a replica of chat: chat ignores it.
	h.submit(acme, `{name: fake, tenant: acme, labels: {endpoint: chat, workload: inference}, resources: {gpu_milli: 250, gpu_models: [T4]}}`)
	h.reconcile()
	if st := h.endpointStatus("chat"); len(st.Replicas) != 1 {
		t.Fatalf("chat counts %d replicas: %+v", len(st.Replicas), st.Replicas)
	}
}

func parseJob(t *testing.T, doc string) model.JobSpec {
	t.Helper()
	specs, err := spec.ParseJobs("test", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	return specs[0]
}
