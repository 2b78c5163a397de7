package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/client"
	"github.com/allot-dev/allot/internal/demo"
)

// TestEndpointScalesWithLoad runs an inference endpoint under 'allot up'
// (virtual agents: the replicas are real 'allot demo serve' processes
// reporting to the server with the endpoint's token): load beyond one
// replica's throughput adds replicas, and once the load stops the
// endpoint scales back in, step by step, with every decision and its
// reason in 'allot endpoint show'.
func TestEndpointScalesWithLoad(t *testing.T) {
	needServer(t)
	start := time.Now()
	dir := t.TempDir()
	url, admin := startUp(t, dir)
	tok := strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", "copilot"))

	// T4 quarters rated at 15 requests/s: 60 requests/s needs more than
	// the four replicas max_replicas allows. Scale-in is tuned to seconds.
	file := filepath.Join(dir, "chat.yaml")
	if err := os.WriteFile(file, []byte(`name: chat
tenant: copilot
model: demo
command: [allot, demo, serve, --service-time, 20ms, --concurrency, "8", --report-every, 2s]
resources: {gpu_milli: 250, gpu_models: [T4]}
min_replicas: 1
max_replicas: 4
slo: {p95_ms: 150}
throughput: {T4: 15}
autoscale: {scale_in_after: 10s, scale_in_interval: 2s, lead_time: 10s, peak_window: 10s}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	allotMust(t, url, tok, "endpoint", "create", "-f", file)

	ep := endpointWatch{t: t, url: url, tok: tok, name: "chat"}
	waitFor, running := ep.waitFor, runningReplicas
	// 1. The first replica runs and says where it listens.
	e := waitFor("the first replica runs", 20*time.Second, func(e client.Endpoint) bool { return running(e) == 1 })
	first := e.Replicas[0].Job
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	var replicaURL string
	for deadline := time.Now().Add(15 * time.Second); replicaURL == ""; time.Sleep(300 * time.Millisecond) {
		if m := listening.FindStringSubmatch(allotAt(t, url, tok, "job", "logs", first).out); m != nil {
			replicaURL = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("replica %s never said where it listens", first)
		}
	}
	t.Logf("%s: replica %s listens on %s", time.Since(start).Round(time.Second), first, replicaURL)

	// 2. Load: 60 requests/s on the first replica for 15 s.
	loadCtx, cancelLoad := context.WithCancel(context.Background())
	defer cancelLoad()
	loaded := make(chan demo.LoadResult, 1)
	go func() {
		res, _ := demo.Load(loadCtx, demo.LoadConfig{URL: replicaURL + "/", RPS: 60, Duration: 15 * time.Second, Timeout: 5 * time.Second})
		loaded <- res
	}()
	e = waitFor("replicas are added under load", 20*time.Second, func(e client.Endpoint) bool {
		return e.Desired > 1 && running(e) > 1
	})
	t.Logf("%s: under load: desired %d, %d running", time.Since(start).Round(time.Second), e.Desired, running(e))
	res := <-loaded
	if res.OK == 0 {
		t.Fatalf("the load got no answer: %s", res)
	}
	t.Logf("%s: load done: %s", time.Since(start).Round(time.Second), res)

	// 3. Without load the endpoint scales back in to min_replicas.
	e = waitFor("replicas are removed once the load stopped", 45*time.Second, func(e client.Endpoint) bool {
		return e.Desired == 1 && len(e.Replicas) == 1
	})
	t.Logf("%s: scaled in", time.Since(start).Round(time.Second))
	kinds := map[string]int{}
	for _, ev := range e.Events {
		kinds[ev.Kind]++
		if ev.Reason == "" {
			t.Errorf("event without a reason: %+v", ev)
		}
	}
	if kinds["ScaleOut"] == 0 || kinds["ScaleIn"] == 0 {
		t.Fatalf("events %+v, want scale-outs and scale-ins", e.Events)
	}
	out := allotMust(t, url, tok, "endpoint", "show", "chat")
	for _, want := range []string{"ScaleOut", "ScaleIn", "scaling in from", "forecast", "Created"} {
		if !strings.Contains(out, want) {
			t.Errorf("endpoint show lacks %q:\n%s", want, out)
		}
	}
	// 4. A new command is rolled out: the replica of the old one serves
	// until the new one has reported its load, then a restart replaces
	// the new one the same way.
	rolled := func(e client.Endpoint, after int) bool {
		return len(e.Events) > after && e.Events[len(e.Events)-1].Kind == "RolledOut" && len(e.Replicas) == 1 && !e.Replicas[0].Outdated
	}
	v2, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(v2), "--service-time, 20ms", "--service-time, 10ms", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	old, before := e.Replicas[0].Job, len(e.Events)
	allotMust(t, url, tok, "endpoint", "update", file)
	e = waitFor("the new command is rolled out", 30*time.Second, func(e client.Endpoint) bool { return rolled(e, before) })
	if e.Replicas[0].Job == old {
		t.Fatalf("the old replica survived the rollout: %+v", e.Replicas)
	}
	if state := allotMust(t, url, tok, "job", "show", old, "-o", "json"); !strings.Contains(state, `"state": "Canceled"`) {
		t.Errorf("the replaced replica is not Canceled:\n%s", state)
	}
	if cmd := allotMust(t, url, tok, "job", "show", e.Replicas[0].Job, "-o", "json"); !strings.Contains(cmd, `"10ms"`) {
		t.Errorf("the new replica does not run the new command:\n%s", cmd)
	}
	second, before := e.Replicas[0].Job, len(e.Events)
	if r := allotAt(t, url, tok, "endpoint", "restart", "chat", "--wait", "30s"); r.code != 0 || !strings.Contains(r.err, "chat: rolled out template") {
		t.Fatalf("restart --wait: exit %d\n%s%s", r.code, r.out, r.err)
	}
	e = waitFor("the restart is rolled out", time.Second, func(e client.Endpoint) bool { return rolled(e, before) && e.Replicas[0].Job != second })
	t.Logf("%s: rolled out a new command and a restart", time.Since(start).Round(time.Second))

	allotMust(t, url, tok, "endpoint", "delete", "chat")
	if r := allotAt(t, url, tok, "endpoint", "show", "chat"); r.code == 0 {
		t.Fatalf("endpoint show after delete: %s", r.out)
	}
	t.Logf("%s in all", time.Since(start).Round(time.Second))
}

// endpointWatch reads an endpoint through the CLI with a token.
type endpointWatch struct {
	t              *testing.T
	url, tok, name string
}

// get is 'allot endpoint show NAME -o json'.
func (w endpointWatch) get() client.Endpoint {
	w.t.Helper()
	var e client.Endpoint
	if err := json.Unmarshal([]byte(allotMust(w.t, w.url, w.tok, "endpoint", "show", w.name, "-o", "json")), &e); err != nil {
		w.t.Fatal(err)
	}
	return e
}

// waitFor reads the endpoint every half second until ok says it is as
// wanted, failing the test after limit with what it is instead.
func (w endpointWatch) waitFor(what string, limit time.Duration, ok func(client.Endpoint) bool) client.Endpoint {
	w.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		e := w.get()
		if ok(e) {
			return e
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("after %s: %s; endpoint: desired %d, replicas %+v, metrics %+v, gateway %+v\ndecision: %s\nevents: %+v",
				limit, what, e.Desired, e.Replicas, e.Metrics, e.Gateway, e.Reason, e.Events)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// runningReplicas counts the endpoint's replicas that run.
func runningReplicas(e client.Endpoint) (n int) {
	for _, r := range e.Replicas {
		if r.State == "Running" {
			n++
		}
	}
	return n
}
