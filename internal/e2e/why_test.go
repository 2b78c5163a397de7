package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// whyJSON is what 'allot job why -o json' prints.
type whyJSON struct {
	ID             string  `json:"id"`
	State          string  `json:"state"`
	EstimatedStart *string `json:"estimated_start"`
	EstimateHow    string  `json:"estimate_how"`
	EstimateNone   string  `json:"estimate_none"`
	Region         string  `json:"region"`
	Regions        []struct {
		Region          string  `json:"region"`
		EstimatedStart  *string `json:"estimated_start"`
		PricePerGPUHour float64 `json:"price_per_gpu_hour"`
		Distance        int     `json:"distance"`
		Score           float64 `json:"score"`
		Chosen          bool    `json:"chosen"`
	} `json:"regions"`
}

// TestJobWhyEstimateAndRegions runs a server of its own (simulated nodes:
// jobs end after their duration), keeps every T4 of eastus busy for two
// hours and of westus for one, and submits a job allowed in both with its
// data in eastus. 'job why' must give it an estimated start with how it was
// estimated and the table of both regions, westus chosen (an hour sooner
// outweighs one step of distance); a job waiting for a reservation window
// gets the window's start.
func TestJobWhyEstimateAndRegions(t *testing.T) {
	needServer(t)
	var log syncBuffer
	url, admin, stop, err := startServer(filepath.Join(t.TempDir(), "data"), &log)
	if err != nil {
		t.Fatalf("start server: %v\n%s", err, log.String())
	}
	defer stop()
	research := strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", "research"))
	acme := strings.TrimSpace(allotMust(t, url, admin, "token", "create", "--tenant", "acme"))
	submitFile := func(token, path string) string {
		t.Helper()
		out := allotMust(t, url, token, "job", "submit", "-f", path, "-o", "json")
		var v struct{ ID string }
		if err := json.Unmarshal([]byte(out), &v); err != nil || v.ID == "" {
			t.Fatalf("job submit printed %q (%v)", out, err)
		}
		return v.ID
	}
	submitAt := func(token, doc string) string { t.Helper(); return submitFile(token, writeFile(t, "job.yaml", doc)) }
	why := func(token, id string) whyJSON {
		t.Helper()
		var w whyJSON
		if out := allotMust(t, url, token, "job", "why", id, "-o", "json"); json.Unmarshal([]byte(out), &w) != nil {
			t.Fatalf("job why -o json: %s", out)
		}
		return w
	}
	var fill []string
	for region, n := range map[string]int{"eastus": 10, "westus": 9} {
		d := map[string]string{"eastus": "2h", "westus": "1h"}[region]
		for i := range n {
			fill = append(fill, submitAt(research, fmt.Sprintf(`name: fill-%s-%d
tenant: research
command: [sleep, "1"]
duration: %s
resources: {gpu_models: [T4]}
placement: {regions: [%s]}
`, region, i, d, region)))
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, id := range fill {
		for {
			var j struct{ State string }
			_ = json.Unmarshal([]byte(allotMust(t, url, research, "job", "show", id, "-o", "json")), &j)
			if j.State == "Running" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("filler %s is %s, want Running", id, j.State)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	id := submitAt(research, `name: near-data
tenant: research
command: [sleep, "1"]
duration: 30m
resources: {gpu_models: [T4]}
placement: {regions: [eastus, westus], data_region: eastus}
`)
	w := why(research, id)
	if w.State != "Queued" || w.EstimatedStart == nil || !strings.Contains(w.EstimateHow, "core run forward") {
		t.Fatalf("why: %+v", w)
	}
	if len(w.Regions) != 2 || w.Region != "westus" || w.Regions[0].Region != "westus" || !w.Regions[0].Chosen ||
		w.Regions[1].Chosen || w.Regions[0].Distance != 1 || w.Regions[1].Distance != 0 || w.Regions[1].EstimatedStart == nil {
		t.Fatalf("regions: region %q, %+v", w.Region, w.Regions)
	}
	start, _ := time.Parse(time.RFC3339, *w.EstimatedStart)
	if d := time.Until(start); d < 50*time.Minute || d > 61*time.Minute {
		t.Errorf("estimated start %s is %s away, want about an hour (westus frees then)", *w.EstimatedStart, d.Round(time.Second))
	}
	out := allotMust(t, url, research, "job", "why", id)
	for _, want := range []string{"Estimated start:", "(in ", "Estimated by:", "core run forward", "REGION", "ESTIMATED START",
		"PRICE/GPU-H", "DISTANCE", "SCORE", "CHOSEN", "westus", "eastus", "$0.53"} {
		if !strings.Contains(out, want) {
			t.Errorf("job why lacks %q:\n%s", want, out)
		}
	}
	t.Logf("job why:\n%s", out)

	res := submitFile(acme, filepath.Join(root, "examples/jobs/acme-2027.yaml"))
	w = why(acme, res)
	if w.EstimatedStart == nil || *w.EstimatedStart != "2027-03-01T00:00:00Z" {
		t.Errorf("acme-2027 estimated start %v (%s), want the window's start 2027-03-01T00:00:00Z", w.EstimatedStart, w.EstimateNone)
	}
	if out := allotMust(t, url, acme, "job", "why", res); !strings.Contains(out, "2027-03-01T00:00:00Z") {
		t.Errorf("job why of acme-2027:\n%s", out)
	}
}
