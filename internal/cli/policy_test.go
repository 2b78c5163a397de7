package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	seedPolicies = "../../examples/policies.yaml"
	busyHour     = "../../examples/metrics/busy-hour.yaml"
)

// The recording makes both seed policies fire at the times its comments
// promise, and nothing at the threshold exactly.
func TestPolicyTestReplaysBusyHour(t *testing.T) {
	out, errOut, code := run(t, "policy", "test", "-f", seedPolicies, "--metrics", busyHour)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := [][]string{
		{"2026-03-02T09:08:00Z", "ai_training_priority", "fires", "gpu_utilization fleet 86.0% > 85.0%"},
		{"2026-03-02T09:17:00Z", "customer_sla_protection", "fires", "p95_latency copilot-chat 230ms > 150ms for 5m0s (lowest 160ms)"},
		{"2026-03-02T09:21:00Z", "ai_training_priority", "clears", "applies until 09:25:00"},
		{"2026-03-02T09:24:00Z", "customer_sla_protection", "clears", "applies until 09:28:00"},
		{"2026-03-02T09:25:00Z", "ai_training_priority", "stops"},
		{"2026-03-02T09:28:00Z", "customer_sla_protection", "stops"},
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want)+1 {
		t.Fatalf("got %d lines, want a header and %d events:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		for _, part := range w {
			if !strings.Contains(lines[i+1], part) {
				t.Errorf("line %d = %q, want it to contain %q", i+1, lines[i+1], part)
			}
		}
	}
}

func TestPolicyTestAt(t *testing.T) {
	for _, tc := range []struct {
		at   string
		want []string
		not  []string
	}{
		{"2026-03-02T09:07:00Z", []string{"No policy applies at 2026-03-02T09:07:00Z"}, nil},
		{"2026-03-02T09:16:59Z", []string{"Policy:         ai_training_priority"}, []string{"customer_sla_protection"}},
		{"2026-03-02T09:17:00Z", []string{"ai_training_priority", "customer_sla_protection",
			"p95_latency copilot-chat 230ms > 150ms for 5m0s (lowest 160ms)", "keep 30% of what it held",
			"runs as low_priority_pool (class spot, built-in)", "work below reserved is raised to it"}, nil},
		{"2026-03-02T09:22:30Z", []string{"cooling down: its conditions last held at 2026-03-02T09:20:00Z",
			"Applies until:  2026-03-02T09:25:00Z"}, nil},
	} {
		t.Run(tc.at, func(t *testing.T) {
			out, errOut, code := run(t, "policy", "test", "-f", seedPolicies, "--metrics", busyHour, "--at", tc.at)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	out, errOut, code := run(t, "policy", "validate", "-f", seedPolicies)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"2 policies, valid", "GPU utilisation of fleet (allocated over Ready GPUs) above 85.0%",
		"scale_down developer_instances (work labelled workload: developer, built-in)", "Cooldown:     5m0s"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if _, errOut, code := run(t, "policy", "validate", "../../examples/policies-full.yaml"); code != ExitOK {
		t.Errorf("policies-full.yaml: exit %d: %s", code, errOut)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("scheduling_policies:\n  - name: p\n    conditions: [{metric: p95_latency, threshold: 150ms}]\n    actions: [{type: scale_down, target: dev_boxes, min_capacity: 30%}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = run(t, "policy", "validate", "-f", bad)
	if code != ExitUsage || !strings.Contains(errOut, "bad.yaml:4:42: scheduling_policies[0].actions[0].target: unknown target \"dev_boxes\"") {
		t.Errorf("exit %d, stderr %q; want 2 and the place of the unknown target", code, errOut)
	}
	if _, errOut, code := run(t, "policy", "test", "-f", seedPolicies, "--metrics", bad); code != ExitUsage || !strings.Contains(errOut, "unknown field") {
		t.Errorf("a policies file as a recording: exit %d, %s", code, errOut)
	}
}
