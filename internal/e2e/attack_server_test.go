package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Attacks on the control plane's rules, each performed as an attacker
// would through the API (docs/security.md lists every attack and its test).

// send makes one API request at url with token and a JSON body (nil for
// none) and returns the status and the body.
func send(t *testing.T, url, method, path, token string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// Attack 5: a tenant with no guarantee and no quota reserves every H100
// node of a region from 2020 to 9999, and internal work waits behind it.
func TestAttackUnlimitedReservation(t *testing.T) {
	needServer(t)
	all := map[string]any{"name": "mine-forever", "sku": "ND96-H100x8-IB", "region": "eastus", "count": 8,
		"start": "2020-01-01T00:00:00Z", "end": "9999-01-01T00:00:00Z"}
	code, body := send(t, serverURL, "POST", "/v1/reservations", tokenFor(t, "hobbyist"), all)
	if code != http.StatusForbidden {
		t.Fatalf("hobbyist (no reservation limits) reserves all eastus H100 nodes until 9999: %d %s, want 403", code, body)
	}
	// A tenant that may reserve is held to its limits: duration, nodes at
	// once, and its quota (acme: 720h, 4 nodes, 16 ND GPUs in eastus).
	all["name"] = "acme-forever"
	code, body = send(t, serverURL, "POST", "/v1/reservations", tokenFor(t, "acme"), all)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "QuotaExceeded") {
		t.Fatalf("acme reserves until 9999: %d %s, want 400 QuotaExceeded", code, body)
	}
	now := time.Now().UTC()
	three := map[string]any{"name": "acme-three", "sku": "ND96-H100x8-IB", "region": "eastus", "count": 3,
		"start": now.Format(time.RFC3339), "end": now.Add(time.Hour).Format(time.RFC3339)}
	code, body = send(t, serverURL, "POST", "/v1/reservations", tokenFor(t, "acme"), three)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "quota") {
		t.Fatalf("acme reserves 24 H100 GPUs on a 16-GPU quota: %d %s, want 400 naming the quota", code, body)
	}
	// The administrator sells capacity and is not limited.
	three["owner"], three["name"] = "hobbyist", "admin-sold"
	if code, body = send(t, serverURL, "POST", "/v1/reservations", adminToken, three); code != http.StatusCreated {
		t.Fatalf("admin reserves for hobbyist: %d %s", code, body)
	}
	if code, body = send(t, serverURL, "DELETE", "/v1/reservations/admin-sold", adminToken, nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, body)
	}
}

// Attack 6: a node's token reports an event for a rank of a gang that runs
// on another node, so the gang ends Succeeded while that rank still runs.
func TestAttackNodeEndsAnotherNodesRank(t *testing.T) {
	needServer(t)
	dir := t.TempDir()
	log := &syncBuffer{}
	url, admin, stop, err := startServerArgs(filepath.Join(dir, "data"), log, "server",
		"--data", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0",
		"--fleet", filepath.Join(root, "internal/e2e/testdata/agent-fleet.yaml"),
		"--tenants", filepath.Join(root, "internal/e2e/testdata/agent-tenants.yaml"),
		"--agents", "external", "--tick", "200ms", "--rate-limit", "0")
	if err != nil {
		t.Fatalf("start server: %v\n%s", err, log.String())
	}
	defer stop()
	// Two nodes register with their own node tokens; the test plays their
	// agents.
	nodes := []string{"h100-01", "h100-02"}
	tokens := map[string]string{}
	gpus := make([]map[string]any, 8)
	for i := range gpus {
		gpus[i] = map[string]any{"index": i, "uuid": fmt.Sprintf("GPU-%d", i), "model": "H100", "memory_mib": 81920}
	}
	for _, n := range nodes {
		tokens[n] = strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--node", n))
		if code, body := send(t, url, "POST", "/v1/nodes/"+n+"/register", tokens[n], map[string]any{"gpus": gpus}); code != 200 {
			t.Fatalf("register %s: %d %s", n, code, body)
		}
	}
	team := strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", "team"))
	code, body := send(t, url, "POST", "/v1/jobs", team, map[string]any{"name": "gang", "command": []string{"sleep", "600"},
		"resources": map[string]any{"instance_count": 2, "gpus_per_instance": 8}})
	if code != http.StatusCreated {
		t.Fatalf("submit: %d %s", code, body)
	}
	var job struct{ ID string }
	_ = json.Unmarshal(body, &job)
	// Each node starts the rank it is assigned.
	rankOn := map[string]int{}
	deadline := time.Now().Add(15 * time.Second)
	for len(rankOn) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the gang was not assigned to both nodes within 15s: %v\n%s", rankOn, tail(log.String(), 4096))
		}
		for _, n := range nodes {
			_, body := send(t, url, "GET", "/v1/nodes/"+n+"/assignments", tokens[n], nil)
			var as struct {
				Run []struct {
					Job     string
					Attempt int
					Rank    int
				}
			}
			_ = json.Unmarshal(body, &as)
			for _, a := range as.Run {
				if a.Job == job.ID {
					rankOn[n] = a.Rank
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, n := range nodes {
		ev := map[string]any{"type": "started", "rank": rankOn[n], "node": n}
		if code, body := send(t, url, "POST", "/v1/jobs/"+job.ID+"/attempts/1/events", tokens[n], ev); code != 200 {
			t.Fatalf("%s reports its rank started: %d %s", n, code, body)
		}
	}
	// The attack: h100-01 reports h100-02's rank exited 0, in its own name.
	victim := rankOn["h100-02"]
	ev := map[string]any{"type": "exited", "rank": victim, "node": "h100-01", "exit_code": 0, "outcome": "Exited"}
	if code, body := send(t, url, "POST", "/v1/jobs/"+job.ID+"/attempts/1/events", tokens["h100-01"], ev); code != http.StatusForbidden {
		t.Fatalf("h100-01 reports rank %d of h100-02 exited: %d %s, want 403", victim, code, body)
	}
	ev = map[string]any{"type": "exited", "rank": rankOn["h100-01"], "node": "h100-01", "exit_code": 0, "outcome": "Exited"}
	if code, body := send(t, url, "POST", "/v1/jobs/"+job.ID+"/attempts/1/events", tokens["h100-01"], ev); code != 200 {
		t.Fatalf("h100-01 reports its own rank exited: %d %s", code, body)
	}
	code, body = send(t, url, "GET", "/v1/jobs/"+job.ID, team, nil)
	var got struct{ State string }
	_ = json.Unmarshal(body, &got)
	if code != 200 || got.State != "Running" {
		t.Fatalf("with rank %d still running on h100-02 the job is %d %s, want Running", victim, code, got.State)
	}
}

// allotMust runs the CLI against url and fails the test unless it exits 0.
func allotMust(t *testing.T, url, token string, args ...string) string {
	t.Helper()
	r := allotAt(t, url, token, args...)
	if r.code != 0 {
		t.Fatalf("allot %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.out, r.err)
	}
	return r.out
}

// Attack 4: a job that takes its node's agent down with it (`kill -9
// $PPID` where jobs run as the agent's user) makes every attempt be lost;
// lost attempts never counted, so it looped forever. Here the test plays
// the job's part: it SIGKILLs the agent whenever the job runs on it, and
// starts it again once the server gave the attempt up (an agent back
// sooner adopts the job: nothing is lost). The job must end Failed
// (LostTooOften) past --max-lost-attempts, held back for the back-off (10
// s after the first loss) in between.
func TestAttackCrashLoopingJob(t *testing.T) {
	lab := startLab(t, "--max-lost-attempts", "1")
	id := lab.submit(t, `name: crash-loop
tenant: team
command: ["sleep", "600"]
resources: {gpus_per_instance: 8}
checkpoint: {grace: 1s}
`)
	for round := 1; ; round++ {
		j := lab.wait(t, id, "Running or ended", 60*time.Second, func(j labJob) bool {
			return j.State == "Running" || j.State == "Failed"
		})
		if j.State == "Failed" {
			if j.Reason != "LostTooOften" || round != 3 {
				t.Fatalf("job Failed with %s (%s) after %d lost attempts; want LostTooOften after the 2nd", j.Reason, j.Detail, round-1)
			}
			return
		}
		if h := j.AttemptHistory; round == 2 && len(h) == 2 && h[1].Started.Sub(h[0].Ended) < 10*time.Second {
			t.Errorf("attempt 2 started %s after attempt 1 was lost (server times); the back-off is 10s", h[1].Started.Sub(h[0].Ended))
		}
		if round > 2 {
			t.Fatalf("job runs a %d. attempt; with --max-lost-attempts 1 the 2nd lost attempt must fail it", round)
		}
		node := j.Allocations[0].Node
		lab.killAgent(t, node)
		j = lab.wait(t, id, "requeued", 30*time.Second, func(j labJob) bool { return j.State != "Running" })
		lab.startAgent(t, node)
		if round == 1 && j.Reason != "BackingOff" {
			t.Errorf("after the first lost attempt: %s (%s), want BackingOff", j.Reason, j.Detail)
		}
	}
}
