package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/api/wire"
	"github.com/allot-dev/allot/internal/client"
)

// Attacks of a tenant on its limits (issue 43: defects 4, 5 and 15): its
// endpoints past --max-jobs-per-tenant, a crash-looping endpoint that
// floods the store and drains a healthy node, and the top priority class
// at the on-demand price.

// limitsTenants is the agent lab's tenancy with a tenant whose partition
// has no guarantee (hobbyist), as the example tenants file has.
const limitsTenants = `partitions:
  - name: lab
    tier: internal
    guarantees:
      - {region: lab, gpu_model: H100, gpus: 16}
  - name: elastic
    tier: shared
tenants:
  - {name: team, kind: internal, partition: lab}
  - {name: rival, kind: customer, partition: lab}
  - {name: hobbyist, kind: customer, partition: elastic}
`

// startLimits runs 'allot server --agents virtual' on the agent lab's
// fleet with limitsTenants and the extra flags; its tenant token is team's.
func startLimits(t *testing.T, extra ...string) *agentLab {
	t.Helper()
	tenants := filepath.Join(t.TempDir(), "tenants.yaml")
	if err := os.WriteFile(tenants, []byte(limitsTenants), 0o600); err != nil {
		t.Fatal(err)
	}
	return startVirtualWith(t, tenants, extra...)
}

// endpoint reads endpoint name as token sees it.
func (l *agentLab) endpoint(t *testing.T, token, name string) client.Endpoint {
	t.Helper()
	var e client.Endpoint
	if err := json.Unmarshal([]byte(l.must(t, token, "endpoint", "show", name, "-o", "json")), &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// jobsOf lists the jobs of the lab's tenant, ended or not.
func (l *agentLab) jobsOf(t *testing.T) []labJob {
	t.Helper()
	var page struct{ Jobs []labJob }
	if err := json.Unmarshal([]byte(l.must(t, l.team, "job", "list", "-o", "json")), &page); err != nil {
		t.Fatal(err)
	}
	return page.Jobs
}

// Attack 43.4: endpoints with max_replicas 100 and forged load scale past
// --max-jobs-per-tenant (400 live jobs under a limit of 5). The replicas
// must count against the limit: the scale-out stops there with an event
// naming it, and an endpoint whose min_replicas alone pass it is refused,
// naming min_replicas.
func TestAttackEndpointsPastJobLimit(t *testing.T) {
	lab := startLimits(t, "--max-jobs-per-tenant", "5")
	doc := func(name string, minReplicas int) map[string]any {
		return map[string]any{"name": name, "tenant": "team", "model": "m", "command": []string{"sleep", "600"},
			"resources":    map[string]any{"gpu_milli": 250, "gpu_models": []string{"H100"}},
			"min_replicas": minReplicas, "max_replicas": 100, "slo": map[string]any{"p95_ms": 100},
			"throughput": map[string]any{"H100": 1}}
	}
	code, body := send(t, lab.url, "POST", "/v1/endpoints", lab.team, doc("wide", 6))
	var refusal errorBody
	_ = json.Unmarshal(body, &refusal)
	if code == http.StatusCreated || refusal.Field != "min_replicas" || !strings.Contains(refusal.Message, "--max-jobs-per-tenant") {
		t.Errorf("an endpoint with min_replicas 6 under a limit of 5: %d %s, want a refusal naming min_replicas and the flag", code, body)
	}
	names := []string{"flood-a", "flood-b"}
	for _, name := range names {
		if code, body := send(t, lab.url, "POST", "/v1/endpoints", lab.team, doc(name, 1)); code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, code, body)
		}
	}
	// Forged load: the tenant reports for its own endpoints, far past what
	// one replica serves, until the autoscaler wants max_replicas.
	load := map[string]any{"requests_per_sec": 1000, "p95_ms": 5000, "utilisation": 1, "replica": "forged"}
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		for _, name := range names {
			if code, body := send(t, lab.url, "POST", "/v1/endpoints/"+name+"/metrics", lab.team, load); code != http.StatusNoContent {
				t.Fatalf("report load of %s: %d %s", name, code, body)
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	live := 0
	for _, j := range lab.jobsOf(t) {
		if j.State != "Succeeded" && j.State != "Failed" && j.State != "Canceled" {
			live++
		}
	}
	if live > 5 {
		t.Fatalf("%d jobs of team not ended under --max-jobs-per-tenant 5", live)
	}
	refused := false
	for _, name := range names {
		e := lab.endpoint(t, lab.team, name)
		if e.Desired <= 5 {
			t.Errorf("endpoint %s wants %d replicas: the forged load did not ask past the limit", name, e.Desired)
		}
		for _, ev := range e.Events {
			refused = refused || ev.Kind == "ReplicaRefused" && strings.Contains(ev.Reason, "--max-jobs-per-tenant")
		}
	}
	if !refused {
		t.Errorf("no endpoint has a ReplicaRefused event naming --max-jobs-per-tenant")
	}
	out := lab.must(t, lab.team, "endpoint", "show", names[0])
	if !strings.Contains(out, "ReplicaRefused") && !strings.Contains(lab.must(t, lab.team, "endpoint", "show", names[1]), "ReplicaRefused") {
		t.Errorf("endpoint show says nothing of the refused scale-out:\n%s", out)
	}
	t.Logf("%d jobs of team live; %s", live, out[strings.LastIndex(out, "ReplicaRefused"):])
}

// Attack 43.5: an endpoint whose program exits at once has its replicas
// replaced at every reconcile (146 job records in 12 s), and their
// failures, each a job of its own, drained a healthy node once another
// tenant's job failed there too. Replicas must back off (10 s doubling,
// shown by endpoint show), and one endpoint's failures count as one
// program for the drain.
func TestAttackCrashLoopingEndpoint(t *testing.T) {
	lab := startLimits(t, "--drain-after-failures", "3")
	start := time.Now()
	file := writeFile(t, "crash.yaml", `name: crash
tenant: team
model: m
command: [sh, -c, "exit 3"]
resources: {gpus_per_instance: 1, gpu_models: [H100]}
min_replicas: 2
max_replicas: 2
slo: {p95_ms: 100}
throughput: {H100: 10}
`)
	lab.must(t, lab.team, "endpoint", "create", "-f", file)
	// Another tenant's job fails once, on the node the replicas crash on
	// (the core packs them onto one).
	rival := lab.as(strings.TrimSpace(lab.must(t, lab.admin, "token", "create", "--tenant", "rival")))
	other := rival.submit(t, "name: flaky\ntenant: rival\ncommand: [sh, -c, \"exit 1\"]\nresources: {gpus_per_instance: 1, gpu_models: [H100]}\n")
	failed := rival.waitState(t, other, "Failed", 15*time.Second)
	node := "-"
	if h := failed.AttemptHistory; len(h) > 0 && len(h[0].Nodes) > 0 {
		node = h[0].Nodes[0]
	}

	// 12 s of crash looping in all.
	time.Sleep(time.Until(start.Add(12 * time.Second)))
	records := 0
	for _, j := range lab.jobsOf(t) {
		if strings.HasPrefix(j.ID, "crash-replica-") {
			records++
		}
	}
	e := lab.endpoint(t, lab.team, "crash")
	if records > 4 {
		t.Errorf("%d replica records in %s: the crash loop is not backed off (want at most 4: two replicas, 10 s apart)",
			records, time.Since(start).Round(time.Second))
	}
	if e.BackOff == nil || e.BackOff.Failures < 1 || e.BackOff.Until.IsZero() {
		t.Errorf("endpoint show has no back-off: %+v", e.BackOff)
	}
	out := lab.must(t, lab.team, "endpoint", "show", "crash")
	if !strings.Contains(out, "Back-off:") || !strings.Contains(out, "BackOff") {
		t.Errorf("endpoint show says nothing of the back-off:\n%s", out)
	}
	var nodes struct{ Nodes []wire.Node }
	if err := json.Unmarshal([]byte(lab.must(t, lab.admin, "node", "list", "-o", "json")), &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Nodes {
		if n.Drain != nil {
			t.Errorf("node %s drained by %s: %s (rival's job failed on %s)", n.Name, n.Drain.By, n.Drain.Reason, node)
		}
	}
	t.Logf("%d replica records in %s; rival's job failed on %s; %s", records, time.Since(start).Round(time.Second), node,
		out[strings.Index(out, "Back-off:"):][:strings.Index(out[strings.Index(out, "Back-off:"):], "\n")])
}

// Attack 43.15: a tenant without a guarantee submits priority
// reserved:100 (the class of guaranteed or bought capacity) at the
// on-demand price and preempts others' standard work. The class must be
// refused at submit, naming the field, and so must raising a queued job to
// it; a tenant whose partition has a guarantee keeps it.
func TestAttackTopClassWithoutGuarantee(t *testing.T) {
	needServer(t)
	hobbyist := tokenFor(t, "hobbyist")
	job := map[string]any{"name": "vip", "tenant": "hobbyist", "priority": "reserved:100", "duration": "1s",
		"resources": map[string]any{"gpus_per_instance": 1, "gpu_models": []string{"T4"}}}
	code, body := send(t, serverURL, "POST", "/v1/jobs", hobbyist, job)
	var refusal errorBody
	_ = json.Unmarshal(body, &refusal)
	want := `class "reserved" is not allowed for tenant "hobbyist" (allowed: spot, standard)`
	if code != http.StatusForbidden || refusal.Field != "priority" || !strings.Contains(refusal.Message, want) {
		t.Fatalf("hobbyist submits priority reserved:100: %d %s, want 403 naming priority: %s", code, body, want)
	}
	// Raising a queued job to the class is refused the same way.
	job["priority"], job["begin"] = "standard", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	code, body = send(t, serverURL, "POST", "/v1/jobs", hobbyist, job)
	var queued struct{ ID string }
	if err := json.Unmarshal(body, &queued); code != http.StatusCreated || err != nil {
		t.Fatalf("hobbyist submits a standard job: %d %s", code, body)
	}
	defer send(t, serverURL, "POST", "/v1/jobs/"+queued.ID+"/cancel", hobbyist, nil)
	code, body = send(t, serverURL, "PATCH", "/v1/jobs/"+queued.ID, hobbyist, map[string]any{"priority": "reserved:100"})
	refusal = errorBody{}
	_ = json.Unmarshal(body, &refusal)
	if code != http.StatusForbidden || refusal.Field != "priority" {
		t.Errorf("hobbyist raises its queued job to reserved:100: %d %s, want 403 naming priority", code, body)
	}
	// A tenant of a partition with a guarantee may use the class (held
	// back by its begin time, so that it preempts nothing of other tests).
	copilot := tokenFor(t, "copilot")
	job = map[string]any{"name": "own", "tenant": "copilot", "priority": "reserved:100", "duration": "1s",
		"begin":     time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		"resources": map[string]any{"gpus_per_instance": 1, "gpu_models": []string{"H100"}}}
	code, body = send(t, serverURL, "POST", "/v1/jobs", copilot, job)
	var own struct{ ID string }
	if err := json.Unmarshal(body, &own); code != http.StatusCreated || err != nil {
		t.Fatalf("copilot (guaranteed partition) submits reserved:100: %d %s", code, body)
	}
	send(t, serverURL, "POST", "/v1/jobs/"+own.ID+"/cancel", copilot, nil)
}
