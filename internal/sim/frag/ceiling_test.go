package frag

import (
	"slices"
	"testing"
)

// TestCeilingBoundsRuns runs two policies with the ceilings on and checks
// that no seed's allocation passes its own ceiling at any point, and that
// the ceiling of every fraction placed does not depend on the policy.
func TestCeilingBoundsRuns(t *testing.T) {
	nodes, pods := loadTrace(t, "default")
	var all [][]float64
	for _, policy := range []string{"allot", "bestfit"} {
		res, err := Run(t.Context(), Config{Nodes: nodes, Pods: pods, Policy: policy, Inflate: 1.3,
			Seeds: []int64{42, 43}, Workers: 2, Ceiling: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range res.Seeds {
			for k, pct := range DefaultPoints {
				if s.Alloc[k] > s.Ceiling[k]+1e-9 {
					t.Errorf("%s seed %d at %d%%: allocation %.3f above ceiling %.3f", policy, s.Seed, pct, s.Alloc[k], s.Ceiling[k])
				}
			}
		}
		p := res.Points[3]
		t.Logf("%s at %d%%: %.3f, ceiling %.3f, all placed %.3f", policy, p.ArrivedPct, p.Median, p.Ceiling, p.CeilingAll)
		all = append(all, res.Seeds[0].CeilingAll)
	}
	if !slices.Equal(all[0], all[1]) {
		t.Errorf("ceiling with every fraction placed differs by policy: %v and %v", all[0], all[1])
	}
}
