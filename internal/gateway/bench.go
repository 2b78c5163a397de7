package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/demo"
)

// BenchResult is what a gateway bench measured: the same open-loop load
// sent to a replica directly and through a gateway, and the latency the
// gateway added at each percentile (through minus direct).
type BenchResult struct {
	Rate               float64 // requests/s of each phase
	Phase              time.Duration
	Setup              string // which process ran what, when the bench says
	Direct, Through    demo.LoadResult
	AddedP50, AddedP99 time.Duration
	// GatewayCPU is the processor time (user and system) the gateway's
	// process spent during the phases, per request sent through it; 0
	// when the gateway shared its process with the load or the replica.
	GatewayCPU time.Duration
}

func (r BenchResult) String() string {
	s := fmt.Sprintf("%.0f req/s for %s each way, alternating (direct, through, direct, through)\n", r.Rate, r.Phase)
	if r.Setup != "" {
		s += r.Setup + "\n"
	}
	s += fmt.Sprintf("direct:  %s\nthrough: %s\nadded by the gateway: p50 %s, p99 %s",
		indent(r.Direct.String()), indent(r.Through.String()), r.AddedP50, r.AddedP99)
	if r.GatewayCPU > 0 {
		s += fmt.Sprintf("\nthe gateway's process: %s of CPU per request through it", r.GatewayCPU)
	}
	return s
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n         ") }

// Compare sends Poisson arrivals at rate for phase to direct, then to
// through, then both again, from this process, and returns each way's
// percentiles over its two phases and their differences. Alternating
// spreads whatever else the machine does over both ways.
func Compare(ctx context.Context, direct, through string, rate float64, phase time.Duration) (BenchResult, error) {
	res := BenchResult{Rate: rate, Phase: phase}
	var dRes, tRes []demo.LoadResult
	var dLat, tLat []time.Duration
	for i, url := range []string{direct, through, direct, through} {
		r, lat, err := demo.LoadLatencies(ctx, demo.LoadConfig{URL: url, RPS: rate, Duration: phase, Seed: uint64(i + 1)})
		if err != nil {
			return res, err
		}
		if i%2 == 0 {
			dRes, dLat = append(dRes, r), append(dLat, lat...)
		} else {
			tRes, tLat = append(tRes, r), append(tLat, lat...)
		}
	}
	res.Direct, res.Through = demo.Combine(dRes, dLat, 2*phase), demo.Combine(tRes, tLat, 2*phase)
	res.AddedP50, res.AddedP99 = res.Through.P50-res.Direct.P50, res.Through.P99-res.Direct.P99
	return res, nil
}

// BenchConfig is a gateway bench.
type BenchConfig struct {
	Rate  float64
	Phase time.Duration
	// Replica is the address of a running replica to route to (allot demo
	// serve without a service time); "" starts one in this process.
	Replica string
	// Load sends the phases to the replica's URL and the gateway's and
	// returns what they measured; nil is Compare, in this process.
	Load func(ctx context.Context, direct, through string) (BenchResult, error)
}

// Bench measures the latency a gateway adds: a gateway in this process,
// served as allot gateway serves (Serve), with a static route to one
// replica, and Compare's phases to the replica and through the gateway.
// Where the replica and the load come from is cfg's.
func Bench(ctx context.Context, cfg BenchConfig) (BenchResult, error) {
	if !(cfg.Rate > 0) || cfg.Phase <= 0 {
		return BenchResult{}, errors.New("bench: the rate and the phase must be above 0")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	replica := cfg.Replica
	if replica == "" {
		rep, err := demo.NewServer(demo.ServeConfig{Concurrency: 64, Replica: "bench"})
		if err != nil {
			return BenchResult{}, err
		}
		rln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return BenchResult{}, err
		}
		go func() { _ = rep.Run(ctx, rln, discard{}) }()
		replica = rln.Addr().String()
	}
	route := wire.Route{Endpoint: "bench", Access: "public", Readiness: wire.Readiness{Path: "/healthz", TimeoutMs: 1000},
		Replicas: []wire.RouteReplica{{Job: "bench-1", Address: replica}}}
	g, err := New(Config{Source: staticSource{wire.RouteTable{Version: "1", Routes: []wire.Route{route}}}, Name: "bench", ReportEvery: time.Hour})
	if err != nil {
		return BenchResult{}, err
	}
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return BenchResult{}, err
	}
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx, gln) }()
	defer func() { cancel(); <-served }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if t := g.table.Load(); t != nil && anyReady(t.endpoints["bench"], time.Now().UnixNano()) {
			break
		}
		if time.Now().After(deadline) {
			return BenchResult{}, fmt.Errorf("bench: the replica at %s did not become ready within 10s", replica)
		}
	}
	load := cfg.Load
	if load == nil {
		load = func(ctx context.Context, direct, through string) (BenchResult, error) {
			return Compare(ctx, direct, through, cfg.Rate, cfg.Phase)
		}
	}
	return load(ctx, "http://"+replica+"/", "http://"+gln.Addr().String()+"/bench/")
}

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

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
