package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Attacks on the HTTP layer of the second security round (issue 43):
// connections held idle, dry runs that cost more than their request,
// /metrics read without a token, changes the audit log missed, and a
// revoked token's log stream (docs/security.md lists each with its test).

// fetch makes one GET at url with token (none when empty) and returns
// the status and the body.
func fetch(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Attack 43.6: a client opens more connections than the server holds,
// sends one GET /healthz on each and keeps them idle. The server (allot
// up, whose in-process agents share 127.0.0.1 with the attacker) must
// still answer a new client, the CLI of a tenant, and its agents, which
// run a job submitted during the hold (before, the idle connections held
// every slot and every new connection was reset until they timed out).
// The server holds --max-conns 1000 here so that the attack stays small.
func TestAttackIdleKeepAlive(t *testing.T) {
	needServer(t)
	const maxConns = 1000
	n := min(1500, openFiles(t)/3)
	if n <= maxConns {
		t.Skipf("open-file limit too low for the attack (%d connections)", n)
	}
	log := &syncBuffer{}
	data := filepath.Join(t.TempDir(), "data")
	url, admin, stop, err := startServerArgs(data, log, "up", "--data", data, "--listen", "127.0.0.1:0",
		"--fleet", filepath.Join(root, "examples/fleet.yaml"), "--tenants", filepath.Join(root, "examples/tenants.yaml"),
		"--log-level", "warn", "--max-conns", fmt.Sprint(maxConns))
	if err != nil {
		t.Fatalf("start allot up: %v\n%s", err, log.String())
	}
	defer stop()
	addr := strings.TrimPrefix(url, "http://")
	research := strings.TrimSpace(allotAtMust(t, url, admin, "token", "create", "--tenant", "research"))

	// The attack: n connections, each with one request answered and
	// kept alive.
	conns := make([]net.Conn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	next := make(chan int)
	var dialers sync.WaitGroup
	for range 50 {
		dialers.Go(func() {
			for i := range next {
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					continue
				}
				conns[i] = c
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: allot\r\n\r\n"); err != nil {
					continue
				}
				if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				_ = c.SetDeadline(time.Time{})
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	dialers.Wait()

	// During the hold: a new client, a tenant's CLI and the agents.
	cl := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	slowest := time.Duration(0)
	for i := range 10 {
		start := time.Now()
		resp, err := cl.Get(url + "/healthz")
		if err != nil {
			t.Fatalf("probe %d of /healthz from a new client during the hold: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		slowest = max(slowest, time.Since(start))
	}
	if slowest > time.Second {
		t.Errorf("the slowest /healthz of a new client took %v; want within 1 s", slowest)
	}
	start := time.Now()
	r := allotAt(t, url, research, "job", "submit", "-f", writeFile(t, "sleep.yaml", "name: sleeper\ntenant: research\n"+
		"command: [sleep, '30']\nresources: {gpu_milli: 250, gpu_models: [T4]}\n"), "-o", "json")
	if r.code != 0 {
		t.Fatalf("a tenant's submit during the hold: exit %d\n%s%s", r.code, r.out, r.err)
	}
	submitted := time.Since(start)
	var j struct{ ID string }
	if err := json.Unmarshal([]byte(r.out), &j); err != nil {
		t.Fatalf("job submit -o json: %v\n%s", err, r.out)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		out := allotAtMust(t, url, research, "job", "show", j.ID, "-o", "json")
		if strings.Contains(out, `"state": "Running"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job submitted during the hold never ran (the agents lost the server):\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%d idle connections; new clients' /healthz within %v, a submit in %v, the job ran after %v",
		n, slowest, submitted, time.Since(start))
}

// Attack 43.11: /metrics read without a token, and with a tenant's,
// named every tenant's cost, budget and endpoints. Now a request without a
// token reads no series of a tenant, a tenant's token only its own, and a
// metrics-reader token (for Prometheus) every one.
func TestAttackMetricsLeak(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	id := submit(t, research, writeFile(t, "t4.yaml", smallT4)) // a series of research's wait
	defer allot(t, adminToken, "job", "cancel", id)
	waitJob(t, research, id, "ran", func(j job) bool { return j.State == "Running" })

	labels := regexp.MustCompile(`\b(tenant|endpoint|partition)="([^"]*)"`)
	// owners returns the tenant, endpoint and partition label values of
	// the series of body, by label.
	owners := func(body string) map[string]map[string]bool {
		out := map[string]map[string]bool{}
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "#") {
				continue
			}
			for _, m := range labels.FindAllStringSubmatch(line, -1) {
				if out[m[1]] == nil {
					out[m[1]] = map[string]bool{}
				}
				out[m[1]][m[2]] = true
			}
		}
		return out
	}

	code, anon := fetch(t, serverURL+"/metrics", "")
	if code != 200 || !strings.Contains(anon, "allot_gpus") {
		t.Fatalf("anonymous /metrics: %d, want 200 with the fleet's series:\n%s", code, tail(anon, 2000))
	}
	if o := owners(anon); len(o) > 0 {
		t.Fatalf("anonymous /metrics names tenants, endpoints or partitions: %v", o)
	}

	code, own := fetch(t, serverURL+"/metrics", research)
	if code != 200 {
		t.Fatalf("research's /metrics: %d", code)
	}
	var eps struct{ Endpoints []struct{ Name string } }
	if c, body := fetch(t, serverURL+"/v1/endpoints", research); c != 200 || json.Unmarshal([]byte(body), &eps) != nil {
		t.Fatalf("research's endpoints: %d %s", c, body)
	}
	mine := map[string]map[string]bool{"tenant": {"research": true}, "partition": {"internal-ai": true}, "endpoint": {}}
	for _, e := range eps.Endpoints {
		mine["endpoint"][e.Name] = true
	}
	o := owners(own)
	if !o["tenant"]["research"] {
		t.Errorf("research's /metrics lacks its own series (tenant=\"research\")")
	}
	for label, values := range o {
		for v := range values {
			if !mine[label][v] {
				t.Errorf("research's /metrics shows %s=%q, not research's", label, v)
			}
		}
	}

	reader := strings.TrimSpace(must(t, adminToken, "token", "create", "--metrics", "--name", uniq(t, "prometheus")))
	code, all := fetch(t, serverURL+"/metrics", reader)
	if o := owners(all); code != 200 || !o["tenant"]["research"] || !o["tenant"]["hobbyist"] || len(o["partition"]) < 2 {
		t.Errorf("the metrics reader's /metrics: %d, labels %v; want every tenant's series", code, o)
	}
	if code, _ := fetch(t, serverURL+"/v1/jobs", reader); code != http.StatusForbidden {
		t.Errorf("a metrics-reader token lists jobs: %d, want 403", code)
	}
	if code, _ := fetch(t, serverURL+"/metrics", "not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("/metrics with an unknown token: %d, want 401", code)
	}
	waitUnauthenticated(t)
}

// Attack (issue 43, "Also"): a tenant follows a running job's log, and its
// token is revoked; the stream must end within seconds (before, it went on
// until the attempt ended, revoked or not).
func TestAttackRevokedTokenLogStream(t *testing.T) {
	needServer(t)
	name := uniq(t, "leaked")
	tok := strings.TrimSpace(must(t, adminToken, "token", "create", "--tenant", "research", "--name", name))
	id := submit(t, tok, writeFile(t, "long.yaml", "name: long\ntenant: research\nduration: 120s\n"+
		"command: [sleep, '120']\nresources: {gpu_milli: 250, gpu_models: [T4]}\n"))
	defer allot(t, adminToken, "job", "cancel", id)
	waitJob(t, tok, id, "ran", func(j job) bool { return j.State == "Running" })

	req, err := http.NewRequest("GET", serverURL+"/v1/jobs/"+id+"/logs?follow=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("follow the log: %d", resp.StatusCode)
	}
	ended := make(chan time.Time, 1)
	go func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		ended <- time.Now()
	}()
	time.Sleep(300 * time.Millisecond) // the stream is following
	select {
	case <-ended:
		t.Fatal("the stream ended before the revoke")
	default:
	}
	must(t, adminToken, "token", "revoke", name)
	revoked := time.Now()
	select {
	case at := <-ended:
		t.Logf("the stream ended %v after the revoke", at.Sub(revoked).Round(time.Millisecond))
	case <-time.After(3 * time.Second):
		t.Fatal("the log stream of a revoked token still runs 3 s after the revoke; want it ended")
	}
}

// Attack 43.9: sixteen dry runs of a batch of 1,000 jobs at once, each one
// request, kept both cores busy for 22 s. Now a tenant runs at most
// --max-dry-runs at once and a batch takes one per job from --job-rate:
// the flood is refused at once (429 with Retry-After), /healthz stays
// fast, and a small batch still goes through.
func TestAttackBatchDryRunFlood(t *testing.T) {
	needServer(t)
	globex := tokenFor(t, "globex")
	small := "name: small\ntenant: globex\ncommand: [x]\narray: 0-2\nresources: {gpu_milli: 250, gpu_models: [T4]}\n"
	if resp, e := call(t, "POST", "/v1/jobs/batch?dry_run=true", globex, "application/yaml", []byte(small)); resp.StatusCode != 200 {
		t.Fatalf("a dry run of a batch of 3: %d %+v", resp.StatusCode, e)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	probes := startProber(&wg, 5*time.Second, stop)
	flood := []byte("name: flood\ntenant: globex\ncommand: [x]\narray: 0-999\nresources: {gpu_milli: 250, gpu_models: [T4]}\n")
	// The flood: 16 clients, each sending the dry run again as soon as
	// it is answered, for 3 s.
	type answer struct {
		code       int
		retryAfter string
		msg        string
		took       time.Duration
	}
	var mu sync.Mutex
	var answers []answer
	var attack sync.WaitGroup
	start := time.Now()
	for range 16 {
		attack.Go(func() {
			cl := &http.Client{Timeout: 15 * time.Second}
			for time.Since(start) < 3*time.Second {
				req, _ := http.NewRequest("POST", serverURL+"/v1/jobs/batch?dry_run=true", bytes.NewReader(flood))
				req.Header.Set("Authorization", "Bearer "+globex)
				req.Header.Set("Content-Type", "application/yaml")
				sent := time.Now()
				resp, err := cl.Do(req)
				a := answer{}
				if err != nil {
					a.msg = err.Error()
				} else {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					a = answer{resp.StatusCode, resp.Header.Get("Retry-After"), string(body), 0}
				}
				a.took = time.Since(sent)
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
			}
		})
	}
	attack.Wait()
	flooded := time.Since(start)
	close(stop)
	wg.Wait()

	ran, refused, slowRefusal := 0, 0, time.Duration(0)
	for i, a := range answers {
		switch a.code {
		case http.StatusTooManyRequests:
			refused++
			slowRefusal = max(slowRefusal, a.took)
			if a.retryAfter == "" || !strings.Contains(a.msg, "limit: --") {
				t.Errorf("dry run %d: 429 without Retry-After or the limit named: %q %s", i, a.retryAfter, a.msg)
			}
		case http.StatusOK:
			ran++
		default:
			t.Errorf("dry run %d: %d %s", i, a.code, a.msg)
		}
	}
	slow := 0
	for _, p := range *probes {
		if p.took > 200*time.Millisecond {
			slow++
		}
	}
	t.Logf("%d dry runs of 1,000 jobs sent in %v: %d ran, %d refused (the slowest refusal took %v); %d of %d probes of /healthz over 200 ms",
		len(answers), flooded.Round(time.Millisecond), ran, refused, slowRefusal, slow, len(*probes))
	if ran > 3 {
		t.Errorf("%d dry runs of 1,000 jobs ran in 3 s; want the tenant held to --max-dry-runs at once and --job-rate jobs a second", ran)
	}
	if slowRefusal > time.Second {
		t.Errorf("a refusal took %v; want each at once", slowRefusal)
	}
	if len(*probes) == 0 || slow > len(*probes)/10 {
		t.Errorf("%d of %d probes of /healthz took over 200 ms during the flood", slow, len(*probes))
	}
	// Another tenant's small batch is not held up by globex's budget.
	acme := tokenFor(t, "acme")
	if resp, e := call(t, "POST", "/v1/jobs/batch?dry_run=true", acme, "application/yaml",
		[]byte(strings.ReplaceAll(small, "globex", "acme"))); resp.StatusCode != 200 {
		t.Errorf("acme's dry run of a batch of 3 after the flood: %d %+v", resp.StatusCode, e)
	}
}

// Attack 43.14: the administrator's changes of a tenant's job and endpoint
// went unrecorded, and a tenant's reservation create/delete loop wrote 301
// audit records in 10 s. Now each change by someone other than the owner
// is in the audit log, and a tenant's requests that write audit records
// are held to --audit-rate (429 beyond its burst).
func TestAttackAuditGaps(t *testing.T) {
	needServer(t)
	// A server of its own: the loop spends acme's budget of audited
	// requests, which other tests need.
	log := &syncBuffer{}
	url, admin, stop, err := startServer(filepath.Join(t.TempDir(), "data"), log)
	if err != nil {
		t.Fatalf("start allot server: %v\n%s", err, log.String())
	}
	defer stop()
	since := time.Now().UTC().Add(-time.Second)
	copilot := strings.TrimSpace(allotAtMust(t, url, admin, "token", "create", "--tenant", "copilot"))
	begin := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	var j struct{ ID string }
	out := allotAtMust(t, url, copilot, "job", "submit", "-o", "json", "-f", writeFile(t, "later.yaml",
		"name: later\ntenant: copilot\ncommand: [x]\nbegin: "+begin+"\nresources: {gpu_milli: 250, gpu_models: [T4]}\n"))
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("job submit -o json: %v\n%s", err, out)
	}
	id := j.ID
	ep := uniq(t, "audited")
	allotAtMust(t, url, copilot, "endpoint", "create", "-f", writeFile(t, "ep.yaml", "name: "+ep+"\ntenant: copilot\nmodel: demo\n"+
		"command: [sleep, '600']\nresources: {gpu_milli: 250, gpu_models: [T4]}\nmin_replicas: 1\nmax_replicas: 2\n"+
		"slo: {p95_ms: 150}\nthroughput: {T4: 15}\n"))

	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/jobs/" + id + "/hold", nil},
		{"POST", "/v1/jobs/" + id + "/release", nil},
		{"PATCH", "/v1/jobs/" + id, map[string]any{"priority": "standard:7"}},
		{"POST", "/v1/endpoints/" + ep + "/scale", map[string]any{"min_replicas": 1, "max_replicas": 3}},
		{"POST", "/v1/endpoints/" + ep + "/restart", nil},
	} {
		if code, body := send(t, url, c.method, c.path, admin, c.body); code >= 300 {
			t.Fatalf("admin %s %s: %d %s", c.method, c.path, code, body)
		}
	}
	code, body := send(t, url, "GET", "/v1/audit?actor=admin&since="+since.Format(time.RFC3339Nano), admin, nil)
	if code != 200 {
		t.Fatalf("audit listing: %d %s", code, body)
	}
	var audit struct {
		Records []struct{ Actor, Action, Object, Detail string } `json:"records"`
	}
	if err := json.Unmarshal(body, &audit); err != nil {
		t.Fatalf("audit listing: %v\n%s", err, body)
	}
	recorded := map[string]bool{}
	for _, r := range audit.Records {
		recorded[r.Action+" "+r.Object] = true
	}
	for _, want := range []string{"job.hold job/" + id, "job.release job/" + id, "job.update job/" + id,
		"endpoint.scale endpoint/" + ep, "endpoint.restart endpoint/" + ep} {
		if !recorded[want] {
			t.Errorf("the audit log lacks the admin's %s; it holds %v", want, recorded)
		}
	}

	// The loop: acme creates and deletes a reservation as fast as it
	// can for 40 rounds.
	acme := strings.TrimSpace(allotAtMust(t, url, admin, "token", "create", "--tenant", "acme"))
	loopStart := time.Now().UTC()
	refused, created := 0, 0
	var names []string
	for i := range 40 {
		now := time.Now().UTC()
		name := fmt.Sprintf("%s-%d", uniq(t, "churn"), i)
		code, body := send(t, url, "POST", "/v1/reservations", acme, map[string]any{"name": name,
			"sku": "ND96-A100x8-IB", "region": "westus", "count": 1,
			"start": now.Format(time.RFC3339), "end": now.Add(time.Hour).Format(time.RFC3339)})
		switch {
		case code == http.StatusTooManyRequests:
			refused++
			if !strings.Contains(string(body), "--audit-rate") {
				t.Errorf("429 without naming --audit-rate: %s", body)
			}
			continue
		case code != http.StatusCreated:
			t.Fatalf("acme reserves: %d %s", code, body)
		}
		created++
		names = append(names, name)
		if code, _ := send(t, url, "DELETE", "/v1/reservations/"+name, acme, nil); code == http.StatusTooManyRequests {
			refused++
		}
	}
	took := time.Since(loopStart)
	code, body = send(t, url, "GET", "/v1/audit?actor=acme&since="+loopStart.Format(time.RFC3339Nano), admin, nil)
	if code != 200 || json.Unmarshal(body, &audit) != nil {
		t.Fatalf("audit listing: %d %s", code, body)
	}
	t.Logf("40 rounds in %v: %d requests refused, %d reservations created, %d audit records", took.Round(time.Millisecond),
		refused, created, len(audit.Records))
	if bound := 20 + int(took.Seconds()) + 2; len(audit.Records) > bound {
		t.Errorf("a create/delete loop wrote %d audit records in %v; want at most %d (--audit-burst 20, --audit-rate 1/s)",
			len(audit.Records), took.Round(time.Millisecond), bound)
	}
}
