package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const smallScenario = "../sim/scenario/testdata/small.yaml"

func TestSimScenarioJSON(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"sim", "scenario", smallScenario, "--strategy", "all",
		"--policies", "../../examples/policies.yaml", "-o", "json", "--report", dir}, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	var runs []map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &runs); err != nil {
		t.Fatalf("output is not a JSON array: %v\n%s", err, stdout.String())
	}
	if len(runs) != 3 {
		t.Fatalf("%d runs, want static, dynamic and hybrid", len(runs))
	}
	for i, want := range []string{"static", "dynamic", "hybrid"} {
		r := runs[i]
		if r["strategy"] != want || r["policies"] != true {
			t.Errorf("run %d: strategy %v policies %v, want %s with policies", i, r["strategy"], r["policies"], want)
		}
		for _, k := range []string{"endpoints", "partitions", "reservations", "reservations_on_time_pct", "spot_gpu_hours",
			"spot_lost_gpu_hours", "queueing_by_tier", "gpu_utilisation_pct", "gpu_hours_by_tenant", "meets_targets", "wall_seconds"} {
			if _, ok := r[k]; !ok {
				t.Errorf("run %s lacks %s", want, k)
			}
		}
		ep := r["endpoints"].([]any)[0].(map[string]any)
		if ep["name"] != "shop-assist" || ep["slo_attainment_pct"].(float64) <= 0 {
			t.Errorf("endpoint = %v", ep)
		}
		if tiers := r["queueing_by_tier"].([]any); len(tiers) != 3 {
			t.Errorf("%d tiers, want internal, customer, elastic", len(tiers))
		}
	}
	for _, f := range []string{"index.html", "utilisation.png", "queueing_cdf.png", "tenants-1.png", "tenants-3.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("report: %v", err)
		}
	}
}

func TestSimScenarioTableAndErrors(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"sim", "scenario", smallScenario, "--strategy", "static,hybrid"}, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"SLO attainment shop-assist", "guarantee violation min ai", "reservations on time",
		"spot GPU-h lost", "queue p50/p99 min internal", "GPU utilisation", "GPU-h trainer", "static", "hybrid"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "redone") {
		t.Errorf("with shared checkpoints (the default) the table has a redone row:\n%s", out)
	}
	stdout.Reset()
	if code := Run(context.Background(), []string{"sim", "scenario", smallScenario, "--strategy", "static", "--checkpoints", "local"}, &stdout, &stderr); code != ExitOK ||
		!strings.Contains(stdout.String(), "checkpointed GPU-h redone") {
		t.Errorf("--checkpoints local: exit %d, table:\n%s", code, stdout.String())
	}
	for _, args := range [][]string{
		{"sim", "scenario", smallScenario, "--strategy", "fair"},
		{"sim", "scenario", smallScenario, "-o", "yaml"},
		{"sim", "scenario", "no/such/file.yaml"},
		{"sim", "scenario", smallScenario, "--policies", smallScenario},
		{"sim", "scenario", smallScenario, "--checkpoints", "nfs"},
	} {
		stdout.Reset()
		stderr.Reset()
		if code := Run(context.Background(), args, &stdout, &stderr); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (usage); stderr %s", args, code, ExitUsage, stderr.String())
		}
	}
}
