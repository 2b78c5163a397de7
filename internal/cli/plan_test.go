package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/sched"
)

// examplesArgs runs plan on the repository's examples at a fixed time.
func examplesArgs(extra ...string) []string {
	root := "../.."
	args := []string{"plan",
		"--fleet", filepath.Join(root, "examples/fleet.yaml"),
		"--tenants", filepath.Join(root, "examples/tenants.yaml"),
		"--running", filepath.Join(root, "examples/running/batch.yaml") + "@2h",
		"--running", filepath.Join(root, "examples/running/resumed.yaml") + "@5m",
		"--jobs", filepath.Join(root, "examples/jobs"),
		"--jobs", filepath.Join(root, "examples/refused"),
		"--now", "2026-12-01T12:00:00Z"}
	return append(args, extra...)
}

func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestPlanExamplesShowEveryReason(t *testing.T) {
	out, errOut, code := run(t, examplesArgs("-o", "json")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var plan struct {
		Binds []struct {
			Job   string `json:"job"`
			Nodes []struct {
				Node     string `json:"node"`
				GPUs     []int  `json:"gpus"`
				GPUMilli int64  `json:"gpu_milli"`
			} `json:"nodes"`
		} `json:"binds"`
		Preemptions []struct{ Job, For, Reason string }    `json:"preemptions"`
		Pending     []struct{ Job, Reason, Detail string } `json:"pending"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("plan is not JSON of the documented shape: %v\n%s", err, out)
	}
	if len(plan.Binds) == 0 || len(plan.Preemptions) == 0 {
		t.Fatalf("want binds and a preemption, got %d binds, %d preemptions", len(plan.Binds), len(plan.Preemptions))
	}
	seen := map[string]bool{}
	for _, p := range plan.Pending {
		seen[p.Reason] = true
		if p.Detail == "" {
			t.Errorf("%s pending %s without detail", p.Job, p.Reason)
		}
	}
	for _, r := range []string{"QuotaExceeded", "SkuNotAvailable", "InsufficientCapacity", "TopologyUnsatisfiable",
		"AwaitingPreemption", "ReservationNotActive", "PowerCapped", "ResidencyForbidden", "BorrowLimitReached"} {
		if !seen[r] {
			t.Errorf("no example job is pending with %s", r)
		}
	}
}

func TestPlanTable(t *testing.T) {
	out, errOut, code := run(t, examplesArgs()...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"BINDS", "PREEMPTIONS", "PENDING", "train-llama", "@250m"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestPlanBadSpecExitsTwo(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"invalid field value", []string{"--jobs", write("neg.yaml", "name: x\ntenant: copilot\nresources: {gpus_per_instance: -1}\n")},
			"neg.yaml:3:32: resources.gpus_per_instance"},
		{"unknown field", []string{"--jobs", write("unk.yaml", "name: x\ntenant: copilot\nresourcez: {}\n")}, "unk.yaml:3:1: resourcez"},
		{"bad --set", []string{"--jobs", "../../examples/jobs/train-llama.yaml", "--set", "retry.max_retries=lots"}, "retry.max_retries"},
		{"bad fleet", []string{"--jobs", "../../examples/jobs", "--fleet", write("fleet.yaml", "regions: [{name: r, residency: us, clusters: [{name: c, fabric: copper}]}]\n")},
			"fabric"},
		{"missing file", []string{"--jobs", filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
		{"bad output", []string{"--jobs", "../../examples/jobs", "-o", "xml"}, "--output"},
		{"--running without --jobs", []string{"--running", "../../examples/running/batch.yaml"}, "--jobs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"plan", "--fleet", "../../examples/fleet.yaml", "--tenants", "../../examples/tenants.yaml"}, tc.args...)
			_, errOut, code := run(t, args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d: %s", code, ExitUsage, errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Fatalf("stderr %q lacks %q", errOut, tc.want)
			}
		})
	}
}

func TestPlanDefaultsToTheExampleScenario(t *testing.T) {
	t.Chdir("../..")
	out, errOut, code := run(t, "plan")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"HigherClass", "QuotaExceeded", "PowerCapped", "AwaitingPreemption"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan without flags lacks %s:\n%s", want, out)
		}
	}
}

// plan schedules what the server would: the tenancy under its strategy
// (package strategy). Under static, internal-ai has no eastus T4
// guarantee and may not borrow, so copilot's chat replicas wait; and a
// reservation of an eastus H100 node beside the 57 GPUs internal-ai then
// keeps of 64 is warned of.
func TestPlanFollowsTheStrategy(t *testing.T) {
	data, err := os.ReadFile("../../examples/tenants.yaml")
	if err != nil {
		t.Fatal(err)
	}
	static := "strategy: static\n" + string(data) + `  - {name: hob-h100, owner: hobbyist, sku: ND96-H100x8-IB, region: eastus, count: 1}
`
	tenants := filepath.Join(t.TempDir(), "tenants.yaml")
	if err := os.WriteFile(tenants, []byte(static), 0o600); err != nil {
		t.Fatal(err)
	}
	args := examplesArgs("-o", "json")
	for i, a := range args {
		if strings.HasSuffix(a, "examples/tenants.yaml") {
			args[i] = tenants
		}
	}
	out, errOut, code := run(t, args...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var plan struct {
		Pending []struct{ Job, Reason string } `json:"pending"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	reason := map[string]string{}
	for _, p := range plan.Pending {
		reason[p.Job] = p.Reason
	}
	if reason["copilot-chat-0"] != "BorrowLimitReached" {
		t.Errorf("copilot-chat-0 pending %q under static, want BorrowLimitReached", reason["copilot-chat-0"])
	}
	want := "Warning: the tenancy promises more GPUs than a pool has: eastus H100 from 2026-12-01T12:00:00Z: guarantees kept from lending (57 GPUs) and reservations hob-h100 (8 GPUs) promise 65 at once; the pool has 64"
	if !strings.Contains(errOut, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut)
	}
}

// A queued job whose begin time is after the cycle's is left out of the
// plan, as the server holds it back, and the plan says so; one whose begin
// time has come is planned.
func TestPlanLeavesOutJobsNotBegun(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(file, []byte(`name: later
tenant: research
resources: {gpus_per_instance: 1, gpu_models: [T4]}
begin: 2026-12-02T00:00:00Z
---
name: now
tenant: research
resources: {gpus_per_instance: 1, gpu_models: [T4]}
begin: 2026-12-01T00:00:00Z
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "plan", "--fleet", "../../examples/fleet.yaml", "--tenants", "../../examples/tenants.yaml",
		"--jobs", file, "--now", "2026-12-01T12:00:00Z")
	if code != ExitOK || strings.Contains(out, "later") || !strings.Contains(out, "now ") ||
		!strings.Contains(errOut, "Note: later begins at 2026-12-02T00:00:00Z, after this cycle's time; left out") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}

// TestPlanTableResizes: a Plan's resizes print in their own section, each
// with its sizes, its reason (and the job a shrink made room for) and what
// it does.
func TestPlanTableResizes(t *testing.T) {
	var b strings.Builder
	p := sched.Plan{Resizes: []sched.Resize{
		{Job: "pretrain", From: 8, To: 16, Reason: sched.IdleCapacity,
			Detail: "grew 8→16: 64 idle H100 in use-ib; 0 GPU-seconds since the last checkpoint are lost"},
		{Job: "sweep", From: 6, To: 4, For: "urgent", Reason: sched.HigherClass, LostGPUSeconds: 960},
	}}
	if err := writePlanTable(&b, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RESIZES (2)", "pretrain  8→16  IdleCapacity", "grew 8→16: 64 idle H100 in use-ib",
		"sweep     6→4   HigherClass for urgent  shrank 6→4 for urgent (HigherClass); 960 GPU-seconds since the last checkpoint are lost"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
