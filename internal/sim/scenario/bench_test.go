package scenario_test

import (
	"context"
	"testing"

	"github.com/allot-dev/allot/internal/model"
	"github.com/allot-dev/allot/internal/sim/scenario"
	"github.com/allot-dev/allot/internal/spec"
)

// BenchmarkWeek is one run of what `allot sim scenario
// examples/scenarios/week.yaml --strategy hybrid --policies
// examples/policies.yaml` runs for each seed: the shipped week at load
// 1.0, hybrid with the policies, seed 1. `--strategy all --seeds 1-10`
// is thirty such runs, two at a time on two cores (issue 41's ≤ 5 min).
func BenchmarkWeek(b *testing.B) {
	f, err := scenario.Read("../../../examples/scenarios/week.yaml")
	if err != nil {
		b.Fatal(err)
	}
	ps, err := spec.ReadPolicies("../../../examples/policies.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := scenario.Run(context.Background(), f, scenario.Options{Strategy: model.StrategyHybrid, Policies: ps, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
