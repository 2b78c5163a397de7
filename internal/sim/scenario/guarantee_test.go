package scenario

import (
	"fmt"
	"testing"
	"time"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sim/engine"
)

// TestGuaranteeViolationsOnHandBuiltTimelines holds checkGuarantees to its
// rule on timelines set by hand: testdata/small.yaml's partition ai is
// guaranteed half of east's 32 H100 GPUs (16). Work of ai that the
// guarantee covers counts once it has waited longer than min_run_time
// (10m) while ai holds fewer than 16 GPUs there — a gang too, even when
// ai's own work holds part of the guarantee — and not otherwise.
func TestGuaranteeViolationsOnHandBuiltTimelines(t *testing.T) {
	for _, tc := range []struct {
		name      string
		held      int // H100 GPUs ai's running work holds (whole nodes of 8, then single GPUs)
		instances int // of the queued job, 8 GPUs each
		waits     time.Duration
		want      int // violation minutes over the 20 minutes checked
	}{
		{"a covered gang waits while ai holds 8 of 16", 8, 2, 0, 10},
		{"a covered gang waits while ai holds nothing", 0, 2, 0, 10},
		{"ai holds its whole guarantee", 16, 2, 0, 0},
		{"ai holds more than its guarantee", 24, 1, 0, 0},
		{"a gang larger than the guarantee", 0, 3, 0, 0},
		{"waited long before the check", 8, 1, time.Hour, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := handBuiltRun(t)
			start := r.w.Start
			node := 0
			for held := tc.held; held > 0; node++ {
				g := min(held, 8)
				j := &model.Job{ID: fmt.Sprintf("run-%d", node), Spec: model.JobSpec{Name: "run", Tenant: "trainer",
					Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: g}}}
				if err := r.eng.Submit(j, engine.Forever); err != nil {
					t.Fatal(err)
				}
				gpus := make([]int, g)
				for i := range gpus {
					gpus[i] = i
				}
				j.Status.State = model.StateRunning
				j.Status.Allocations = []model.Allocation{{Node: fmt.Sprintf("east-ib-h100x8-%03d", node+1), GPUs: gpus, GPUMilli: model.MilliPerGPU}}
				held -= g
			}
			gang := &model.Job{ID: "gang", Spec: model.JobSpec{Name: "gang", Tenant: "trainer",
				Resources: model.Resources{InstanceCount: tc.instances, GPUsPerInstance: 8, GPUModels: []string{"H100"}},
				Placement: model.Placement{Interconnect: model.FabricInfiniBand}}}
			if err := r.eng.Submit(gang, 1); err != nil {
				t.Fatal(err)
			}
			r.rec.queuedAt[gang.ID] = start.Add(-tc.waits)
			for m := 1; m <= 20; m++ {
				r.checkGuarantees(start.Add(time.Duration(m) * time.Minute))
			}
			if got := r.violations["ai"]; got != tc.want {
				t.Errorf("%d violation minutes, want %d (%s)", got, tc.want, r.firstViolation["ai"])
			}
			if r.violations["customers"] != 0 {
				t.Errorf("customers counted %d minutes with nothing of theirs waiting", r.violations["customers"])
			}
		})
	}
}

// handBuiltRun is a run of testdata/small.yaml with nothing submitted.
func handBuiltRun(t *testing.T) *run {
	t.Helper()
	f, err := Read("testdata/small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.Build(1, model.StrategyStatic)
	if err != nil {
		t.Fatal(err)
	}
	return newRun(f, w, Options{}.defaults(f))
}
