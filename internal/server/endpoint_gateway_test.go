package server

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/endpoint"
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
