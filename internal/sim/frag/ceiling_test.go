package frag

import (
	"math"
	"slices"
	"testing"
)

func TestPackingGPUs(t *testing.T) {
	for _, c := range []struct {
		name   string
		counts map[int64]int
		want   float64
	}{
		{"none", map[int64]int{}, 0},
		{"one per GPU", map[int64]int{600: 2}, 2},
		{"two halves", map[int64]int{500: 2}, 1},
		{"810 and 190 pair up", map[int64]int{810: 10, 190: 10}, 10},
		// Each 810 needs its own GPU; only one of them has a 160 beside it.
		{"slivers", map[int64]int{810: 3, 160: 1}, 3},
		// Three 400s: two per GPU at most, so 1.5 GPUs in the LP.
		{"odd count", map[int64]int{400: 3}, 1.5},
		// 470 pairs leave 60; the 50s fill some of it.
		{"470s", map[int64]int{470: 4, 50: 2}, 2},
		// (470,470,50) and (470, ten 50s): 30/19 + 16/19 GPUs.
		{"470s with spare 50s", map[int64]int{470: 4, 50: 10}, 46.0 / 19},
	} {
		ce := newCeiling(100)
		ce.counts, ce.dirty = c.counts, true
		got, err := ce.packingGPUs()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if math.Abs(got-c.want) > 1e-6 {
			t.Errorf("%s: packingGPUs = %g, want %g", c.name, got, c.want)
		}
	}
}

func TestPackingGPUsRejectsBadSizes(t *testing.T) {
	for _, s := range []int64{0, -5, 1000, 1500} {
		ce := newCeiling(100)
		ce.counts = map[int64]int{s: 1}
		if _, err := ce.packingGPUs(); err == nil {
			t.Errorf("size %d: no error", s)
		}
	}
}

// TestCeilingDefault checks the bound on the trace's own pods against a
// packing found by best-fit decreasing: the LP bound may not exceed any
// real packing, and on these sizes it is within a few GPUs of it.
func TestCeilingDefault(t *testing.T) {
	_, pods := loadTrace(t, "default")
	ce := newCeiling(6212)
	var fracs []int64
	for _, r := range requests(pods) {
		ce.add(&r)
		if r.Fractional() {
			fracs = append(fracs, r.Milli)
		}
	}
	c, err := ce.bound()
	if err != nil {
		t.Fatal(err)
	}
	bfd := bestFitDecreasing(fracs)
	t.Logf("LP %.2f GPUs (waste %.0f milli), best-fit decreasing %d GPUs, ceiling %.3f %%", c.FractionGPUs, c.Waste, bfd, c.AllocPct)
	if c.FractionGPUs > float64(bfd)+1e-6 || c.FractionGPUs < float64(bfd)-20 {
		t.Errorf("LP bound %.2f GPUs against a packing of %d", c.FractionGPUs, bfd)
	}
}

func bestFitDecreasing(sizes []int64) int {
	s := append([]int64(nil), sizes...)
	for i := range s { // insertion sort, descending; small inputs
		for j := i; j > 0 && s[j] > s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	var free []int64
	for _, x := range s {
		best := -1
		for i, f := range free {
			if f >= x && (best < 0 || f < free[best]) {
				best = i
			}
		}
		if best < 0 {
			free = append(free, 1000-x)
		} else {
			free[best] -= x
		}
	}
	return len(free)
}

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
