package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// runBenchE2ERemote is bench e2e against a server that runs as its own
// process (--server): no server, store or fleet in this process, only the
// clients. It reads as:
//
//  1. read the fleet through the API (an admin token: the nodes and their
//     free H100 GPUs; any other: every job must fit);
//  2. read /metrics, submit from the clients, and once every submit is
//     answered poll the run's jobs that have not started until none but
//     those that do not fit remain; read /metrics again (measure);
//  3. read each job's started_at - submitted_at through the API;
//  4. cancel the jobs the run submitted;
//  5. print, and compare with --baseline.
func runBenchE2ERemote(ctx context.Context, out, errOut io.Writer, f benchE2EFlags) error {
	switch {
	case f.nodesSet:
		return Usage(errors.New("--nodes: with --server the fleet is the server's"))
	case f.history > 0 || f.store != "":
		return Usage(errors.New("--history and --store set up an in-process server; with --server the store is the server's"))
	}
	if f.token == "" {
		f.token = os.Getenv("ALLOT_TOKEN")
	}
	if f.token == "" {
		return Usage(errors.New("--server needs a token: --token, or $ALLOT_TOKEN"))
	}
	base, err := loadBaseline(f.baseline, benchE2EFigures)
	if err != nil {
		return err
	}
	progress := newProgress(errOut).line
	run := newE2ERun(f.server, f.token, f.tenant, f, progress)

	// 1. Fleet.
	fleet, err := readRemoteFleet(ctx, run.client, f.server, f.token)
	if err != nil {
		return err
	}
	r := benchE2EResult{Nodes: fleet.nodes, GPUsPerNode: fleet.gpusPerNode, Jobs: f.jobs, Clients: f.clients,
		Server: "external", GOMAXPROCS: runtime.GOMAXPROCS(0), LoadAvgAtStart: loadAvg()}
	if err := base.sameSettings(r); err != nil {
		return err
	}
	run.capacity = f.jobs
	if fleet.known {
		run.capacity = fleet.freeH100
	}

	// 2. Measure.
	run.running = func(ctx context.Context, acked int) (int, error) {
		waiting, err := listRunJobs(ctx, run.client, run.url, run.token, run.name, "Queued,Preparing,Blocked")
		return acked - len(waiting), err
	}
	before, err := scrapeServer(ctx, run.client, f.server, f.token)
	if err != nil {
		return err
	}
	if !before.hasProcess {
		return fmt.Errorf("the server's /metrics has no process_cpu_seconds_total")
	}
	r.RSSStartMiB = before.rssMiB
	cpu0 := cpuTime()
	err = run.measure(ctx, &r)
	cpu := cpuTime() - cpu0
	if err != nil {
		cancelRun(ctx, run, errOut)
		return err
	}
	after, err := settledScrape(ctx, run.client, f.server, f.token, before)
	if err != nil {
		return err
	}
	r.Cycles = uint64(after.cycles - before.cycles)
	if r.CycleSplit, err = cycleSplit(before, after); err != nil {
		return err
	}
	r.RSSPeakMiB = max(before.rssMiB, after.rssMiB)
	progress("")
	if r.Errors > 0 {
		fmt.Fprintf(errOut, "%d submits failed; the first: %s\n", r.Errors, run.firstErr)
	}

	// 3. Latencies; the listing counts what runs.
	lat, err := startLatencies(ctx, run.client, f.server, f.token, run.name)
	if err != nil {
		return err
	}
	r.Running = len(lat)
	r.JobsPerS = float64(r.Running) / r.AllRunningS
	if r.Running > 0 {
		r.CPUPerJobMs = (after.cpuS - before.cpuS) * 1000 / float64(r.Running)
		r.ClientCPUPerJobMs = float64(cpu.Microseconds()) / 1000 / float64(r.Running)
	}
	r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyMaxMs = latencyFigures(lat)

	// 4. Clean up.
	if !f.keep {
		cancelRun(ctx, run, errOut)
	}

	// 5. Report.
	return reportE2E(out, errOut, f.output, base, r)
}

// remoteFleet is what bench e2e learns of a server's fleet.
type remoteFleet struct {
	known       bool // the token could read GET /v1/nodes
	nodes       int
	gpusPerNode int // 0 where nodes differ
	freeH100    int // whole free H100 GPUs on Ready nodes
}

// readRemoteFleet reads GET /v1/nodes; a token that may not (not an
// admin's) leaves the fleet unknown.
func readRemoteFleet(ctx context.Context, c *http.Client, url, token string) (remoteFleet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/nodes", nil)
	if err != nil {
		return remoteFleet{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return remoteFleet{}, fmt.Errorf("read the fleet: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusForbidden:
		return remoteFleet{}, nil
	default:
		return remoteFleet{}, fmt.Errorf("read the fleet: GET /v1/nodes: %s", resp.Status)
	}
	var list struct {
		Nodes []struct {
			Health       string `json:"health"`
			GPUs         int    `json:"gpus"`
			GPUModel     string `json:"gpu_model"`
			FreeGPUMilli int64  `json:"free_gpu_milli"`
		} `json:"nodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return remoteFleet{}, fmt.Errorf("read the fleet: %w", err)
	}
	f := remoteFleet{known: true, nodes: len(list.Nodes)}
	for i, n := range list.Nodes {
		if i == 0 {
			f.gpusPerNode = n.GPUs
		} else if n.GPUs != f.gpusPerNode {
			f.gpusPerNode = 0
		}
		if n.Health == "Ready" && n.GPUModel == "H100" {
			f.freeH100 += int(n.FreeGPUMilli / 1000)
		}
	}
	return f, nil
}

// cancelRun cancels every job the run submitted, from as many clients as
// submitted them, and says on errOut how many it could not.
func cancelRun(ctx context.Context, run *e2eRun, errOut io.Writer) {
	run.idMu.Lock()
	ids := run.ids
	run.idMu.Unlock()
	var next, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range run.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(ids)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				if err := cancelJob(ctx, run.client, run.url, run.token, ids[i]); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		fmt.Fprintf(errOut, "could not cancel %d of the %d jobs the bench submitted; the first: %s\n", n, len(ids), firstErr.Load())
	}
}

func cancelJob(ctx context.Context, c *http.Client, url, token, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/jobs/"+id+"/cancel", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("cancel %s: %s", id, resp.Status)
	}
	return nil
}
