package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanSaysNever checks that plan gives a job the example fleet can
// never hold the reason submit refuses it with, though the cycle alone
// would say it waits for capacity.
func TestPlanSaysNever(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	doc := "name: big\ntenant: research\nresources: {instance_count: 100, gpus_per_instance: 8, gpu_models: [H100]}\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "plan", "--fleet", "../../examples/fleet.yaml", "--tenants", "../../examples/tenants.yaml",
		"--jobs", path, "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var plan struct {
		Pending []struct{ Job, Reason, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil || len(plan.Pending) != 1 {
		t.Fatalf("plan %s (%v)", out, err)
	}
	p := plan.Pending[0]
	if p.Reason != "SkuNotAvailable" || !strings.Contains(p.Detail, "the most that exists: ") || strings.Contains(p.Detail, "0 mCPU") {
		t.Errorf("big: %s: %s; want SkuNotAvailable saying the most that exists", p.Reason, p.Detail)
	}
}
