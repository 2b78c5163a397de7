package server

import (
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sched/schedtest"
)

// TestGuaranteeServes: only queued work its guarantee could serve counts
// for a pool's AllotPartitionBelowGuarantee: allowed there (regions,
// residency, GPU models), asking for GPUs, no more than the guarantee.
func TestGuaranteeServes(t *testing.T) {
	w := schedtest.NewWorld().Region("eastus", "us", model.FabricInfiniBand).Nodes("h", 2, "ND96-H100x8-IB", "l1").
		Region("westeurope", "eu", model.FabricEthernet).Nodes("t", 2, "NC4-T4x1", "l2")
	g := model.Guarantee{Region: "eastus", GPUModel: "H100", GPUs: 8}
	job := func(edit func(*model.JobSpec)) *model.Job {
		j := &model.Job{Spec: model.JobSpec{Resources: model.Resources{InstanceCount: 1, GPUsPerInstance: 8}}}
		edit(&j.Spec)
		return j
	}
	for _, tc := range []struct {
		name string
		edit func(*model.JobSpec)
		want bool
	}{
		{"any region and model, 8 GPUs", func(*model.JobSpec) {}, true},
		{"H100 in eastus", func(s *model.JobSpec) {
			s.Resources.GPUModels, s.Placement.Regions = []string{"H100"}, []string{"eastus"}
		}, true},
		{"T4 only", func(s *model.JobSpec) { s.Resources.GPUModels = []string{"T4"} }, false},
		{"another region", func(s *model.JobSpec) { s.Placement.Regions = []string{"westeurope"} }, false},
		{"eu residency", func(s *model.JobSpec) { s.Placement.Residency = "eu" }, false},
		{"larger than the guarantee", func(s *model.JobSpec) { s.Resources.InstanceCount = 2 }, false},
		{"CPU only", func(s *model.JobSpec) { s.Resources.GPUsPerInstance = 0 }, false},
	} {
		if got := guaranteeServes(&w.Fleet, g, job(tc.edit)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
