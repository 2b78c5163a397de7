package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimReplayCost: 'allot sim replay' shows what each VC's work cost in
// its JSON (tenants[].usd and gpu_hours, usd and usd_per_gpu_hour), its
// table (a USD column and the price) and its --report page; the tenants
// add up to the total.
func TestSimReplayCost(t *testing.T) {
	if _, err := os.Stat(phillyDir); err != nil {
		t.Fatalf("the traces the repository ships (data/traces): %v", err)
	}
	args := []string{"sim", "replay", "--jobs", phillyDir + "philly_jobs.csv", "--vcs", phillyDir + "philly_vc.csv",
		"--policy", "fifo", "--sharing", "static", "--cluster-scale", "0.25", "--limit", "500"}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), append(args, "-o", "json", "--report", dir), &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	var res struct {
		USD           float64 `json:"usd"`
		USDPerGPUHour float64 `json:"usd_per_gpu_hour"`
		Tenants       []struct {
			Name     string  `json:"name"`
			GPUHours float64 `json:"gpu_hours"`
			USD      float64 `json:"usd"`
		} `json:"tenants"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("-o json: %v\n%s", err, stdout.String())
	}
	sum, paying := 0.0, 0
	for _, tu := range res.Tenants {
		sum += tu.USD
		if tu.USD > 0 {
			paying++
		}
		if math.Abs(tu.USD-tu.GPUHours*res.USDPerGPUHour) > 1e-6 {
			t.Errorf("VC %s: $%.4f for %.3f GPU-hours at $%.4f", tu.Name, tu.USD, tu.GPUHours, res.USDPerGPUHour)
		}
	}
	if res.USDPerGPUHour <= 0 || paying == 0 || math.Abs(sum-res.USD) > 1e-6 {
		t.Errorf("total $%.4f at $%.4f per GPU-hour; %d VCs pay $%.4f in all", res.USD, res.USDPerGPUHour, paying, sum)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), fmt.Sprintf("$%.2f", res.USD)) || !strings.Contains(string(page), "cost of VC "+res.Tenants[0].Name) {
		t.Errorf("the report shows no cost per VC (total $%.2f)", res.USD)
	}

	stdout.Reset()
	if code := Run(context.Background(), args, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	for _, want := range []string{"USD", "GPU-h", fmt.Sprintf("$%.4f per GPU-hour", res.USDPerGPUHour), fmt.Sprintf("%.2f", res.USD),
		fmt.Sprintf("%.2f", res.Tenants[0].USD)} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}
}
