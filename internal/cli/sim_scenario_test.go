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
	code := Run(context.Background(), []string{"sim", "scenario", smallScenario, "--strategy", "all", "--seeds", "1-3",
		"--policies", "../../examples/policies.yaml", "-o", "json", "--report", dir}, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	var cases []struct {
		Name     string `json:"name"`
		Strategy string `json:"strategy"`
		Policies bool   `json:"policies"`
		Seeds    []int  `json:"seeds"`
		Figures  []struct {
			Name      string    `json:"name"`
			Mean      float64   `json:"mean"`
			HalfWidth float64   `json:"ci95_half_width"`
			Values    []float64 `json:"values"`
		} `json:"figures"`
		Targets []struct {
			Name  string `json:"name"`
			Met   int    `json:"met"`
			Seeds int    `json:"seeds"`
		} `json:"targets"`
		Versus []struct {
			Name          string
			Ratio, Lo, Hi float64
		} `json:"versus_static"`
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &cases); err != nil {
		t.Fatalf("output is not a JSON array of cases: %v\n%s", err, stdout.String())
	}
	if len(cases) != 3 {
		t.Fatalf("%d cases, want static, dynamic and hybrid", len(cases))
	}
	for i, want := range []string{"static", "dynamic", "hybrid"} {
		c := cases[i]
		if c.Strategy != want || !c.Policies || c.Name != want+"+policies" || len(c.Seeds) != 3 || len(c.Runs) != 3 {
			t.Errorf("case %d: %s (%s) policies %v, %d seeds, %d runs", i, c.Name, c.Strategy, c.Policies, len(c.Seeds), len(c.Runs))
		}
		for _, f := range c.Figures {
			if len(f.Values) != 3 {
				t.Errorf("%s: figure %s has %d values", c.Name, f.Name, len(f.Values))
			}
		}
		if len(c.Targets) != 4 || c.Targets[0].Seeds != 3 {
			t.Errorf("%s: targets %+v", c.Name, c.Targets)
		}
		if (len(c.Versus) > 0) == (want == "static") {
			t.Errorf("%s: %d comparisons with static", c.Name, len(c.Versus))
		}
		for _, k := range []string{"endpoints", "partitions", "reservations", "training", "gpu_utilisation_pct", "seed", "load"} {
			if _, ok := c.Runs[0][k]; !ok {
				t.Errorf("run of %s lacks %s", want, k)
			}
		}
	}
	for _, f := range []string{"index.html", "utilisation.png", "queueing_cdf.png", "tenants-1.png", "tenants-3.png",
		"latency-1-shop-assist.png", "latency-3-shop-assist.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("report: %v", err)
		}
	}
}

func TestSimScenarioTableAndErrors(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"sim", "scenario", smallScenario, "--strategy", "static,hybrid", "--seeds", "1,2", "--load", "1,1.5"}, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"load 1, 2 seeds (1-2): mean ± 95 % CI", "load 1.5, 2 seeds", "SLO attainment % shop-assist (p95 ttft ≤ 4000 ms)",
		"guarantee violation min ai", "reservations on time", "queueing mean min internal", "training JCT mean h", "training goodput GPU-h",
		"GPU utilisation %", "autoscaler p95 predicted/measured shop-assist", "target: every reservation on time",
		"vs static: static's training queueing mean min ÷ this", "static @1.5", "hybrid @1.5", " ± "} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "redone") {
		t.Errorf("with shared checkpoints (the default) the table has a redone row:\n%s", out)
	}
	stdout.Reset()
	if code := Run(context.Background(), []string{"sim", "scenario", smallScenario, "--strategy", "static", "--checkpoints", "local"}, &stdout, &stderr); code != ExitOK ||
		!strings.Contains(stdout.String(), "checkpointed GPU-h redone") || !strings.Contains(stdout.String(), "load 1, seed 1") {
		t.Errorf("--checkpoints local: exit %d, table:\n%s", code, stdout.String())
	}
	stdout.Reset()
	if code := Run(context.Background(), []string{"sim", "scenario", smallScenario, "--strategy", "hybrid", "--elastic"}, &stdout, &stderr); code != ExitOK ||
		!strings.Contains(stdout.String(), "load 1, elastic training, seed 1") || !strings.Contains(stdout.String(), "GPU-h lost to resizes") ||
		!strings.Contains(stdout.String(), "resizes: grow") {
		t.Errorf("--elastic: exit %d, table:\n%s", code, stdout.String())
	}
	if strings.Contains(out, "resizes") || strings.Contains(out, "elastic training") {
		t.Errorf("without --elastic the table has resize rows:\n%s", out)
	}
	stdout.Reset()
	if code := Run(context.Background(), []string{"sim", "scenario", smallScenario, "--ablation", "--policies", "../../examples/policies.yaml"}, &stdout, &stderr); code != ExitOK ||
		!strings.Contains(stdout.String(), "hybrid (no overflow)+policies") || !strings.Contains(stdout.String(), "hybrid+policies") {
		t.Errorf("--ablation: exit %d, table:\n%s", code, stdout.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--strategy", "fair"}, `--strategy "fair"`},
		{[]string{"-o", "yaml"}, `-o "yaml"`},
		{[]string{"--policies", smallScenario}, "small.yaml"},
		{[]string{"--checkpoints", "nfs"}, "--checkpoints"},
		{[]string{"--seeds", "5-1"}, `--seeds: range "5-1" is descending`},
		{[]string{"--seeds", "0-3"}, "--seeds: 0 is not a seed"},
		{[]string{"--load", "-1"}, `--load: "-1" is not positive`},
		{[]string{"--load", "1,,2"}, "--load: element 2"},
		{[]string{"--ablation"}, "--ablation compares hybrid with and without the policies"},
		{[]string{"--parallel", "0"}, "--parallel 0"},
		{[]string{"--find-min-fleet", "--grid", "0.5,x"}, "--grid"},
	} {
		stdout.Reset()
		stderr.Reset()
		args := append([]string{"sim", "scenario", smallScenario}, tc.args...)
		if code := Run(context.Background(), args, &stdout, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, want %d (usage) saying %q; stderr %s", tc.args, code, ExitUsage, tc.want, stderr.String())
		}
	}
	stderr.Reset()
	if code := Run(context.Background(), []string{"sim", "scenario", "no/such/file.yaml"}, &stdout, &stderr); code != ExitUsage {
		t.Errorf("a missing file: exit %d, want %d", code, ExitUsage)
	}
}
