package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// job is the part of the API's Job the tests look at.
type job struct {
	ID, Name, Tenant, State, Reason, Detail string
	Allocations                             []struct {
		Node     string `json:"node"`
		GPUMilli int64  `json:"gpu_milli"`
	} `json:"allocations"`
}

// writeFile writes a job file for one test.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// submit submits a job file as token and returns the new job's ID.
func submit(t *testing.T, token, path string, sets ...string) string {
	t.Helper()
	args := []string{"job", "submit", "-f", path}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out := must(t, token, append(args, "-o", "json")...)
	var v struct{ ID string }
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.ID == "" {
		t.Fatalf("job submit -o json printed %q, want {\"id\": …} (%v)", out, err)
	}
	return v.ID
}

// showJob returns the job as 'allot job show ID -o json' prints it.
func showJob(t *testing.T, token, id string) job {
	t.Helper()
	out := must(t, token, "job", "show", id, "-o", "json")
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("job show -o json: %v\n%s", err, out)
	}
	for _, k := range []string{"state", "reason"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("job show -o json lacks %q: %s", k, out)
		}
	}
	var j job
	_ = json.Unmarshal([]byte(out), &j)
	return j
}

// waitJob polls the job until done says so, for up to 15 s.
func waitJob(t *testing.T, token, id string, what string, done func(job) bool) job {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		j := showJob(t, token, id)
		if done(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s never %s; last %+v", id, what, j)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

const smallT4 = `name: t4-small
tenant: research
command: ["python", "serve.py"]
resources: {gpu_milli: 250, gpu_models: [T4]}
`

func TestSmallT4JobRuns(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	id := submit(t, research, writeFile(t, "t4.yaml", smallT4))
	j := waitJob(t, research, id, "ran", func(j job) bool { return j.State == "Running" })
	if len(j.Allocations) != 1 || j.Allocations[0].GPUMilli != 250 {
		t.Errorf("running job holds %+v, want one 250m allocation", j.Allocations)
	}
	if out := must(t, research, "job", "show", id); !strings.Contains(out, "Running") || !strings.Contains(out, j.Allocations[0].Node) {
		t.Errorf("job show table:\n%s", out)
	}
	if out := must(t, research, "job", "list", "--state", "Running"); !strings.Contains(out, id) {
		t.Errorf("job list --state Running lacks %s:\n%s", id, out)
	}
	if out := must(t, adminToken, "node", "list"); !strings.Contains(out, id) {
		t.Errorf("node list does not show %s on a node:\n%s", id, out)
	}
	var usage struct {
		Usage []struct {
			Tenant   string  `json:"tenant"`
			UsedGPUs float64 `json:"used_gpus"`
		} `json:"usage"`
	}
	var nodes struct {
		Nodes []struct{ Name, Region string }
	}
	if err := json.Unmarshal([]byte(must(t, adminToken, "node", "list", "-o", "json")), &nodes); err != nil {
		t.Fatal(err)
	}
	var region string
	for _, n := range nodes.Nodes {
		if n.Name == j.Allocations[0].Node {
			region = n.Region
		}
	}
	if err := json.Unmarshal([]byte(must(t, research, "quota", "usage", "--region", region, "-o", "json")), &usage); err != nil {
		t.Fatal(err)
	}
	var used float64
	for _, u := range usage.Usage {
		if u.Tenant != "research" {
			t.Errorf("research sees usage of %s", u.Tenant)
		}
		used += u.UsedGPUs
	}
	if used < 0.25 {
		t.Errorf("research uses %v GPUs in %s, want at least 0.25: %+v", used, region, usage)
	}
	must(t, research, "job", "cancel", id)
	waitJob(t, research, id, "was cancelled", func(j job) bool { return j.State == "Canceled" })
	r := allot(t, research, "job", "cancel", id)
	if r.code != 2 || !strings.Contains(r.err, "allot: Conflict: ") {
		t.Errorf("cancelling a cancelled job: exit %d, %q; want 2 and Conflict", r.code, r.err)
	}
}

func TestQueuedJobSaysWhy(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "acme")
	// The job's reservation is active only from 2027: it waits. (A job
	// that can never run, like t4-ring, is refused at submit.)
	id := submit(t, research, filepath.Join(root, "examples/jobs/acme-2027.yaml"))
	j := waitJob(t, research, id, "got a reason", func(j job) bool { return j.Reason != "" })
	if j.State != "Queued" {
		t.Errorf("acme-2027 is %s (%s), want Queued", j.State, j.Reason)
	}
	var why struct {
		ID, State, Reason, Detail string
		EstimatedStart            *string `json:"estimated_start"`
	}
	if err := json.Unmarshal([]byte(must(t, research, "job", "why", id, "-o", "json")), &why); err != nil {
		t.Fatal(err)
	}
	if why.ID != id || why.Reason != j.Reason || why.Detail == "" {
		t.Errorf("why = %+v, want reason %s with detail", why, j.Reason)
	}
	t.Logf("acme-2027: %s: %s", why.Reason, why.Detail)
	if out := must(t, research, "job", "why", id); !strings.Contains(out, why.Reason) || !strings.Contains(out, "Estimated start:") {
		t.Errorf("job why table:\n%s", out)
	}
	must(t, research, "job", "cancel", id)
}

func TestSubmitRejections(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	r := allot(t, research, "job", "submit", "-f", filepath.Join(root, "examples/refused/research-b200.yaml"))
	if r.code != 2 || !strings.HasPrefix(r.err, "allot: SkuNotAvailable: ") {
		t.Errorf("research-b200: exit %d, stderr %q; want 2 and SkuNotAvailable", r.code, r.err)
	}
	// A job for another tenant.
	r = allot(t, research, "job", "submit", "-f", writeFile(t, "acme.yaml", strings.Replace(smallT4, "research", "acme", 1)))
	if r.code != 2 || !strings.Contains(r.err, "(field tenant)") {
		t.Errorf("submitting for another tenant: exit %d, stderr %q; want 2 naming field tenant", r.code, r.err)
	}
}

func TestSpecErrorNamesField(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	bad := "name: bad\ntenant: research\nresources:\n  gpus_per_instance: 99\n"
	r := allot(t, research, "job", "submit", "-f", writeFile(t, "bad.yaml", bad))
	if r.code != 2 || !strings.Contains(r.err, "bad.yaml:4:") || !strings.Contains(r.err, "resources.gpus_per_instance") {
		t.Errorf("exit %d, stderr %q; want 2 naming bad.yaml:4 and resources.gpus_per_instance", r.code, r.err)
	}
	// The server checks the same on its own.
	resp := post(t, research, "/v1/jobs", "application/json",
		strings.NewReader(`{"name":"bad","tenant":"research","resources":{"gpus_per_instance":99}}`))
	e := apiError(t, resp)
	if resp.StatusCode != 400 || e.Code != "InvalidSpec" || e.Field != "resources.gpus_per_instance" {
		t.Errorf("POST bad spec: %d %+v, want 400 InvalidSpec field resources.gpus_per_instance", resp.StatusCode, e)
	}
	resp = post(t, research, "/v1/jobs", "application/yaml", strings.NewReader("name: y\nresources: {gpu_milli: 100, gpu_models: [T4]}\n"))
	if resp.StatusCode != 201 {
		t.Errorf("POST YAML without tenant: %d %+v, want 201 with the token's tenant", resp.StatusCode, apiError(t, resp))
	} else {
		var j job
		_ = json.NewDecoder(resp.Body).Decode(&j)
		resp.Body.Close()
		if j.Tenant != "research" {
			t.Errorf("tenant filled in as %q, want research", j.Tenant)
		}
		must(t, research, "job", "cancel", j.ID)
	}
}

func TestTenantIsolation(t *testing.T) {
	needServer(t)
	research, acme := tokenFor(t, "research"), tokenFor(t, "acme")
	id := submit(t, research, writeFile(t, "t4.yaml", smallT4))
	for _, args := range [][]string{{"job", "show", id}, {"job", "why", id}, {"job", "cancel", id}} {
		r := allot(t, acme, args...)
		if r.code != 1 || !strings.HasPrefix(r.err, "allot: Forbidden: ") {
			t.Errorf("acme: allot %s: exit %d, stderr %q; want 1 and Forbidden", strings.Join(args, " "), r.code, r.err)
		}
	}
	if out := must(t, acme, "job", "list"); strings.Contains(out, id) {
		t.Errorf("acme's job list shows research's job %s", id)
	}
	if out := must(t, adminToken, "job", "list", "--tenant", "research"); !strings.Contains(out, id) {
		t.Errorf("admin's job list --tenant research lacks %s", id)
	}
	for _, args := range [][]string{{"node", "list"}, {"token", "create", "--tenant", "acme"}} {
		r := allot(t, acme, args...)
		if r.code != 1 || !strings.HasPrefix(r.err, "allot: Forbidden: ") {
			t.Errorf("acme: allot %s: exit %d, stderr %q; want 1 and Forbidden", strings.Join(args, " "), r.code, r.err)
		}
	}
	if s := showJob(t, research, id); s.State == "Canceled" {
		t.Errorf("acme's cancel reached research's job")
	}
	must(t, research, "job", "cancel", id)
}

func TestAuthentication(t *testing.T) {
	needServer(t)
	for name, token := range map[string]string{"no token": "", "wrong token": "not-a-token"} {
		t.Run(name, func(t *testing.T) {
			r := allot(t, token, "job", "list")
			if r.code != 1 || !strings.HasPrefix(r.err, "allot: Unauthorized: ") {
				t.Errorf("exit %d, stderr %q; want 1 and Unauthorized", r.code, r.err)
			}
		})
	}
}

func TestReservations(t *testing.T) {
	needServer(t)
	acme, research := tokenFor(t, "acme"), tokenFor(t, "research")
	out := must(t, acme, "reservation", "create", "--sku", "ND96-A100x8-IB", "--region", "westus", "--count", "1",
		"--start", "now", "--end", "+24h", "--name", "e2e-acme", "-o", "json")
	var rsv struct{ Name, Owner, Start, End string }
	if err := json.Unmarshal([]byte(out), &rsv); err != nil || rsv.Name != "e2e-acme" || rsv.Owner != "acme" || rsv.End == "" {
		t.Fatalf("reservation create -o json: %v\n%s", err, out)
	}
	if out := must(t, acme, "reservation", "list"); !strings.Contains(out, "e2e-acme") {
		t.Errorf("acme's reservation list lacks e2e-acme:\n%s", out)
	}
	if out := must(t, research, "reservation", "list"); strings.Contains(out, "e2e-acme") {
		t.Errorf("research sees acme's reservation:\n%s", out)
	}
	r := allot(t, acme, "reservation", "create", "--sku", "ND96-A100x8-IB", "--region", "westus", "--count", "1", "--name", "e2e-acme")
	if r.code != 2 || !strings.HasPrefix(r.err, "allot: Conflict: ") {
		t.Errorf("a name taken: exit %d, %q; want 2 and Conflict", r.code, r.err)
	}
	r = allot(t, adminToken, "reservation", "create", "--sku", "ND96-A100x8-IB", "--region", "westus", "--count", "1")
	if r.code != 2 || !strings.Contains(r.err, "(field owner)") {
		t.Errorf("admin without --owner: exit %d, %q; want 2 naming field owner", r.code, r.err)
	}
	r = allot(t, research, "reservation", "delete", "e2e-acme")
	if r.code != 1 || !strings.HasPrefix(r.err, "allot: Forbidden: ") {
		t.Errorf("research deletes acme's reservation: exit %d, %q; want 1 and Forbidden", r.code, r.err)
	}
	must(t, acme, "reservation", "delete", "e2e-acme")
	if out := must(t, acme, "reservation", "list", "-o", "yaml"); strings.Contains(out, "e2e-acme") {
		t.Errorf("deleted reservation still listed:\n%s", out)
	}
}

func TestOutputs(t *testing.T) {
	needServer(t)
	research := tokenFor(t, "research")
	var skus struct {
		SKUs []struct {
			Name     string  `json:"name"`
			Region   string  `json:"region"`
			FreeGPUs float64 `json:"free_gpus"`
		} `json:"skus"`
	}
	if err := json.Unmarshal([]byte(must(t, research, "sku", "list", "--region", "eastus", "-o", "json")), &skus); err != nil {
		t.Fatal(err)
	}
	if len(skus.SKUs) == 0 {
		t.Fatal("sku list --region eastus is empty")
	}
	for _, s := range skus.SKUs {
		if s.Region != "eastus" {
			t.Errorf("sku list --region eastus lists %s in %s", s.Name, s.Region)
		}
	}
	if out := must(t, research, "sku", "list", "--region", "eastus", "--series", "NC"); !strings.Contains(out, "T4") || strings.Contains(out, "H100") {
		t.Errorf("sku list --series NC:\n%s", out)
	}
	// Shell completion asks the server for job IDs.
	id := submit(t, research, writeFile(t, "t4.yaml", smallT4))
	if r := allot(t, "", "__complete", "job", "why", "--token", research, ""); !strings.Contains(r.out, id+"\t") {
		t.Errorf("completing job why lacks %s: exit %d\n%s%s", id, r.code, r.out, r.err)
	}
	must(t, research, "job", "cancel", id)
	if out := must(t, "", "completion", "bash"); !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash printed no script")
	}
	var list map[string]any
	if err := yaml.Unmarshal([]byte(must(t, adminToken, "job", "list", "-o", "yaml")), &list); err != nil {
		t.Errorf("job list -o yaml is not YAML: %v", err)
	} else if _, ok := list["jobs"]; !ok {
		t.Errorf("job list -o yaml has no jobs: %v", list)
	}
}

// post sends a raw request, for what the CLI would refuse locally.
func post(t *testing.T, token, path, contentType string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, serverURL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

type errorBody struct{ Code, Message, Field string }

// apiError reads an error response's body.
func apiError(t *testing.T, resp *http.Response) errorBody {
	t.Helper()
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var e errorBody
	if err := json.Unmarshal(data, &e); err != nil {
		t.Errorf("error body is not {code, message, field}: %q", data)
	}
	return e
}

func TestBodyTooLarge(t *testing.T) {
	needServer(t)
	body := bytes.Repeat([]byte(" "), 10<<20)
	resp := post(t, tokenFor(t, "research"), "/v1/jobs", "application/json", bytes.NewReader(body))
	if e := apiError(t, resp); resp.StatusCode != 413 || e.Code != "BodyTooLarge" {
		t.Errorf("10 MiB body: %d %+v, want 413 BodyTooLarge", resp.StatusCode, e)
	}
}

// TestRateLimit drives a tenant past its request rate. With a server that
// takes --rate-limit it starts one with a tiny budget and goes through the
// CLI; otherwise it bursts raw requests at the shared server.
func TestRateLimit(t *testing.T) {
	needServer(t)
	if !strings.Contains(serverHelp, "--rate-limit") || !strings.Contains(serverHelp, "--rate-burst") {
		burst(t)
		return
	}
	var log syncBuffer
	url, admin, stop, err := startServer(filepath.Join(t.TempDir(), "data"), &log, "--rate-limit", "0.2", "--rate-burst", "3")
	if err != nil {
		t.Fatalf("start a rate-limited server: %v\n%s", err, log.String())
	}
	defer stop()
	tok := strings.TrimSpace(allotAt(t, url, admin, "token", "create", "--tenant", "hobbyist").out)
	var r result
	for i := 0; i < 10; i++ {
		if r = allotAt(t, url, tok, "reservation", "list"); r.code != 0 {
			t.Logf("request %d refused", i+1)
			break
		}
	}
	if r.code != 1 || !strings.HasPrefix(r.err, "allot: RateLimited: ") {
		t.Fatalf("after a burst: exit %d, stderr %q; want 1 and RateLimited", r.code, r.err)
	}
	req, _ := http.NewRequest(http.MethodGet, url+"/v1/reservations", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if e := apiError(t, resp); resp.StatusCode != 429 || e.Code != "RateLimited" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("raw request: %d %+v Retry-After %q; want 429 RateLimited with Retry-After", resp.StatusCode, e, resp.Header.Get("Retry-After"))
	}
	// Another tenant has a budget of its own.
	other := strings.TrimSpace(allotAt(t, url, admin, "token", "create", "--tenant", "acme").out)
	if r := allotAt(t, url, other, "reservation", "list"); r.code != 0 {
		t.Errorf("acme limited by hobbyist's burst: exit %d, %q", r.code, r.err)
	}
}

// burst sends raw requests from eight goroutines until one is refused.
func burst(t *testing.T) {
	token := tokenFor(t, "hobbyist") // a tenant of its own, so others keep their budget
	var limited atomic.Pointer[http.Response]
	var sent atomic.Int32
	deadline := time.Now().Add(10 * time.Second)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for limited.Load() == nil && time.Now().Before(deadline) && sent.Add(1) <= 5000 {
				req, _ := http.NewRequest(http.MethodGet, serverURL+"/v1/reservations", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				if resp.StatusCode == http.StatusTooManyRequests {
					if !limited.CompareAndSwap(nil, resp) {
						resp.Body.Close()
					}
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	resp := limited.Load()
	if resp == nil {
		t.Fatalf("no 429 after %d requests", sent.Load())
	}
	t.Logf("429 after %d requests", sent.Load())
	if e := apiError(t, resp); e.Code != "RateLimited" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("429 body %+v, Retry-After %q; want RateLimited with Retry-After", e, resp.Header.Get("Retry-After"))
	}
}
