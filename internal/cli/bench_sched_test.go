package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched/schedtest"
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

// --elastic F makes about F of the queued whole-GPU jobs outside
// reservations elastic, up to twice their instances, and changes nothing
// else of the world: which jobs are elastic is drawn apart.
func TestBenchSchedElastic(t *testing.T) {
	world := func(share float64) []*model.Job {
		b, err := schedtest.NewBusy(schedtest.BusyConfig{Nodes: 200, Pending: 2000, Fill: 0.9, Seed: 1, Elastic: share})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			b.Step()
		}
		return b.World.Jobs
	}
	rigid, elastic := world(0), world(0.2)
	if len(rigid) != len(elastic) {
		t.Fatalf("%d jobs with --elastic 0.2, %d without", len(elastic), len(rigid))
	}
	eligible, made := 0, 0
	for i, j := range elastic {
		r := rigid[i]
		if r.Spec.Elastic != nil {
			t.Fatalf("%s is elastic without --elastic", r.ID)
		}
		cp := *j
		cp.Spec.Elastic = nil
		if !reflect.DeepEqual(&cp, r) {
			t.Fatalf("%s differs beyond its elasticity:\n%+v\n%+v", j.ID, cp, *r)
		}
		res := j.Spec.Resources
		if j.Status.State == model.StateQueued && !res.Fractional() && j.Spec.Placement.Reservation == "" {
			eligible++
		}
		e := j.Spec.Elastic
		if e == nil {
			continue
		}
		made++
		if j.Status.State != model.StateQueued || res.Fractional() || j.Spec.Placement.Reservation != "" ||
			e.MinInstances != res.InstanceCount || e.MaxInstances != 2*res.InstanceCount || e.StepOrOne() != 1 {
			t.Errorf("%s (%s, %d×%d GPUs, reservation %q): elastic %s", j.ID, j.Status.State, res.InstanceCount, res.GPUsPerInstance,
				j.Spec.Placement.Reservation, e)
		}
		if err := j.Spec.Validate(); err != nil {
			t.Errorf("%s: %v", j.ID, err)
		}
	}
	if share := float64(made) / float64(eligible); share < 0.16 || share > 0.24 {
		t.Errorf("%d of %d eligible queued jobs elastic (%.2f), want about 0.2", made, eligible, share)
	}
	out, errOut, code := run(t, "bench", "sched", "--gpus", "1600", "--pending", "400", "--cycles", "3", "--elastic", "0.2", "-o", "json")
	var r benchSchedResult
	if code != ExitOK || json.Unmarshal([]byte(out), &r) != nil || r.Elastic != 0.2 {
		t.Fatalf("--elastic 0.2: exit %d, %s: %s", code, errOut, out)
	}
	for _, bad := range []string{"-0.1", "1.5", "NaN"} {
		if _, errOut, code := run(t, "bench", "sched", "--elastic", bad); code != ExitUsage {
			t.Errorf("--elastic %s: exit %d: %s", bad, code, errOut)
		}
	}
}
