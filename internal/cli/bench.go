package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/api"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/spec"
	"github.com/allot-dev/allot/internal/store/bolt"
)

func newBenchCmd() *cobra.Command {
	b := &cobra.Command{
		Use:   "bench",
		Short: "Measure allot's own performance",
	}
	b.AddCommand(newBenchAPICmd(), newBenchE2ECmd())
	b.AddCommand(newBenchSchedCmd(), newBenchGatewayCmd())
	return b
}

type benchAPIFlags struct {
	clients          int
	duration, warmup time.Duration
	fleet, tenants   string
	output           string
	cpuProfile       string
	baseline         string
}

// benchJob is what every client submits: a spot quarter of a T4, so that
// the fleet fills within the first cycles and the queue grows from then on
// (every submit still costs a full admission check and a durable write).
const benchJob = `{"name":"bench","tenant":"research","priority":"spot","duration":"30s",` +
	`"resources":{"gpu_milli":250,"gpu_models":["T4"],"cpu":1,"memory":"2Gi"}}`

func newBenchAPICmd() *cobra.Command {
	f := benchAPIFlags{}
	cmd := &cobra.Command{
		Use:   "api [--clients 64] [--duration 10s]",
		Short: "Measure durable job submits per second through the HTTP API",
		Long: `api starts a control plane in-process on a temporary directory (embedded bolt
store) and a loopback listener, then lets --clients concurrent HTTP clients
submit jobs for --duration. A submit counts once the server answered 201,
which it does only after the store made the job durable (fsync). It prints
submits per second and the p50, p99 and max acknowledgement latency, with the
store's group-commit batching and the scheduling cycles run meanwhile. Rate
limiting is off; everything else is the production path.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchAPI(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.clients, "clients", 64, "concurrent clients")
	fl.DurationVar(&f.duration, "duration", 10*time.Second, "how long to measure")
	fl.DurationVar(&f.warmup, "warmup", time.Second, "submits before measuring, not counted")
	fl.StringVar(&f.fleet, "fleet", "examples/fleet.yaml", "fleet file")
	fl.StringVar(&f.tenants, "tenants", "examples/tenants.yaml", "tenants file")
	addBenchFlags(cmd, &f.output, &f.cpuProfile, &f.baseline, "the measured part")
	return cmd
}

// benchAPIResult is the outcome of one bench run.
type benchAPIResult struct {
	Clients        int     `json:"clients"`
	DurationS      float64 `json:"duration_s"`
	Submits        int     `json:"submits"`
	Errors         int     `json:"errors"`
	SubmitsPerSec  float64 `json:"submits_per_sec"`
	P50Ms          float64 `json:"p50_ms"`
	P99Ms          float64 `json:"p99_ms"`
	MaxMs          float64 `json:"max_ms"`
	TxnsPerCommit  float64 `json:"txns_per_commit"`
	Cycles         uint64  `json:"cycles"`
	JobsAtEnd      int     `json:"jobs_at_end"`
	GOMAXPROCS     int     `json:"gomaxprocs"`
	LoadAvgAtStart string  `json:"loadavg_at_start"`
}

func runBenchAPI(ctx context.Context, out, errOut io.Writer, f benchAPIFlags) error {
	if f.clients < 1 || f.duration <= 0 {
		return Usage(fmt.Errorf("--clients must be positive and --duration above zero"))
	}
	if f.output != "table" && f.output != "json" {
		return Usage(fmt.Errorf("--output must be table or json"))
	}
	base, err := loadBaseline(f.baseline, benchAPIFigures)
	if err != nil {
		return err
	}
	if err := base.sameSettings(benchAPIResult{Clients: f.clients}); err != nil {
		return err
	}
	fleet, err := spec.ReadFleet(f.fleet)
	if err != nil {
		return Usage(err)
	}
	tenancy, err := spec.ReadTenancy(f.tenants, fleet)
	if err != nil {
		return Usage(err)
	}
	dir, err := os.MkdirTemp("", "allot-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := bolt.Open(filepath.Join(dir, "allot.db"), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	bs, err := startBenchServer(ctx, server.Config{Store: st, Fleet: fleet, Tenancy: tenancy, MaxJobsPerTenant: -1}, "research")
	if err != nil {
		return err
	}
	defer bs.stop()
	srv, token := bs.srv, bs.token

	load, _ := os.ReadFile("/proc/loadavg")
	url := bs.url + "/v1/jobs"
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: f.clients, MaxIdleConnsPerHost: f.clients,
		DisableCompression: true}, Timeout: 30 * time.Second}
	body := []byte(benchJob)
	submit := func() (time.Duration, bool) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(t0), resp.StatusCode == http.StatusCreated
	}

	var (
		mu   sync.Mutex // guards lat and errs
		lat  []time.Duration
		errs int
	)
	start := time.Now()
	warmEnd := start.Add(f.warmup)
	end := warmEnd.Add(f.duration)
	var stats0 bolt.Stats
	var cycles0 uint64
	var cw sync.WaitGroup
	for range f.clients {
		cw.Add(1)
		go func() {
			defer cw.Done()
			mine := make([]time.Duration, 0, 4096)
			bad := 0
			for {
				now := time.Now()
				if now.After(end) || ctx.Err() != nil {
					break
				}
				d, ok := submit()
				if !now.After(warmEnd) {
					continue
				}
				if ok {
					mine = append(mine, d)
				} else {
					bad++
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += bad
			mu.Unlock()
		}()
	}
	time.Sleep(time.Until(warmEnd))
	stats0, cycles0 = st.Stats(), srv.Cycles()
	stopProfile, err := startProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	cw.Wait()
	elapsed := f.duration
	stats1 := st.Stats()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		i := min(len(lat)-1, int(p*float64(len(lat))))
		return float64(lat[i].Microseconds()) / 1000
	}
	atEnd, err := srv.Jobs(ctx, server.Principal{Admin: true}, server.JobFilter{})
	if err != nil {
		return err
	}
	r := benchAPIResult{
		Clients: f.clients, DurationS: elapsed.Seconds(), Submits: len(lat), Errors: errs,
		SubmitsPerSec: float64(len(lat)) / elapsed.Seconds(), P50Ms: pct(0.50), P99Ms: pct(0.99), MaxMs: pct(1),
		Cycles: srv.Cycles() - cycles0, JobsAtEnd: len(atEnd),
		GOMAXPROCS: runtime.GOMAXPROCS(0), LoadAvgAtStart: string(bytes.TrimSpace(load)),
	}
	if c := stats1.Commits - stats0.Commits; c > 0 {
		r.TxnsPerCommit = float64(stats1.Txns-stats0.Txns) / float64(c)
	}
	if f.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
		return base.check(errOut, r)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tseconds\tsubmits\terrors\tsubmits/s\tp50 ms\tp99 ms\tmax ms\ttxns/commit\tcycles\t")
	fmt.Fprintf(tw, "%d\t%.1f\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.1f\t%d\t\n", r.Clients, r.DurationS, r.Submits, r.Errors,
		r.SubmitsPerSec, r.P50Ms, r.P99Ms, r.MaxMs, r.TxnsPerCommit, r.Cycles)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "GOMAXPROCS %d, load average at start %s, %d jobs stored at the end\n", r.GOMAXPROCS, r.LoadAvgAtStart, r.JobsAtEnd)
	return base.check(errOut, r)
}

// benchAPIFigures are what --baseline compares for bench api.
var benchAPIFigures = []figure{
	{"clients", sameSetting},
	{"submits_per_sec", higherIsBetter},
	{"p50_ms", lowerIsBetter},
	{"p99_ms", lowerIsBetter},
}

// benchServer is a control plane run in-process for a bench: the server
// over the caller's store, its scheduling loop, and the HTTP API on a
// loopback listener with rate limiting off and logs discarded (the benches'
// configs also turn the bound on a tenant's jobs off).
type benchServer struct {
	srv   *server.Server
	url   string // http://127.0.0.1:PORT
	token string // a token of the bench's tenant
	stop  func() // closes the listener and ends the loop; waits for both
}

// startBenchServer opens a server on cfg (its Logger is replaced by one that
// discards) and serves it; the caller closes cfg.Store after stop.
func startBenchServer(ctx context.Context, cfg server.Config, tenant string) (*benchServer, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Logger = quiet
	srv, err := server.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	token, err := srv.CreateToken(ctx, tenant)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: api.New(api.Config{Server: srv, Rate: -1, Logger: quiet})}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = srv.Run(runCtx) }()
	go func() { defer wg.Done(); _ = hs.Serve(ln) }()
	return &benchServer{srv: srv, url: "http://" + ln.Addr().String(), token: token, stop: func() {
		_ = hs.Close()
		cancel()
		wg.Wait()
	}}, nil
}
