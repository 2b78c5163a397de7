package frag

import (
	"context"
	"testing"

	"github.com/allot-dev/allot/internal/score"
	"github.com/allot-dev/allot/internal/trace/openb"
)

// BenchmarkSeed runs one seed of the experiment per iteration, on the
// default workload and on the generated variant that has been slowest for
// allot (gpuspec45-s21: many pods limited to one GPU model). Profile it
// with -cpuprofile to see where a placement's time goes.
func BenchmarkSeed(b *testing.B) {
	nodes, pods := loadTrace(b, "default")
	spec, err := openb.Variant(pods, nodes, openb.VariantSpec{Kind: openb.GPUSpec, Pct: 45, Seed: 21})
	if err != nil {
		b.Fatal(err)
	}
	for _, wl := range []struct {
		name string
		pods []openb.Pod
	}{{"default", pods}, {"gpuspec45-s21", spec}} {
		for _, policy := range []string{"fgd", "allot"} {
			b.Run(wl.name+"/"+policy, func(b *testing.B) {
				cfg := Config{Nodes: nodes, Pods: wl.pods, Policy: policy, Inflate: 1.3, Points: DefaultPoints}
				reqs := requests(cfg.Pods)
				var w score.Workload
				if score.NeedsWorkload(policy) {
					w = score.TargetWorkload(reqs, score.DefaultCoverage)
				}
				for b.Loop() {
					if _, err := runSeed(context.Background(), cfg, reqs, w, 42); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
