package e2e

import (
	"bytes"
	"context"

	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/client"
)

// TestGatewayServesEndpoint runs an endpoint behind up's gateway and
// drives it through the CLI as a user would: endpoint create prints the
// URL; allot demo load --trace azure-code through it at 90 req/s (the
// trace's bursts and token counts, replayed as the simulator replays it),
// each request's token counts turned into its service time on an H100 by
// the simulator's serving model (about 0.2 s at a batch of 8, up to 8 s
// for the longest: some 40 req/s a replica, rated 28 req/s at the 4 s
// SLO), needs 4 replicas; the count converges to 4 ± 1 with the measured
// p95 within the SLO within 5 minutes (windows shortened to seconds), and
// the p95 the gateway measures stays within the SLO after; a rollout and a
// scale-in during a load of the same trace fail no request; and killing a
// replica's process during load fails at most the requests that were in
// flight on it.
func TestGatewayServesEndpoint(t *testing.T) {
	needServer(t)
	start := time.Now()
	dir := t.TempDir()
	url, admin := startUp(t, dir)
	tok := strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", "copilot"))
	const slo = 4000.0 // ms
	file := filepath.Join(dir, "chat.yaml")
	spec := `name: chat
tenant: copilot
model: demo
command: [allot, demo, serve, --gpu, H100, --service-time, 20ms, --concurrency, "8", --report-every, 2s]
resources: {gpu_milli: 250, gpu_models: [T4]}
min_replicas: 2
max_replicas: 8
slo: {p95_ms: 4000}
service_time_ms: 300
throughput: {T4: 28}
access: public
readiness: {path: /healthz, timeout: 1s}
autoscale: {scale_in_after: 15s, scale_in_interval: 3s, lead_time: 10s, peak_window: 15s}
`
	if err := os.WriteFile(file, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}

	// 1. create prints the endpoint's URL.
	out := allotMust(t, url, tok, "endpoint", "create", "-f", file)
	m := regexp.MustCompile(`(http://\S+/chat/)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("endpoint create printed no URL:\n%s", out)
	}
	epURL := m[1]
	ep := endpointWatch{t: t, url: url, tok: tok, name: "chat"}
	get, waitFor, running := ep.get, ep.waitFor, runningReplicas
	waitFor("the first replicas are routed and ready", 30*time.Second, func(e client.Endpoint) bool {
		return e.Gateway != nil && len(e.Gateway.Replicas) == 2 && e.Gateway.Replicas[0].Ready && e.Gateway.Replicas[1].Ready
	})
	t.Logf("%s: %s serves", time.Since(start).Round(time.Second), epURL)

	// 2. The Azure code trace at 90 req/s, through the CLI. Converged: the
	// replica count within 4 ± 1 and the p95 the gateways measured (over
	// 10 s, what the autoscaler samples) within the SLO, both for 15 s
	// running; the requests that queued on the first replica while the
	// others started (a burst of the trace at once) are served late before
	// that, and some time out.
	// Seed 3's arrivals run at 84-109 req/s over any 10 s of the 70: a
	// load of 4 replicas throughout. (Seed 1's burst of 161 req/s from the
	// 20th to the 30th second needs 6 for those seconds: the count then
	// converged only if it held 4 ± 1 for 15 s before the burst, which a
	// busy machine's slower start made it miss.)
	load := startLoad(t, epURL, "--trace", "azure-code", "--rps", "90", "--duration", "70s", "--seed", "3", "--timeout", "30s")
	loadStart := time.Now()
	var converged time.Time
	e := waitFor("the replica count converges to 4 ± 1 with the p95 within the SLO, and both hold 15 s", 5*time.Minute, func(e client.Endpoint) bool {
		n := running(e)
		switch {
		case n < 3 || n > 5 || e.Desired < 3 || e.Desired > 5 || e.Metrics == nil || e.Metrics.P95Ms > slo || e.Metrics.RequestsPerSec == 0:
			converged = time.Time{}
		case converged.IsZero():
			converged = time.Now()
		}
		return !converged.IsZero() && time.Since(converged) >= 15*time.Second
	})
	t.Logf("%s: converged to %d replicas %s after the load began (p95 %.0f ms); decision: %s", time.Since(start).Round(time.Second), running(e),
		converged.Sub(loadStart).Round(time.Second), e.Metrics.P95Ms, e.Reason)
	// After convergence the gateway's p95 stays within the SLO.
	worst := 0.0
	for range 10 {
		e = get()
		if e.Metrics == nil || e.Metrics.P95Ms > slo {
			t.Errorf("after convergence the measured p95 is over the %g ms SLO: %+v (gateway %+v)", slo, e.Metrics, e.Gateway)
		} else {
			worst = max(worst, e.Metrics.P95Ms)
		}
		time.Sleep(time.Second)
	}
	if g := e.Gateway; g == nil || g.Latency.P95Ms == 0 || g.RequestsPerSec < 20 {
		t.Errorf("endpoint show lacks the gateway's measurement: %+v", g)
	}
	res := load.wait(t)
	t.Logf("%s: the worst 10 s p95 after convergence %.0f ms; the load: %s", time.Since(start).Round(time.Second), worst, strings.ReplaceAll(res.out, "\n", "; "))

	// 3. A rollout during a load of the same trace: every replica replaced.
	// The trace's longest requests (1,900 generated tokens) take some 8 s
	// of service: the callers wait up to 30 s, so a failure is the
	// gateway's or the rollout's, not a caller's impatience.
	load = startLoad(t, epURL, "--trace", "azure-code", "--rps", "90", "--duration", "40s", "--seed", "2", "--timeout", "30s")
	time.Sleep(3 * time.Second)
	before := len(e.Events)
	if err := os.WriteFile(file, []byte(strings.Replace(spec, "--service-time, 20ms", "--service-time, 19ms", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	allotMust(t, url, tok, "endpoint", "update", file)
	e = waitFor("the new command is rolled out", 60*time.Second, func(e client.Endpoint) bool {
		for _, ev := range e.Events[min(before, len(e.Events)):] {
			if ev.Kind == "RolledOut" {
				return true
			}
		}
		return false
	})
	t.Logf("%s: rolled out under load", time.Since(start).Round(time.Second))

	// 4. A scale-in during the same load.
	n := running(e)
	allotMust(t, url, tok, "endpoint", "scale", "chat", "--min", "1", "--max", strconv.Itoa(n-1))
	waitFor("a replica is drained and stopped", 30*time.Second, func(e client.Endpoint) bool { return len(e.Replicas) == n-1 })
	t.Logf("%s: scaled in from %d to %d under load", time.Since(start).Round(time.Second), n, n-1)
	res = load.wait(t)
	if res.failed != 0 || res.ok == 0 {
		t.Fatalf("a rollout and a scale-in during the load failed requests:\n%s", res.out)
	}
	t.Logf("%s: load done: %s", time.Since(start).Round(time.Second), strings.ReplaceAll(res.out, "\n", "; "))

	// 5. Kill a replica's process during load: at most its requests in
	// flight fail (the demo server has 4 slots; at 200 req/s on 2 or 3
	// replicas it holds a few at once), and the rest go to the others.
	load = startLoad(t, epURL, "--rps", "200", "--duration", "12s")
	time.Sleep(4 * time.Second)
	// The victim is a replica the gateway routes to now: one the scale-in
	// above chose drains and stops by itself.
	victim, inFlight := "", -1
	if g := get().Gateway; g != nil {
		for _, r := range g.Replicas {
			if r.Routed && r.Ready {
				victim, inFlight = r.Job, r.InFlight
			}
		}
	}
	if victim == "" {
		t.Fatalf("no replica routed to under load: %+v", get().Gateway)
	}
	pid := replicaPID(t, victim)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill replica %s (pid %d): %v", victim, pid, err)
	}
	res = load.wait(t)
	t.Logf("%s: killed replica %s (about %d in flight on it a moment before): %s", time.Since(start).Round(time.Second), victim, inFlight,
		strings.ReplaceAll(res.out, "\n", "; "))
	if res.ok == 0 || res.failed > 12 {
		t.Errorf("killing one replica failed %d requests, more than the few in flight on it:\n%s", res.failed, res.out)
	}
	t.Logf("%s in all", time.Since(start).Round(time.Second))
}

// loadRun is an 'allot demo load' running.
type loadRun struct {
	cmd      *exec.Cmd
	out, err bytes.Buffer
	cancel   context.CancelFunc
}

type loadResult struct {
	out        string
	ok, failed int
}

// startLoad runs allot demo load against url with args.
func startLoad(t *testing.T, url string, args ...string) *loadRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	l := &loadRun{cancel: cancel}
	l.cmd = exec.CommandContext(ctx, bin, append([]string{"demo", "load", "--url", url, "--timeout", "5s"}, args...)...)
	l.cmd.Dir, l.cmd.Env = root, append(cleanEnv(), "HOME="+home)
	l.cmd.Stdout, l.cmd.Stderr = &l.out, &l.err
	if err := l.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = l.cmd.Wait() })
	return l
}

var loadLine = regexp.MustCompile(`ok (\d+), failed (\d+)`)

// wait waits for the load to end and reads what it printed.
func (l *loadRun) wait(t *testing.T) loadResult {
	t.Helper()
	if err := l.cmd.Wait(); err != nil {
		t.Fatalf("demo load: %v\n%s%s", err, l.out.String(), l.err.String())
	}
	l.cancel()
	r := loadResult{out: l.out.String()}
	m := loadLine.FindStringSubmatch(r.out)
	if m == nil {
		t.Fatalf("demo load printed no counts:\n%s", r.out)
	}
	r.ok, _ = strconv.Atoi(m[1])
	r.failed, _ = strconv.Atoi(m[2])
	return r
}

// replicaPID finds the process of replica job: the allot demo serve whose
// environment names the job.
func replicaPID(t *testing.T, job string) int {
	t.Helper()
	want := []byte("ALLOT_JOB_ID=" + job + "\x00")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(d + "/environ")
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		cmdline, _ := os.ReadFile(d + "/cmdline")
		if !bytes.Contains(cmdline, []byte("demo\x00serve")) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(d))
		if err == nil {
			return pid
		}
	}
	t.Fatalf("no process of replica %s found in /proc", job)
	return 0
}
