package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/server"
	"github.com/allot-dev/allot/internal/store"
)

type benchE2EFlags struct {
	nodes, jobs, clients, history int
	nodesSet                      bool // --nodes was given
	timeout                       time.Duration
	output, baseline, cpuProfile  string
	store                         string // "" (bolt) or etcd://HOST:PORT[,…]
	// server and token name a running server to drive instead of one
	// in-process (bench_e2e_remote.go); tenant is whose jobs it submits.
	server, token, tenant string
	writeFleet            string // a directory: write the fleet and tenants files and exit
	keep                  bool   // with --server: leave the run's jobs (hidden; profiling the server)
}

// The generated fleet of bench e2e: one region of 8-GPU H100 nodes in
// racks of 8 and InfiniBand leaf groups of 32, clusters of at most 1,024
// nodes; one tenant without guarantees or quotas.
const (
	e2eSKU          = "ND96-H100x8-IB"
	e2eGPUsPerNode  = 8
	e2eTenant       = "bench"
	e2eClusterNodes = 1024
)

// e2eJob returns what every client submits: one H100 for as long as it
// takes (no duration: it runs until canceled), so every job that fits is
// Running at the end. The name is the run's own, so that a listing finds
// the run's jobs on a server that holds others.
func e2eJob(name, tenant string) []byte {
	type resources struct {
		GPUs      int      `json:"gpus_per_instance"`
		GPUModels []string `json:"gpu_models"`
	}
	body, _ := json.Marshal(struct {
		Name      string    `json:"name"`
		Tenant    string    `json:"tenant"`
		Command   []string  `json:"command"`
		Resources resources `json:"resources"`
	}{name, tenant, []string{"sleep", "infinity"}, resources{1, []string{"H100"}}})
	return body
}

// e2eRunName names the jobs of one run: e2e- and the start's time in
// hexadecimal nanoseconds.
func e2eRunName(now time.Time) string { return fmt.Sprintf("e2e-%x", now.UnixNano()) }

func newBenchE2ECmd() *cobra.Command {
	f := benchE2EFlags{}
	cmd := &cobra.Command{
		Use:   "e2e [--nodes 1000] [--jobs 8000] [--clients 16] [--history H] [--store etcd://HOST:PORT,...] [--server URL]",
		Short: "Measure jobs per second from first submit to all running, through the HTTP API",
		Long: `e2e starts a control plane in-process on a temporary directory (embedded bolt
store, fsync on every commit; --store below puts it on etcd) with a generated fleet of --nodes nodes of 8
H100 GPUs and the simulated node layer (no processes: a bound job is Running
at the commit of the cycle that binds it, as 'allot server --agents
simulated' does). --clients concurrent HTTP clients, each on a kept-alive
connection of its own (a request written whole, the answer read with
net/http's ReadResponse; net/http's client over https), submit --jobs one-GPU
jobs; the clock runs from the first submit until the server holds every job
that fits (at most 8 per node) Running. It prints that rate in jobs per
second, the submit rate, and the p50, p99 and max of each job's
started_at - submitted_at as the API shows them.

--history H first writes H finished jobs straight into the store (through
the store's transactions, not the API: a million submits would take many
minutes) and reports how long that took, how long the server took to start
on them, and the process's resident memory after the start and at its peak
(the peak is reset after the preload; it includes the bench's own clients).
Rate limiting and the bound on a tenant's jobs are off; everything else is
the production path.

--store etcd://HOST:PORT[,HOST:PORT...] keeps the state in an etcd cluster
you bring instead of bolt, with leader election on and every commit fenced
on the term, as 'allot server --store etcd://...' runs. The bench writes
under a new prefix of its own, /allot-bench-<time>/ (so the URL takes no
/prefix), never reads another installation's keys, and deletes its prefix
and election keys at the end. Endpoints are plain http; the preload writes
100 jobs per transaction, within etcd's default limits, but the server's
cycles need the cluster's --max-txn-ops of 10000 as 'allot server' does.

Every run also reports where the server's cycles spent their time (the
cycle split): for each phase of allot_cycle_phase_seconds (snapshot,
prepare, plan, encode, commit, publish, watch; docs/metrics.md) the number
of cycles that reached it and their mean, p50 and p99 in ms, read from the
server's /metrics before and after the measured part.

--server URL drives a server that already runs as its own process ('allot
server --agents simulated', say) through its HTTP API instead of starting
one: nothing runs in-process but the clients. The fleet is the server's
(--nodes is refused; with an admin token the bench reads GET /v1/nodes for
the nodes and the free H100 GPUs, else every job must fit); the jobs are
the tenant --tenant's, submitted with --token (default $ALLOT_TOKEN). The
clock runs from the first submit until a listing of the run's jobs that
have not started (GET /v1/jobs?state=Queued,Preparing,Blocked&name=RUN,
polled every 10 ms once every submit is answered) finds none but those that
do not fit. cpu_per_job_ms is then the server process's CPU (its
process_cpu_seconds_total) and client_cpu_per_job_ms the bench's own; the
memory figures are the server's resident memory before and after (the
peak between is not seen). At the end the bench cancels every job it
submitted. --write-fleet DIR writes the generated fleet of --nodes nodes
and its tenancy as DIR/fleet.yaml and DIR/tenants.yaml for such a server,
and exits.`,
		Example: `  allot bench e2e --nodes 1000 --jobs 8000 --clients 16
  allot bench e2e --nodes 1000 --jobs 8000 --history 1000000 -o json
  allot bench e2e --nodes 500 --jobs 4000 --store etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379
  allot bench e2e --nodes 1000 --write-fleet /tmp/e2e
  allot server --data /tmp/e2e/data --listen 127.0.0.1:8181 --agents simulated --rate-limit 0 \
      --fleet /tmp/e2e/fleet.yaml --tenants /tmp/e2e/tenants.yaml &
  ALLOT_TOKEN=$(cat /tmp/e2e/data/admin-token) allot bench e2e --server http://127.0.0.1:8181 --jobs 8000`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.nodesSet = cmd.Flags().Changed("nodes")
			return runBenchE2E(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.nodes, "nodes", 1000, "nodes of 8 GPUs in the generated fleet")
	fl.IntVar(&f.jobs, "jobs", 8000, "one-GPU jobs to submit")
	fl.IntVar(&f.clients, "clients", 16, "concurrent HTTP clients")
	fl.IntVar(&f.history, "history", 0, "finished jobs to write into the store before the server starts")
	fl.StringVar(&f.store, "store", "", "etcd://HOST:PORT[,HOST:PORT...]: run on this etcd cluster, under a prefix of the bench's own (default: bolt in a temporary directory)")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "give up when not every job is Running after this long")
	fl.StringVar(&f.server, "server", "", "URL of a running server to drive instead of one in-process (its fleet, its store)")
	fl.StringVar(&f.token, "token", "", "with --server: API token (default $ALLOT_TOKEN); an admin token lets the bench read the fleet")
	fl.StringVar(&f.tenant, "tenant", e2eTenant, "with --server: the tenant whose jobs the bench submits")
	fl.BoolVar(&f.keep, "keep", false, "with --server: do not cancel the run's jobs at the end (a server profile then shows the run alone)")
	_ = fl.MarkHidden("keep")
	fl.StringVar(&f.writeFleet, "write-fleet", "", "write the fleet of --nodes nodes and its tenancy as DIR/fleet.yaml and DIR/tenants.yaml, and exit")
	addBenchFlags(cmd, &f.output, &f.cpuProfile, &f.baseline, "from first submit to all running")
	return cmd
}

// benchE2EResult is the outcome of one bench e2e run.
type benchE2EResult struct {
	Nodes       int    `json:"nodes"`
	GPUsPerNode int    `json:"gpus_per_node"`
	Jobs        int    `json:"jobs"`
	Clients     int    `json:"clients"`
	NodeLayer   string `json:"node_layer"`
	// Server is "in-process", or "external" for one driven with --server.
	Server string `json:"server"`
	// Store names the backend: bolt, or etcd with its member count; ""
	// for an external server's (not known to the bench).
	Store   string `json:"store"`
	History int    `json:"history"`
	// PreloadS is the time to write the history into the store; StartS the
	// time from opening the server on it to its first committed cycle.
	PreloadS float64 `json:"preload_s"`
	StartS   float64 `json:"start_s"`
	// Submitted jobs were acknowledged (201); Errors were refused or failed.
	Submitted   int     `json:"submitted"`
	Errors      int     `json:"errors"`
	SubmitS     float64 `json:"submit_s"`
	SubmitsPerS float64 `json:"submits_per_s"`
	// Running is how many jobs were Running at the end: every acknowledged
	// job that fits. AllRunningS runs from the first submit until the
	// server's cache held them all Running; JobsPerS is Running /
	// AllRunningS.
	Running     int     `json:"running"`
	AllRunningS float64 `json:"all_running_s"`
	JobsPerS    float64 `json:"jobs_per_s"`
	// Latency is started_at - submitted_at per job, as the API shows them.
	LatencyP50Ms float64 `json:"latency_p50_ms"`
	LatencyP99Ms float64 `json:"latency_p99_ms"`
	LatencyMaxMs float64 `json:"latency_max_ms"`
	Cycles       uint64  `json:"cycles"`
	// CycleSplit is, by phase of allot_cycle_phase_seconds, what the
	// cycles from first submit to all running spent in it
	// (bench_e2e_split.go).
	CycleSplit map[string]phaseFigures `json:"cycle_split"`
	// CPUPerJobMs is the server's CPU time (user and system) from first
	// submit to all running, per job: a figure that moves less than the
	// rates when other work shares the machine. In-process it is the
	// whole process's, the bench's own clients included; with --server
	// the server process's, and ClientCPUPerJobMs the bench's.
	CPUPerJobMs       float64 `json:"cpu_per_job_ms"`
	ClientCPUPerJobMs float64 `json:"client_cpu_per_job_ms"`
	// RSSStartMiB is the resident memory once the server started;
	// RSSPeakMiB the peak from after the preload to the end.
	RSSStartMiB float64 `json:"rss_after_start_mib"`
	// HeapStartMiB is the Go heap still live once the server started (after
	// a collection): what the cache holds, without garbage.
	HeapStartMiB   float64 `json:"heap_after_start_mib"`
	RSSPeakMiB     float64 `json:"rss_peak_mib"`
	GOMAXPROCS     int     `json:"gomaxprocs"`
	LoadAvgAtStart string  `json:"loadavg_at_start"`
}

// benchE2EFigures are what --baseline compares for bench e2e: the rates,
// latencies, CPU and memory, and each phase's mean and p99 of the cycle
// split.
var benchE2EFigures = append([]figure{
	{"nodes", sameSetting},
	{"jobs", sameSetting},
	{"clients", sameSetting},
	{"history", sameSetting},
	{"server", sameSetting},
	{"jobs_per_s", higherIsBetter},
	{"submits_per_s", higherIsBetter},
	{"latency_p50_ms", lowerIsBetter},
	{"latency_p99_ms", lowerIsBetter},
	{"cpu_per_job_ms", lowerIsBetter},
	{"start_s", lowerIsBetter},
	{"rss_peak_mib", lowerIsBetter},
}, splitFigures()...)

// splitFigures are the cycle split's figures --baseline compares.
func splitFigures() []figure {
	var out []figure
	for _, p := range server.CyclePhases {
		out = append(out, figure{"cycle_split." + p + ".mean_ms", lowerIsBetter}, figure{"cycle_split." + p + ".p99_ms", lowerIsBetter})
	}
	return out
}

// runBenchE2E reads as:
//
//  1. preload the history (--history) straight into a new store (a bolt
//     file in a temporary directory, or a prefix of its own in --store's
//     etcd cluster);
//  2. start the server on it and wait for its first cycle;
//  3. submit from the clients and watch the server's job counts until all
//     run (measure; read in-process every 10 ms: gathering /metrics that
//     often, with the fleet's per-node gauges, took a fifth of the CPU),
//     between two reads of /metrics for the cycle split;
//  4. read each job's started_at - submitted_at through the API;
//  5. print, and compare with --baseline.
//
// With --server, runBenchE2ERemote does 3 to 5 against that server.
func runBenchE2E(ctx context.Context, out, errOut io.Writer, f benchE2EFlags) error {
	switch {
	case f.nodes < 1 || f.nodes > 100_000:
		return Usage(fmt.Errorf("--nodes %d: want 1 to 100000", f.nodes))
	case f.jobs < 1 || f.clients < 1 || f.history < 0 || f.timeout <= 0:
		return Usage(fmt.Errorf("--jobs and --clients must be positive, --history not negative, --timeout above zero"))
	case f.output != "table" && f.output != "json":
		return Usage(fmt.Errorf("--output must be table or json"))
	case f.writeFleet != "" && f.server != "":
		return Usage(fmt.Errorf("--write-fleet writes the files for a server; it does not go with --server"))
	case f.writeFleet != "":
		fleetPath, tenantsPath, err := writeE2EFiles(f.writeFleet, f.nodes)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "fleet %s\ntenants %s\n", fleetPath, tenantsPath)
		return nil
	case f.server != "":
		return runBenchE2ERemote(ctx, out, errOut, f)
	}
	etcdCfg, err := parseBenchStore(f.store)
	if err != nil {
		return Usage(err)
	}
	base, err := loadBaseline(f.baseline, benchE2EFigures)
	if err != nil {
		return err
	}
	fleet, err := e2eFleet(f.nodes)
	if err != nil {
		return err
	}
	tenancy, err := e2eTenancy(fleet)
	if err != nil {
		return err
	}
	progress := newProgress(errOut).line
	r := benchE2EResult{Nodes: f.nodes, GPUsPerNode: e2eGPUsPerNode, Jobs: f.jobs, Clients: f.clients, NodeLayer: "simulated",
		Server: "in-process", History: f.history, GOMAXPROCS: runtime.GOMAXPROCS(0)}
	if err := base.sameSettings(r); err != nil {
		return err
	}

	// 1. History.
	where, err := newBenchStore(etcdCfg)
	if err != nil {
		return err
	}
	defer where.remove()
	r.Store = where.describe()
	if f.history > 0 {
		t0 := time.Now()
		if err := preloadHistory(ctx, where, f.history, fleet, progress); err != nil {
			return err
		}
		r.PreloadS = time.Since(t0).Seconds()
		debug.FreeOSMemory() // the preload's store is closed: what it held is garbage
	}
	resetPeakRSS()

	// 2. Server. With an election it leads alone (URL empty: nobody
	// forwards to it) once its campaign is won.
	st, election, err := where.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	progress("starting the server")
	t0 := time.Now()
	bs, err := startBenchServer(ctx, server.Config{Store: st, Election: election, Fleet: fleet, Tenancy: tenancy,
		Nodes: server.Simulated{}, MaxJobsPerTenant: -1}, e2eTenant)
	if err != nil {
		return err
	}
	defer bs.stop()
	for !bs.srv.Leads() || !bs.srv.Ready() { // the first cycle resumes what the store holds
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
	r.StartS = time.Since(t0).Seconds()
	r.RSSStartMiB, _ = rssMiB()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.HeapStartMiB = float64(ms.HeapAlloc) / (1 << 20)
	r.LoadAvgAtStart = loadAvg()

	// 3. Measure.
	run := newE2ERun(bs.url, bs.token, e2eTenant, f, progress)
	run.capacity = f.nodes * e2eGPUsPerNode
	running0 := bs.srv.JobCounts()[model.StateRunning]
	run.running = func(context.Context, int) (int, error) {
		return bs.srv.JobCounts()[model.StateRunning] - running0, nil
	}
	run.pollWhileSubmitting = true
	before, err := scrapeServer(ctx, run.client, bs.url, bs.token)
	if err != nil {
		return err
	}
	cycles0, cpu0 := bs.srv.Cycles(), cpuTime()
	if err := run.measure(ctx, &r); err != nil {
		return err
	}
	cpu := cpuTime() - cpu0
	after, err := settledScrape(ctx, run.client, bs.url, bs.token, before)
	if err != nil {
		return err
	}
	r.Cycles = bs.srv.Cycles() - cycles0
	if r.CycleSplit, err = cycleSplit(before, after); err != nil {
		return err
	}
	if r.Running > 0 {
		r.CPUPerJobMs = float64(cpu.Microseconds()) / 1000 / float64(r.Running)
	}
	progress("")
	if r.Errors > 0 {
		fmt.Fprintf(errOut, "%d submits failed; the first: %s\n", r.Errors, run.firstErr)
	}

	// 4. Latencies.
	lat, err := startLatencies(ctx, run.client, bs.url, bs.token, run.name)
	if err != nil {
		return err
	}
	r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyMaxMs = latencyFigures(lat)
	_, r.RSSPeakMiB = rssMiB()

	// 5. Report.
	return reportE2E(out, errOut, f.output, base, r)
}

// reportE2E prints r as JSON or a table and compares it with base.
func reportE2E(out, errOut io.Writer, output string, base *baseline, r benchE2EResult) error {
	if output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else if err := writeE2ETable(out, r); err != nil {
		return err
	}
	return base.check(errOut, r)
}

// latencyFigures returns the p50, p99 and max of lat in ms.
func latencyFigures(lat []time.Duration) (p50, p99, most float64) {
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	return pct(0.50), pct(0.99), pct(1)
}

func loadAvg() string {
	load, _ := os.ReadFile("/proc/loadavg")
	return string(bytes.TrimSpace(load))
}

// e2eRun is the measured part of bench e2e against a started server.
type e2eRun struct {
	url, token              string
	name                    string // of the run's jobs (e2eRunName)
	body                    []byte // the job every client submits
	client                  *http.Client
	jobs, clients, capacity int
	timeout                 time.Duration
	progress                func(string)
	profile                 string // file of a CPU profile while measuring; "": none
	// running returns how many of the run's jobs are Running, acked of
	// them acknowledged so far. pollWhileSubmitting: it is cheap enough to
	// call every 10 ms from the first submit (in-process); else it is
	// called only once every submit is answered, as nothing can be all
	// running before.
	running             func(ctx context.Context, acked int) (int, error)
	pollWhileSubmitting bool

	firstErr string // of the submits that failed
	idMu     sync.Mutex
	ids      []string // of the acknowledged jobs, guarded by idMu
}

func newE2ERun(url, token, tenant string, f benchE2EFlags, progress func(string)) *e2eRun {
	name := e2eRunName(time.Now())
	return &e2eRun{url: url, token: token, name: name, body: e2eJob(name, tenant), jobs: f.jobs, clients: f.clients,
		timeout: f.timeout, progress: progress, profile: f.cpuProfile,
		client: &http.Client{Transport: &http.Transport{MaxIdleConns: f.clients + 1, MaxIdleConnsPerHost: f.clients + 1,
			DisableCompression: true}, Timeout: time.Minute}}
}

// measure lets the clients submit the jobs while it watches the server's
// job counts until every acknowledged job that fits is Running, and
// records the figures of that part in r (all but the cycles and the CPU,
// which the caller reads around it).
func (e *e2eRun) measure(ctx context.Context, r *benchE2EResult) error {
	stopProfile, err := startProfile(e.profile)
	if err != nil {
		return err
	}
	defer stopProfile()

	subs := make([]submitter, e.clients)
	for i := range subs {
		if subs[i], err = newSubmitter(e.url, e.token, e.body, e.client); err != nil {
			return err
		}
	}
	var next, acked, refused atomic.Int64
	var firstErr atomic.Value
	var lastAck atomic.Int64 // ns since start
	start := time.Now()
	var cw sync.WaitGroup
	for _, sub := range subs {
		cw.Add(1)
		go func() {
			defer cw.Done()
			defer sub.close()
			for next.Add(1) <= int64(e.jobs) && ctx.Err() == nil {
				id, err := sub.submit(ctx)
				if err != nil {
					refused.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				e.idMu.Lock()
				e.ids = append(e.ids, id)
				e.idMu.Unlock()
				acked.Add(1)
				lastAck.Store(int64(time.Since(start)))
			}
		}()
	}
	submitted := make(chan struct{})
	go func() { cw.Wait(); close(submitted) }()

	deadline := start.Add(e.timeout)
	var running int
	var lastShown time.Time
	for {
		// Read whether every submit is answered before reading the
		// count, so that the count to reach is final when it is.
		var all bool
		select {
		case <-submitted:
			all = true
		default:
		}
		if all || e.pollWhileSubmitting {
			if running, err = e.running(ctx, int(acked.Load())); err != nil {
				return err
			}
			if all && running >= min(int(acked.Load()), e.capacity) {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timeout: %d of %d jobs Running after %s (%d submitted, %d refused)", running,
				min(e.jobs, e.capacity), e.timeout, acked.Load(), refused.Load())
		}
		if time.Since(lastShown) >= 250*time.Millisecond {
			e.progress(fmt.Sprintf("%d/%d submitted, %d running, %.1fs", acked.Load(), e.jobs, running, time.Since(start).Seconds()))
			lastShown = time.Now()
		}
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
	allRunning := time.Since(start)

	r.Submitted, r.Errors, r.Running = int(acked.Load()), int(refused.Load()), running
	if v, ok := firstErr.Load().(string); ok {
		e.firstErr = v
	}
	r.SubmitS = time.Duration(lastAck.Load()).Seconds()
	if r.SubmitS > 0 {
		r.SubmitsPerS = float64(r.Submitted) / r.SubmitS
	}
	r.AllRunningS = allRunning.Seconds()
	r.JobsPerS = float64(r.Running) / r.AllRunningS
	return nil
}

func writeE2ETable(w io.Writer, r benchE2EResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "nodes\tjobs\tclients\trunning\tall running s\tjobs/s\tsubmits/s\tp50 ms\tp99 ms\tmax ms\tcycles\t")
	fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.2f\t%.0f\t%.0f\t%.1f\t%.1f\t%.1f\t%d\t\n", r.Nodes, r.Jobs, r.Clients, r.Running,
		r.AllRunningS, r.JobsPerS, r.SubmitsPerS, r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyMaxMs, r.Cycles)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "cycle split (ms per cycle that reached the phase):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tcycles\tmean\tp50\tp99\t")
	for _, p := range server.CyclePhases {
		f := r.CycleSplit[p]
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t\n", p, f.Count, f.MeanMs, f.P50Ms, f.P99Ms)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.History > 0 {
		fmt.Fprintf(w, "history: %d finished jobs preloaded in %.1fs\n", r.History, r.PreloadS)
	}
	if r.Server == "external" {
		fmt.Fprintf(w, "CPU %.3f ms per job in the server, %.3f in the bench's clients; server RSS %.0f MiB before, %.0f MiB at most after; %d submit errors\n",
			r.CPUPerJobMs, r.ClientCPUPerJobMs, r.RSSStartMiB, r.RSSPeakMiB, r.Errors)
		fmt.Fprintf(w, "external server (its own store and node layer), bench GOMAXPROCS %d, load average at start %s\n", r.GOMAXPROCS,
			r.LoadAvgAtStart)
		return nil
	}
	fmt.Fprintf(w, "CPU %.3f ms per job; server start %.2fs, RSS after start %.0f MiB (live heap %.0f MiB), peak %.0f MiB; %d submit errors\n",
		r.CPUPerJobMs, r.StartS, r.RSSStartMiB, r.HeapStartMiB, r.RSSPeakMiB, r.Errors)
	fmt.Fprintf(w, "store %s, node layer %s, GOMAXPROCS %d, load average at start %s\n", r.Store, r.NodeLayer, r.GOMAXPROCS,
		r.LoadAvgAtStart)
	return nil
}

// e2eFleet returns a fleet of n 8-GPU H100 nodes, gpu00001 on, in one
// region.
func e2eFleet(n int) (*model.Fleet, error) {
	f := &model.Fleet{Catalog: model.BuiltinCatalog()}
	region := model.Region{Name: "bench", Residency: "us"}
	for i := range n {
		c := i / e2eClusterNodes
		if i%e2eClusterNodes == 0 {
			region.Clusters = append(region.Clusters, model.Cluster{Name: fmt.Sprintf("bench-c%d", c), Fabric: model.FabricInfiniBand})
		}
		cl := &region.Clusters[c]
		rack := fmt.Sprintf("bench-c%d-r%d", c, i%e2eClusterNodes/8)
		if i%8 == 0 {
			cl.Racks = append(cl.Racks, model.Rack{Name: rack})
		}
		f.Nodes = append(f.Nodes, model.Node{Name: fmt.Sprintf("gpu%05d", i+1), SKU: e2eSKU, Region: region.Name,
			Cluster: cl.Name, Rack: rack, Leaf: fmt.Sprintf("bench-c%d-l%d", c, i%e2eClusterNodes/32), Health: model.NodeReady})
	}
	f.Regions = []model.Region{region}
	if sku := f.Catalog[e2eSKU]; sku.GPUs != e2eGPUsPerNode {
		return nil, fmt.Errorf("SKU %s has %d GPUs, the bench counts on %d", e2eSKU, sku.GPUs, e2eGPUsPerNode)
	}
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("generated fleet: %w", err)
	}
	return f, nil
}

// e2eTenancy returns one tenant in a partition without guarantees.
func e2eTenancy(f *model.Fleet) (*model.Tenancy, error) {
	t := &model.Tenancy{
		Partitions: []model.Partition{{Name: "bench", Tier: "shared"}},
		Tenants:    []model.Tenant{{Name: e2eTenant, Kind: model.TenantInternal, Partition: "bench"}},
	}
	if err := t.Validate(f); err != nil {
		return nil, fmt.Errorf("generated tenancy: %w", err)
	}
	return t, nil
}

// preloadHistory writes n finished one-GPU jobs into the new store where,
// where.batch per transaction, and closes it.
func preloadHistory(ctx context.Context, where *benchStore, n int, fleet *model.Fleet, progress func(string)) error {
	st, _, err := where.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	end := time.Now().Add(-time.Hour)
	for done := 0; done < n; {
		batch := min(n-done, where.batch)
		txn := store.Txn{Then: make([]store.Op, 0, batch)}
		for i := done; i < done+batch; i++ {
			ended := end.Add(-time.Duration(n-i) * time.Second)
			started := ended.Add(-time.Hour)
			node := fleet.Nodes[i%len(fleet.Nodes)].Name
			j := &model.Job{ID: fmt.Sprintf("history-%08d", i), Spec: model.JobSpec{
				Name: "history", Tenant: e2eTenant, Command: []string{"python", "train.py"},
				Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 1, GPUModels: []string{"H100"}},
				Priority:  model.Priority{Class: model.ClassStandard}, Duration: time.Hour,
			}, Status: model.JobStatus{
				State: model.StateSucceeded, Reason: "Completed", Detail: "ran 1h0m0s (simulated)",
				SubmittedAt: started.Add(-time.Minute), StartedAt: started, EndedAt: ended,
				Attempts: []model.Attempt{{Number: 1, Nodes: []string{node}, Started: started, Ended: ended, Reason: "Completed",
					Detail: "ran 1h0m0s (simulated)"}},
			}}
			key, value := server.JobRecord(j)
			txn.Then = append(txn.Then, store.PutOp(key, value))
		}
		if _, err := st.Txn(ctx, txn); err != nil {
			return fmt.Errorf("preload history: %w", err)
		}
		done += batch
		progress(fmt.Sprintf("history: %d/%d finished jobs written", done, n))
	}
	return st.Close()
}

// submitE2EJob submits one job and returns its ID (from the Location the
// server answers with), or an error unless the server answered 201.
func submitE2EJob(ctx context.Context, c *http.Client, url, token string, body []byte) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/jobs", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return "", fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return strings.TrimPrefix(resp.Header.Get("Location"), "/v1/jobs/"), nil
}

// listRunJobs lists the jobs of the run named name in the given states
// (comma-separated) through the API and returns their started_at -
// submitted_at (zero for those that have not started) and their count.
func listRunJobs(ctx context.Context, c *http.Client, url, token, name, states string) ([]time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/jobs?state="+states+"&name="+name, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("list %s jobs: %w", states, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("list %s jobs: %s", states, resp.Status)
	}
	var list struct {
		Jobs []struct {
			SubmittedAt *time.Time `json:"submitted_at"`
			StartedAt   *time.Time `json:"started_at"`
		} `json:"jobs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("list %s jobs: %w", states, err)
	}
	out := make([]time.Duration, len(list.Jobs))
	for i, j := range list.Jobs {
		if j.SubmittedAt != nil && j.StartedAt != nil {
			out[i] = j.StartedAt.Sub(*j.SubmittedAt)
		}
	}
	return out, nil
}

// startLatencies lists the run's Running jobs through the API and returns
// started_at - submitted_at of each.
func startLatencies(ctx context.Context, c *http.Client, url, token, name string) ([]time.Duration, error) {
	return listRunJobs(ctx, c, url, token, name, string(model.StateRunning))
}

// resetPeakRSS makes VmHWM start again from the current resident memory
// (Linux: clear_refs 5); where it cannot, the peak includes what came before.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// cpuTime returns the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
