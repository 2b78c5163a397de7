package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/demo"
)

// BenchResult is what Bench measured: the same open-loop load sent to a
// local replica directly and through a gateway, and the latency the
// gateway added at each percentile (through minus direct).
type BenchResult struct {
	Rate               float64 // requests/s of each phase
	Phase              time.Duration
	Direct, Through    demo.LoadResult
	AddedP50, AddedP99 time.Duration
}

func (r BenchResult) String() string {
	return fmt.Sprintf("%.0f req/s for %s each way, to a local replica (allot demo serve, no service time)\n"+
		"direct:  %s\nthrough: %s\nadded by the gateway: p50 %s, p99 %s",
		r.Rate, r.Phase, indent(r.Direct.String()), indent(r.Through.String()), r.AddedP50, r.AddedP99)
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n         ") }

// staticSource serves one route table for ever and drops reports.
type staticSource struct{ t wire.RouteTable }

func (s staticSource) Routes(ctx context.Context, after string, wait time.Duration) (wire.RouteTable, error) {
	if after != s.t.Version {
		return s.t, nil
	}
	select {
	case <-ctx.Done():
		return wire.RouteTable{}, ctx.Err()
	case <-time.After(wait):
		return s.t, nil
	}
}

func (staticSource) ReportGateway(context.Context, wire.GatewayReport) error { return nil }

// Bench measures the latency a gateway adds: a local allot demo serve
// without service time (64 slots), a gateway in front of it in this
// process, and Poisson arrivals at rate for phase, first straight to the
// replica, then through the gateway, then both again; each way's
// percentiles are over both of its phases. Both ways share the machine, so
// what the gateway adds is the difference.
func Bench(ctx context.Context, rate float64, phase time.Duration) (BenchResult, error) {
	rep, err := demo.NewServer(demo.ServeConfig{Concurrency: 64, Replica: "bench"})
	if err != nil {
		return BenchResult{}, err
	}
	rln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return BenchResult{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = rep.Run(ctx, rln, discard{}) }()
	route := wire.Route{Endpoint: "bench", Access: "public", Readiness: wire.Readiness{Path: "/healthz", TimeoutMs: 1000},
		Replicas: []wire.RouteReplica{{Job: "bench-1", Address: rln.Addr().String()}}}
	g, err := New(Config{Source: staticSource{wire.RouteTable{Version: "1", Routes: []wire.Route{route}}}, Name: "bench", ReportEvery: time.Hour})
	if err != nil {
		return BenchResult{}, err
	}
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return BenchResult{}, err
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(gln) }()
	defer srv.Close()
	go func() { _ = g.Run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if t := g.table.Load(); t != nil && anyReady(t.endpoints["bench"], time.Now().UnixNano()) {
			break
		}
		if time.Now().After(deadline) {
			return BenchResult{}, fmt.Errorf("bench: the replica did not become ready within 10s")
		}
	}
	direct, through := "http://"+rln.Addr().String()+"/", "http://"+gln.Addr().String()+"/bench/"
	res := BenchResult{Rate: rate, Phase: phase}
	var dRes, tRes []demo.LoadResult
	var dLat, tLat []time.Duration
	for i, url := range []string{direct, through, direct, through} {
		r, lat, err := demo.LoadLatencies(ctx, demo.LoadConfig{URL: url, RPS: rate, Duration: phase, Seed: uint64(i + 1)})
		if err != nil {
			return res, err
		}
		if url == direct {
			dRes, dLat = append(dRes, r), append(dLat, lat...)
		} else {
			tRes, tLat = append(tRes, r), append(tLat, lat...)
		}
	}
	res.Direct, res.Through = demo.Combine(dRes, dLat, 2*phase), demo.Combine(tRes, tLat, 2*phase)
	res.AddedP50, res.AddedP99 = res.Through.P50-res.Direct.P50, res.Through.P99-res.Direct.P99
	return res, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
