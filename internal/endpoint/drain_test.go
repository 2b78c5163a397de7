package endpoint

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/allot-dev/allot/internal/latency"
	"github.com/allot-dev/allot/internal/model"
)

// gatewayLab is a Book on a fakeHost with endpoint chat, whose two
// replicas run and have said their ports.
type gatewayLab struct {
	t    *testing.T
	h    *fakeHost
	b    *Book
	reg  *prometheus.Registry // the Book's series
	jobs []*model.Job
}

func newGatewayLab(t *testing.T) *gatewayLab {
	t.Helper()
	l := &gatewayLab{t: t, h: newFakeHost(t), reg: prometheus.NewRegistry()}
	l.b = New(l.h, Config{Registry: l.reg})
	if _, err := l.b.Create(context.Background(), tenant("copilot"), parseEndpoint(t, strings.Replace(chatEndpoint, "min_replicas: 1", "min_replicas: 2", 1))); err != nil {
		t.Fatal(err)
	}
	l.h.start()
	l.jobs, _ = l.h.live()
	for i, j := range l.jobs {
		if err := l.b.Report(context.Background(), tenant("copilot"), false, "chat", Report{Replica: j.ID + ".1", Port: 9000 + i}); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func (l *gatewayLab) reconcile() {
	l.t.Helper()
	if err := l.b.Reconcile(context.Background()); err != nil {
		l.t.Fatal(err)
	}
}

func (l *gatewayLab) advance(d time.Duration) { l.h.now = l.h.now.Add(d) }

func (l *gatewayLab) route() *Route {
	l.t.Helper()
	t, err := l.b.Routes(context.Background(), "", 0)
	if err != nil {
		l.t.Fatal(err)
	}
	for i := range t.Routes {
		if t.Routes[i].Endpoint == "chat" {
			return &t.Routes[i]
		}
	}
	l.t.Fatal("no route of chat")
	return nil
}

// word reports, as gateway gw, each of jobs with 10 requests of 20 ms,
// routed unless listed in gone, with inFlight[job] requests in flight.
func (l *gatewayLab) word(gw string, jobs []*model.Job, gone map[string]bool, inFlight map[string]int) {
	l.t.Helper()
	er := GatewayEndpointReport{Endpoint: "chat"}
	for _, j := range jobs {
		var lat latency.Histogram
		for range 10 {
			lat.Add(20 * time.Millisecond)
		}
		er.Replicas = append(er.Replicas, GatewayReplicaReport{Job: j.ID, Requests: 10, InFlight: inFlight[j.ID], Routed: !gone[j.ID],
			Ready: true, Latency: lat, FirstByte: lat})
	}
	if err := l.b.ReportGateway(context.Background(), GatewayReport{Gateway: gw, Endpoints: []GatewayEndpointReport{er}}); err != nil {
		l.t.Fatal(err)
	}
}

func (l *gatewayLab) status() Status {
	l.t.Helper()
	st, err := l.b.Get(context.Background(), tenant("copilot"), "chat")
	if err != nil {
		l.t.Fatal(err)
	}
	return st
}

func (l *gatewayLab) scale(minReplicas, maxReplicas int) {
	l.t.Helper()
	if _, err := l.b.Scale(context.Background(), tenant("copilot"), "chat", minReplicas, maxReplicas); err != nil {
		l.t.Fatal(err)
	}
}

// A scale-in takes the replica out of the route first and stops it only
// once every gateway says it neither routes to it nor has a request in
// flight on it; what gateways measured shows in the endpoint and feeds
// the autoscaler's sample.
func TestScaleInDrainsThroughGateways(t *testing.T) {
	l := newGatewayLab(t)
	jobs := l.jobs
	if r := l.route(); len(r.Replicas) != 2 || r.Replicas[0].Address != "t4-"+jobs[0].ID+":9000" {
		t.Fatalf("route before the scale-in: %+v", r.Replicas)
	}
	l.advance(time.Second)
	l.word("gw-1", jobs, nil, nil)
	l.word("gw-2", jobs, nil, nil)
	l.advance(2 * time.Second)
	if g := l.status().Gateway; g == nil || len(g.Replicas) != 2 || g.Latency.P95 < 20*time.Millisecond || g.Latency.P95 > 22*time.Millisecond {
		t.Fatalf("gateway metrics %+v", g)
	}
	l.reconcile()
	if m := l.status().Metrics; m == nil || m.RequestsPerSec == 0 || m.P95Ms < 20 || m.P50Ms < 20 {
		t.Fatalf("the autoscaler's sample lacks the gateways' measurement: %+v", m)
	}

	l.scale(1, 1)
	l.reconcile()
	r := l.route()
	if len(r.Replicas) != 1 {
		t.Fatalf("route after the scale-in: %+v, want one replica", r.Replicas)
	}
	var gone *model.Job
	for _, j := range jobs {
		if j.ID != r.Replicas[0].Job {
			gone = j
		}
	}
	if s := gone.Status.State; s != model.StateRunning {
		t.Fatalf("the draining replica is %s before any gateway let it go", s)
	}
	l.advance(time.Second)
	l.word("gw-1", jobs, map[string]bool{gone.ID: true}, nil)
	l.word("gw-2", jobs, map[string]bool{gone.ID: true}, map[string]int{gone.ID: 1})
	l.reconcile()
	if s := gone.Status.State; s != model.StateRunning {
		t.Fatalf("the draining replica is %s while a gateway has a request in flight on it", s)
	}
	if st := l.status(); st.Desired != 1 {
		t.Fatalf("desired %d while draining: the draining replica was counted back", st.Desired)
	}
	l.advance(time.Second)
	l.word("gw-2", jobs[:0], nil, nil) // gw-2 is done with it: it no longer lists it
	l.reconcile()
	if s := gone.Status.State; s != model.StateCanceled {
		t.Fatalf("the drained replica is %s, want Canceled", s)
	}
}

// Without word from gateways a replica stops by the bound: a gateway
// that reported once and went silent is not waited for, one that still
// reports a request in flight is waited for at most DrainTimeout.
func TestDrainIsBounded(t *testing.T) {
	l := newGatewayLab(t)
	jobs := l.jobs
	l.word("gw-1", jobs, nil, nil)
	l.scale(1, 1)
	l.reconcile()
	live := func() int {
		n := 0
		for _, j := range jobs {
			if !j.Status.State.Terminal() {
				n++
			}
		}
		return n
	}
	for range 10 {
		l.advance(time.Second)
		l.word("gw-1", jobs, nil, map[string]int{jobs[0].ID: 1, jobs[1].ID: 1})
		l.reconcile()
	}
	if live() != 2 {
		t.Fatalf("%d replicas live after 10 s of a gateway with requests in flight, want 2", live())
	}
	for range 25 {
		l.advance(time.Second)
		l.word("gw-1", jobs, nil, map[string]int{jobs[0].ID: 1, jobs[1].ID: 1})
		l.reconcile()
	}
	if live() != 1 {
		t.Fatalf("%d replicas live %s after the drain began, want 1", live(), 35*time.Second)
	}
}

// Callers that reach a replica directly, past an idle gateway, still
// count: the sample's rate is the replicas' own when the gateways carried
// less than half of it.
func TestLoadPastTheGatewayCounts(t *testing.T) {
	l := newGatewayLab(t)
	l.advance(time.Second)
	er := GatewayEndpointReport{Endpoint: "chat"}
	for _, j := range l.jobs {
		er.Replicas = append(er.Replicas, GatewayReplicaReport{Job: j.ID, Routed: true, Ready: true})
	}
	if err := l.b.ReportGateway(context.Background(), GatewayReport{Gateway: "gw", Endpoints: []GatewayEndpointReport{er}}); err != nil {
		t.Fatal(err)
	}
	report(t, l.b, l.h, 60)
	l.reconcile()
	if m := l.status().Metrics; m == nil || m.RequestsPerSec != 60 {
		t.Fatalf("sample %+v, want the replicas' 60 req/s though the gateway carried none", m)
	}
}

// All the load through a gateway, bursty: the replicas' reports of a
// couple of seconds now and then add up to more than twice the gateway's
// rate over its window, which is no sign of callers past the gateway; the
// sample keeps the gateway's rate, compared with the replicas' over the
// same window.
func TestBurstyReportsDoNotOverrideTheGateway(t *testing.T) {
	l := newGatewayLab(t)
	post := func(requests uint64) {
		t.Helper()
		er := GatewayEndpointReport{Endpoint: "chat"}
		for _, j := range l.jobs {
			er.Replicas = append(er.Replicas, GatewayReplicaReport{Job: j.ID, Requests: requests / uint64(len(l.jobs)), Routed: true, Ready: true})
		}
		if err := l.b.ReportGateway(context.Background(), GatewayReport{Gateway: "gw", Endpoints: []GatewayEndpointReport{er}}); err != nil {
			t.Fatal(err)
		}
	}
	// 90 req/s through the gateway, reported each second; the replicas'
	// own reports every 2 s read 60, 60, 60, 60, then a burst of 200.
	post(0)
	for i, rate := range []float64{60, 60, 60, 60, 200} {
		for range 2 {
			l.advance(time.Second)
			post(90)
		}
		report(t, l.b, l.h, rate)
		l.reconcile()
		m := l.status().Metrics
		if m == nil {
			t.Fatalf("no sample")
		}
		if i == 4 && m.RequestsPerSec > 100 {
			t.Fatalf("sample %.0f req/s: a burst in the replicas' reports of 2 s overrode the gateway's 90 over %s", m.RequestsPerSec, gatewayWindow)
		}
	}
}
