package server

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/endpoint"
	"github.com/allot-dev/allot/internal/latency"
	"github.com/allot-dev/allot/internal/model"
)

var gatewayToken = Principal{Gateway: true, Token: "gw"}

// reportPort posts, as replica j of endpoint name, the port it serves on.
func (h *harness) reportPort(name string, j *model.Job, port int) {
	h.t.Helper()
	p, _ := h.srv.Authenticate(j.Spec.Env[endpoint.EnvEndpointToken])
	if err := h.srv.ReportEndpointMetrics(context.Background(), p, name, endpoint.Report{Replica: j.ID + ".1", Port: port}); err != nil {
		h.t.Fatalf("report port: %v", err)
	}
}

// routedPair creates endpoint chat with two running replicas that have
// said their ports, and returns them.
func (h *harness) routedPair() []*model.Job {
	h.t.Helper()
	h.createEndpoint(copilot, strings.Replace(chatEndpoint, "min_replicas: 1", "min_replicas: 2", 1))
	h.cycle()
	jobs := h.replicaJobsOf("chat")
	for i, j := range jobs {
		h.reportPort("chat", j, 9000+i)
	}
	return jobs
}

func (h *harness) routes() endpoint.RouteTable {
	h.t.Helper()
	t, err := h.srv.Routes(context.Background(), gatewayToken, "", 0)
	if err != nil {
		h.t.Fatal(err)
	}
	return t
}

func routeOf(t endpoint.RouteTable, name string) *endpoint.Route {
	for i := range t.Routes {
		if t.Routes[i].Endpoint == name {
			return &t.Routes[i]
		}
	}
	return nil
}

// gatewayWord reports, as gateway gw, every replica of the endpoint with
// 10 requests of 20 ms, routed unless listed in gone, with inFlight[job]
// requests in flight.
func (h *harness) gatewayWord(gw string, jobs []*model.Job, gone map[string]bool, inFlight map[string]int) {
	h.t.Helper()
	er := endpoint.GatewayEndpointReport{Endpoint: "chat"}
	for _, j := range jobs {
		var lat latency.Histogram
		for range 10 {
			lat.Add(20 * time.Millisecond)
		}
		er.Replicas = append(er.Replicas, endpoint.GatewayReplicaReport{Job: j.ID, Requests: 10, InFlight: inFlight[j.ID], Routed: !gone[j.ID],
			Ready: true, Latency: lat, FirstByte: lat})
	}
	if err := h.srv.ReportGateway(context.Background(), gatewayToken, endpoint.GatewayReport{Gateway: gw, Endpoints: []endpoint.GatewayEndpointReport{er}}); err != nil {
		h.t.Fatal(err)
	}
}

// A replica is routed once it runs and has said its port, at its node's
// address; a gateway's watch wakes when that happens; only a gateway
// token or the admin reads the routes, and a tenant endpoint's route
// carries its tenant's token hashes.
func TestRoutes(t *testing.T) {
	h := newHarness(t)
	h.createEndpoint(copilot, strings.Replace(chatEndpoint, "min_replicas: 1", "min_replicas: 2", 1))
	h.cycle()
	r := routeOf(h.routes(), "chat")
	if r == nil || len(r.Replicas) != 0 || r.Access != model.AccessTenant || r.Readiness.Path != "/healthz" {
		t.Fatalf("route before any port: %+v", r)
	}
	tok, err := h.srv.CreateToken(context.Background(), "copilot")
	if err != nil {
		t.Fatal(err)
	}
	before := h.routes()
	if r := routeOf(before, "chat"); len(r.Callers) == 0 || !slices.Contains(r.Callers, HashToken(tok)) {
		t.Fatalf("callers %v lack the hash of copilot's new token", r.Callers)
	}
	jobs := h.replicaJobsOf("chat")
	woke := make(chan endpoint.RouteTable, 1)
	go func() {
		t, _ := h.srv.Routes(context.Background(), gatewayToken, before.Version, 10*time.Second)
		woke <- t
	}()
	time.Sleep(50 * time.Millisecond)
	h.reportPort("chat", jobs[0], 9001)
	select {
	case t2 := <-woke:
		r := routeOf(t2, "chat")
		if t2.Version == before.Version || len(r.Replicas) != 1 || r.Replicas[0].Job != jobs[0].ID ||
			!strings.HasSuffix(r.Replicas[0].Address, ":9001") {
			t.Fatalf("after a port: version %s → %s, route %+v", before.Version, t2.Version, r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not wake when a replica said its port")
	}
	if _, err := h.srv.Routes(context.Background(), copilot, "", 0); !isCode(err, CodeForbidden) {
		t.Fatalf("a tenant reads the routes: %v, want Forbidden", err)
	}
	if err := h.srv.ReportGateway(context.Background(), copilot, endpoint.GatewayReport{Gateway: "x"}); !isCode(err, CodeForbidden) {
		t.Fatalf("a tenant reports as a gateway: %v, want Forbidden", err)
	}
	if err := h.srv.ReportEndpointMetrics(context.Background(), copilot, "chat", endpoint.Report{Port: 70000}); !isCode(err, CodeInvalidSpec) ||
		!strings.Contains(err.Error(), "port") {
		t.Fatalf("port 70000: %v, want InvalidSpec naming port", err)
	}
}

// A scale-in takes the replica out of the route first and stops it only
// once every gateway says it neither routes to it nor has a request in
// flight on it; what gateways measured shows in the endpoint and feeds
// the autoscaler's sample.
func TestScaleInDrainsThroughGateways(t *testing.T) {
	h := newHarness(t)
	jobs := h.routedPair()
	h.clock.Advance(time.Second)
	h.gatewayWord("gw-1", jobs, nil, nil)
	h.gatewayWord("gw-2", jobs, nil, nil)
	h.clock.Advance(2 * time.Second)
	st := h.endpointStatus("chat")
	if g := st.Gateway; g == nil || len(g.Replicas) != 2 || g.Latency.P95 < 20*time.Millisecond || g.Latency.P95 > 22*time.Millisecond {
		t.Fatalf("gateway metrics %+v", st.Gateway)
	}
	h.reconcile()
	if m := h.endpointStatus("chat").Metrics; m == nil || m.RequestsPerSec == 0 || m.P95Ms < 20 || m.P50Ms < 20 {
		t.Fatalf("the autoscaler's sample lacks the gateways' measurement: %+v", m)
	}

	if _, err := h.srv.ScaleEndpoint(context.Background(), copilot, "chat", 1, 1); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	r := routeOf(h.routes(), "chat")
	if len(r.Replicas) != 1 {
		t.Fatalf("route after the scale-in: %+v, want one replica", r.Replicas)
	}
	var gone *model.Job
	for _, j := range jobs {
		if j.ID != r.Replicas[0].Job {
			gone = j
		}
	}
	if s := h.job(gone.ID).Status.State; s != model.StateRunning {
		t.Fatalf("the draining replica is %s before any gateway let it go", s)
	}
	h.clock.Advance(time.Second)
	h.gatewayWord("gw-1", jobs, map[string]bool{gone.ID: true}, nil)
	h.gatewayWord("gw-2", jobs, map[string]bool{gone.ID: true}, map[string]int{gone.ID: 1})
	h.reconcile()
	if s := h.job(gone.ID).Status.State; s != model.StateRunning {
		t.Fatalf("the draining replica is %s while a gateway has a request in flight on it", s)
	}
	if st := h.endpointStatus("chat"); st.Desired != 1 {
		t.Fatalf("desired %d while draining: the draining replica was counted back", st.Desired)
	}
	h.clock.Advance(time.Second)
	h.gatewayWord("gw-2", jobs[:0], nil, nil) // gw-2 is done with it: it no longer lists it
	h.reconcile()
	if s := h.job(gone.ID).Status.State; s != model.StateCanceled {
		t.Fatalf("the drained replica is %s, want Canceled", s)
	}
}

// Without word from gateways a replica stops by the bound: a gateway
// that reported once and went silent is not waited for, one that still
// reports a request in flight is waited for at most DrainTimeout.
func TestDrainIsBounded(t *testing.T) {
	h := newHarness(t)
	jobs := h.routedPair()
	h.gatewayWord("gw-1", jobs, nil, nil)
	if _, err := h.srv.ScaleEndpoint(context.Background(), copilot, "chat", 1, 1); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	live := func() int {
		n := 0
		for _, j := range jobs {
			if !h.job(j.ID).Status.State.Terminal() {
				n++
			}
		}
		return n
	}
	for range 10 {
		h.clock.Advance(time.Second)
		h.gatewayWord("gw-1", jobs, nil, map[string]int{jobs[0].ID: 1, jobs[1].ID: 1})
		h.reconcile()
	}
	if live() != 2 {
		t.Fatalf("%d replicas live after 10 s of a gateway with requests in flight, want 2", live())
	}
	for range 25 {
		h.clock.Advance(time.Second)
		h.gatewayWord("gw-1", jobs, nil, map[string]int{jobs[0].ID: 1, jobs[1].ID: 1})
		h.reconcile()
	}
	if live() != 1 {
		t.Fatalf("%d replicas live %s after the drain began, want 1", live(), 35*time.Second)
	}
}

// job why says why an inference replica holds an InfiniBand node, and
// says nothing of the kind for one off InfiniBand or for another job.
func TestWhyInferenceOnInfiniBand(t *testing.T) {
	h := newHarness(t)
	w := h.srv.world()
	var ib, eth string
	for _, n := range w.fleet.Nodes {
		reg, _ := w.fleet.Region(n.Region)
		for _, c := range reg.Clusters {
			if c.Name == n.Cluster && c.Fabric == model.FabricInfiniBand && ib == "" {
				ib = n.Name
			}
			if c.Name == n.Cluster && c.Fabric == model.FabricEthernet && eth == "" {
				eth = n.Name
			}
		}
	}
	job := func(node string, labels map[string]string) *model.Job {
		return &model.Job{Spec: model.JobSpec{Labels: labels},
			Status: model.JobStatus{State: model.StateRunning, Allocations: []model.Allocation{{Node: node}}}}
	}
	inference := map[string]string{model.LabelWorkload: model.WorkloadInference}
	if got := explainInferencePlacement(w, job(ib, inference)); !strings.Contains(got, "keep off InfiniBand training nodes") || !strings.Contains(got, ib) {
		t.Errorf("replica on %s: %q", ib, got)
	}
	if got := explainInferencePlacement(w, job(eth, inference)); got != "" {
		t.Errorf("replica on %s (Ethernet): %q, want nothing", eth, got)
	}
	if got := explainInferencePlacement(w, job(ib, nil)); got != "" {
		t.Errorf("training job on %s: %q, want nothing", ib, got)
	}
}

// Callers that reach a replica directly, past an idle gateway, still
// count: the sample's rate is the replicas' own when the gateways carried
// less than half of it.
func TestLoadPastTheGatewayCounts(t *testing.T) {
	h := newHarness(t)
	jobs := h.routedPair()
	h.clock.Advance(time.Second)
	er := endpoint.GatewayEndpointReport{Endpoint: "chat"}
	for _, j := range jobs {
		er.Replicas = append(er.Replicas, endpoint.GatewayReplicaReport{Job: j.ID, Routed: true, Ready: true})
	}
	if err := h.srv.ReportGateway(context.Background(), gatewayToken, endpoint.GatewayReport{Gateway: "gw", Endpoints: []endpoint.GatewayEndpointReport{er}}); err != nil {
		t.Fatal(err)
	}
	h.report("chat", 60)
	h.reconcile()
	if m := h.endpointStatus("chat").Metrics; m == nil || m.RequestsPerSec != 60 {
		t.Fatalf("sample %+v, want the replicas' 60 req/s though the gateway carried none", m)
	}
}
