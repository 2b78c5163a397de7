package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCrashRestart kills `allot server` with SIGKILL in the middle of a
// storm of concurrent submits and cancels, restarts it, and checks that every
// acknowledged submit survived and that no GPU is bound beyond capacity.
func TestCrashRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the allot binary and runs it 20 times")
	}
	start := time.Now()
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "allot")
	build := exec.Command("go", "build", "-o", bin, "github.com/allot-dev/allot/cmd/allot")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built in %s", time.Since(start).Round(time.Millisecond))
	fleet, _ := filepath.Abs("../../examples/fleet.yaml")
	tenants, _ := filepath.Abs("../../examples/tenants.yaml")
	data := filepath.Join(tmp, "data")

	rng := rand.New(rand.NewPCG(1, 2))
	acked := map[string]bool{}
	const iterations = 20
	for i := 0; i <= iterations; i++ {
		cmd, url := startServer(t, bin, data, fleet, tenants)
		tok, err := os.ReadFile(filepath.Join(data, "admin-token"))
		if err != nil {
			t.Fatal(err)
		}
		token := strings.TrimSpace(string(tok))
		verify(t, i, url, token, acked)
		if i == iterations {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			break
		}
		ids := storm(url, token, time.Duration(50+rng.IntN(700))*time.Millisecond, rng.Uint64())
		_ = cmd.Process.Kill() // SIGKILL while the storm still runs
		_ = cmd.Wait()
		for _, id := range ids() {
			acked[id] = true
		}
	}
	t.Logf("%d crash iterations, %d acknowledged jobs, %s in all", iterations, len(acked), time.Since(start).Round(time.Millisecond))
}

func startServer(t *testing.T, bin, data, fleet, tenants string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, "server", "--data", data, "--listen", "127.0.0.1:0", "--fleet", fleet,
		"--tenants", tenants, "--tick", "100ms", "--rate-limit", "0", "--log-level", "warn", "--agents", "simulated")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				urls <- u
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case u := <-urls:
		return cmd, u
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("server did not start:\n%s", stderr.String())
	}
	return nil, ""
}

var stormJobs = []string{
	`{"name":"w","tenant":"research","priority":"spot","duration":"1s","resources":{"gpus_per_instance":1,"gpu_models":["T4"]}}`,
	`{"name":"f","tenant":"copilot","duration":"2s","resources":{"gpu_milli":250,"gpu_models":["T4"]},"placement":{"regions":["eastus"]}}`,
	`{"name":"g","tenant":"copilot","duration":"3s","resources":{"instance_count":2,"gpus_per_instance":8,"gpu_models":["H100"]},"placement":{"interconnect":"infiniband"}}`,
	`{"name":"a","tenant":"acme","resources":{"gpus_per_instance":4,"gpu_models":["A100"]}}`,
	`{"name":"s","tenant":"globex","priority":"spot","resources":{"gpus_per_instance":8,"gpu_models":["H100"]}}`,
}

// storm runs 8 submitting goroutines and one canceling goroutine for
// about d, and returns a function giving the IDs whose submit got 201. The
// goroutines keep going until the server dies.
func storm(url, token string, d time.Duration, seed uint64) func() []string {
	var mu sync.Mutex
	var ids []string
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(path string, body []byte) (*http.Response, error) {
		req, _ := http.NewRequest("POST", url+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		return client.Do(req)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := post("/v1/jobs", []byte(stormJobs[(g+n)%len(stormJobs)]))
				if err != nil {
					return // the server is gone
				}
				var j struct {
					ID string `json:"id"`
				}
				_ = json.NewDecoder(resp.Body).Decode(&j)
				resp.Body.Close()
				if resp.StatusCode == http.StatusCreated {
					mu.Lock()
					ids = append(ids, j.ID)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 7))
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			mu.Lock()
			var id string
			if len(ids) > 0 {
				id = ids[rng.IntN(len(ids))]
			}
			mu.Unlock()
			if id == "" {
				continue
			}
			resp, err := post("/v1/jobs/"+id+"/cancel", nil)
			if err != nil {
				return
			}
			resp.Body.Close()
		}
	}()
	time.Sleep(d)
	return func() []string {
		close(stop)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return ids
	}
}

type crashJob struct {
	ID          string `json:"id"`
	State       string `json:"state"`
	Allocations []struct {
		Node     string `json:"node"`
		GPUs     []int  `json:"gpus"`
		GPUMilli int64  `json:"gpu_milli"`
	} `json:"allocations"`
	Spec struct {
		Resources struct {
			InstanceCount int `json:"instance_count"`
		} `json:"resources"`
	} `json:"spec"`
}

func verify(t *testing.T, iter int, url, token string, acked map[string]bool) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "GET", url+"/v1/jobs", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Jobs []crashJob `json:"jobs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	used := map[string]int64{}
	for _, j := range list.Jobs {
		if have[j.ID] {
			t.Fatalf("iteration %d: job %s listed twice", iter, j.ID)
		}
		have[j.ID] = true
		holds := j.State == "Running" || j.State == "Preparing" || j.State == "Preempted"
		if !holds {
			if len(j.Allocations) != 0 {
				t.Fatalf("iteration %d: %s is %s with allocations", iter, j.ID, j.State)
			}
			continue
		}
		if len(j.Allocations) != j.Spec.Resources.InstanceCount {
			t.Fatalf("iteration %d: %s holds %d allocations for %d instances", iter, j.ID, len(j.Allocations), j.Spec.Resources.InstanceCount)
		}
		for _, a := range j.Allocations {
			for _, g := range a.GPUs {
				k := fmt.Sprintf("%s/%d", a.Node, g)
				used[k] += a.GPUMilli
				if used[k] > 1000 {
					t.Fatalf("iteration %d: GPU %s bound beyond capacity (last %s)", iter, k, j.ID)
				}
			}
		}
	}
	for id := range acked {
		if !have[id] {
			t.Fatalf("iteration %d: acknowledged job %s lost", iter, id)
		}
	}
}
