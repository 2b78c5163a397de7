package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A tiny `allot bench sched` run fills the fleet, runs its cycles and
// reports every figure of benchSchedResult in its JSON.
func TestBenchSched(t *testing.T) {
	out, errOut, code := run(t, "bench", "sched", "--gpus", "1600", "--pending", "400", "--cycles", "3", "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(out), &fields); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	rt := reflect.TypeOf(benchSchedResult{})
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if _, ok := fields[name]; !ok {
			t.Errorf("JSON lacks %q", name)
		}
	}
	var r benchSchedResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.GPUs != 1600 || r.Nodes != 200 || r.Cycles != 3 || r.FirstCycleDecisions != 400 || r.HeldAtStart < 0.8 ||
		r.FirstCycleMs <= 0 || r.SteadyP99Ms < r.SteadyP50Ms || r.DecisionsPerSec <= 0 || r.SingleNodeDecisions == 0 ||
		r.PeakHeapMiB <= 0 || len(r.PlansSHA256) != 64 || len(r.DecisionsSHA256) != 64 {
		t.Fatalf("report %+v", r)
	}
	// The same flags give the same Plans.
	again, _, _ := run(t, "bench", "sched", "--gpus", "1600", "--pending", "400", "--cycles", "3", "-o", "json")
	var r2 benchSchedResult
	if err := json.Unmarshal([]byte(again), &r2); err != nil || r2.PlansSHA256 != r.PlansSHA256 {
		t.Fatalf("a second run decided otherwise: %v %s vs %s", err, r2.PlansSHA256, r.PlansSHA256)
	}
	// Planned from scratch every cycle, the world is planned alike: the
	// Session carries nothing that changes a Plan.
	scratch, _, _ := run(t, "bench", "sched", "--gpus", "1600", "--pending", "400", "--cycles", "3", "--scratch", "-o", "json")
	var r3 benchSchedResult
	if err := json.Unmarshal([]byte(scratch), &r3); err != nil || r3.PlansSHA256 != r.PlansSHA256 || r3.DecisionsSHA256 != r.DecisionsSHA256 {
		t.Fatalf("--scratch decided otherwise: %v %s vs %s", err, r3.PlansSHA256, r.PlansSHA256)
	}
	if _, errOut, code := run(t, "bench", "sched", "--fill", "2"); code != ExitUsage {
		t.Fatalf("--fill 2: exit %d: %s", code, errOut)
	}
	// --baseline: a baseline ten times faster is a regression (exit 3);
	// one of other settings cannot be compared (exit 2).
	fields["first_cycle_ms"] = r.FirstCycleMs / 10
	fast, _ := json.Marshal(fields)
	path := filepath.Join(t.TempDir(), "base.json")
	if err := os.WriteFile(path, fast, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := run(t, "bench", "sched", "--gpus", "1600", "--pending", "400", "--cycles", "3", "--baseline", path); code != ExitRegressed || !strings.Contains(errOut, "first_cycle_ms") {
		t.Fatalf("against a 10× faster baseline: exit %d: %s", code, errOut)
	}
	if _, errOut, code := run(t, "bench", "sched", "--gpus", "3200", "--pending", "400", "--cycles", "3", "--baseline", path); code != ExitUsage {
		t.Fatalf("against a baseline of another fleet size: exit %d: %s", code, errOut)
	}
}
