package endpoint

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/allot-dev/allot/internal/latency"
)

// scrape returns the samples reg exposes, by name{label="value",…} with
// the labels sorted.
func scrape(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			slices.Sort(labels)
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}

// What the gateways report shows on /metrics per endpoint, per replica and
// per gateway, with the rates over the minute and the latency quantiles
// they measured; a replica's series go once it ends, an endpoint's once it
// is deleted.
func TestGatewaySeries(t *testing.T) {
	l := newGatewayLab(t)
	a, b := l.jobs[0].ID, l.jobs[1].ID
	var lat latency.Histogram
	for range 10 {
		lat.Add(20 * time.Millisecond)
	}
	post := func(requests, errs uint64, inFlight int, routed bool) {
		t.Helper()
		er := GatewayEndpointReport{Endpoint: "chat", Replicas: []GatewayReplicaReport{
			{Job: a, Requests: requests, Errors: errs, InFlight: inFlight, Routed: routed, Ready: true},
			{Job: b, Requests: requests, Routed: true, Ready: true},
		}}
		if requests > 0 {
			er.Replicas[0].Latency, er.Replicas[0].FirstByte = lat, lat
			er.Replicas[1].Latency, er.Replicas[1].FirstByte = lat, lat
		}
		if err := l.b.ReportGateway(context.Background(), GatewayReport{Gateway: "gw-1", Endpoints: []GatewayEndpointReport{er}}); err != nil {
			t.Fatal(err)
		}
	}
	// 10 requests to each replica at 12:00:01, 2 of them failed on a;
	// at 12:00:10 nothing more, 3 in flight on a, which gw-1 drains.
	l.advance(time.Second)
	post(10, 2, 0, true)
	l.advance(9 * time.Second)
	post(0, 0, 3, false)
	l.advance(time.Second)

	got := scrape(t, l.reg)
	p95 := lat.Quantile(0.95).Seconds()
	for k, want := range map[string]float64{
		// 20 requests over the 9 s from the first report to the last
		// (the rate reads no further than the reports reached).
		`allot_endpoint_gateway_requests_per_second{endpoint="chat"}`:                                           20.0 / 9,
		`allot_endpoint_gateway_errors_per_second{endpoint="chat"}`:                                             2.0 / 9,
		`allot_endpoint_gateway_in_flight{endpoint="chat"}`:                                                     3,
		`allot_endpoint_gateway_latency_seconds{endpoint="chat",quantile="0.95"}`:                               p95,
		`allot_endpoint_gateway_first_byte_seconds{endpoint="chat",quantile="0.99"}`:                            lat.Quantile(0.99).Seconds(),
		`allot_endpoint_replica_gateway_requests_per_second{endpoint="chat",replica="` + a + `"}`:               1,
		`allot_endpoint_replica_gateway_errors_per_second{endpoint="chat",replica="` + a + `"}`:                 0.2,
		`allot_endpoint_replica_gateway_errors_per_second{endpoint="chat",replica="` + b + `"}`:                 0,
		`allot_endpoint_replica_gateway_latency_seconds{endpoint="chat",quantile="0.95",replica="` + b + `"}`:   p95,
		`allot_endpoint_replica_gateway_first_byte_seconds{endpoint="chat",quantile="0.5",replica="` + a + `"}`: lat.Quantile(0.5).Seconds(),
		`allot_endpoint_replica_gateway_in_flight{endpoint="chat",gateway="gw-1",replica="` + a + `"}`:          3,
		`allot_endpoint_replica_gateway_routed{endpoint="chat",gateway="gw-1",replica="` + a + `"}`:             0,
		`allot_endpoint_replica_gateway_routed{endpoint="chat",gateway="gw-1",replica="` + b + `"}`:             1,
		`allot_endpoint_replica_gateway_ready{endpoint="chat",gateway="gw-1",replica="` + a + `"}`:              1,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (exposed: %v), want %v", k, v, ok, want)
		}
	}

	if err := l.h.Cancel(context.Background(), "chat", b); err != nil {
		t.Fatal(err)
	}
	got = scrape(t, l.reg)
	for k := range got {
		if strings.Contains(k, `replica="`+b+`"`) {
			t.Errorf("%s is exposed after replica %s ended", k, b)
		}
	}
	if _, ok := got[`allot_endpoint_replica_gateway_requests_per_second{endpoint="chat",replica="`+a+`"}`]; !ok {
		t.Errorf("replica %s, which runs, lost its series", a)
	}

	if err := l.b.Delete(context.Background(), tenant("copilot"), "chat"); err != nil {
		t.Fatal(err)
	}
	for k := range scrape(t, l.reg) {
		if strings.Contains(k, "gateway") {
			t.Errorf("%s is exposed after the endpoint was deleted", k)
		}
	}
}

// A gateway whose reports come seconds apart (a busy machine) still
// measures the rate it carried: each report holds the requests since its
// last, which count over that interval, not at its arrival (which made a
// window starting just after one report count the interval before it:
// 90 req/s in reports 5 s apart read as 150).
func TestGatewayRateFromSparseReports(t *testing.T) {
	for _, every := range []time.Duration{time.Second, 2500 * time.Millisecond, 5 * time.Second, 7 * time.Second} {
		t.Run(every.String(), func(t *testing.T) {
			l := newGatewayLab(t)
			a := l.jobs[0].ID
			const rate = 90.0 // req/s
			post := func(n uint64) {
				t.Helper()
				er := GatewayEndpointReport{Endpoint: "chat", Replicas: []GatewayReplicaReport{{Job: a, Requests: n, Routed: true, Ready: true}}}
				if err := l.b.ReportGateway(context.Background(), GatewayReport{Gateway: "gw-1", Endpoints: []GatewayEndpointReport{er}}); err != nil {
					t.Fatal(err)
				}
			}
			post(0)
			begin := l.h.now
			next := begin.Add(every)
			for step := 0; step < 600; step++ {
				l.advance(100 * time.Millisecond)
				if !l.h.now.Before(next) {
					post(uint64(rate * every.Seconds()))
					next = next.Add(every)
				}
				if l.h.now.Sub(begin) < 2*gatewayWindow {
					continue // the window is not full of reports yet
				}
				l.b.metricsMu.Lock()
				got, _, _, _, _ := l.b.gatewaySample("chat", l.h.now)
				l.b.metricsMu.Unlock()
				// A window's edges cut a report's interval at most one
				// slot off the truth (the count lands in the report's
				// slots, not at the request's second) on either side.
				if tol := rate * time.Second.Seconds() / gatewayWindow.Seconds(); got < rate-tol || got > rate+tol {
					t.Fatalf("at %s the gateway's rate reads %.1f req/s; it carried %.0f", l.h.now.Sub(begin), got, rate)
				}
			}
		})
	}
}
