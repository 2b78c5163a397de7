package cutstock

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSolve(t *testing.T) {
	for _, c := range []struct {
		name   string
		counts map[int64]int
		want   float64
		prices map[int64]float64 // checked where the dual is unique
	}{
		{"none", map[int64]int{}, 0, map[int64]float64{}},
		{"one per GPU", map[int64]int{600: 2}, 2, map[int64]float64{600: 1}},
		{"two halves", map[int64]int{500: 2}, 1, map[int64]float64{500: 0.5}},
		{"810 and 190 pair up", map[int64]int{810: 10, 190: 10}, 10, nil},
		// Each 810 needs its own GPU; only one of them has a 160 beside
		// it, so the 160 is worth nothing.
		{"slivers", map[int64]int{810: 3, 160: 1}, 3, map[int64]float64{810: 1, 160: 0}},
		// Three 400s: two per GPU at most, so 1.5 GPUs in the LP.
		{"odd count", map[int64]int{400: 3}, 1.5, map[int64]float64{400: 0.5}},
		// 470 pairs leave 60; the 50s fill some of it.
		{"470s", map[int64]int{470: 4, 50: 2}, 2, map[int64]float64{470: 0.5, 50: 0}},
		// (470,470,50) and (470, ten 50s): 30/19 + 16/19 GPUs.
		{"470s with spare 50s", map[int64]int{470: 4, 50: 10}, 46.0 / 19, nil},
		// 650s take a 320 each; the 320s left over go three to a GPU.
		{"650 and 320", map[int64]int{650: 10, 320: 16}, 12, map[int64]float64{650: 2.0 / 3, 320: 1.0 / 3}},
	} {
		var sv Solver
		sol, err := sv.Solve(c.counts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if math.Abs(sol.GPUs-c.want) > 1e-6 {
			t.Errorf("%s: GPUs = %g, want %g", c.name, sol.GPUs, c.want)
		}
		for s, want := range c.prices {
			if got := sol.Prices[s]; math.Abs(got-want) > 1e-6 {
				t.Errorf("%s: price of %d = %g, want %g", c.name, s, got, want)
			}
		}
		checkDual(t, c.name, c.counts, sol)
	}
}

// checkDual holds a solution to LP duality: the prices are feasible (no
// pattern worth more than one GPU) and the counts' worth under them is the
// bound.
func checkDual(t *testing.T, name string, counts map[int64]int, sol Solution) {
	t.Helper()
	sizes := make([]int64, 0, len(counts))
	u := make([]float64, 0, len(counts))
	var worth float64
	for s, n := range counts {
		sizes = append(sizes, s)
		u = append(u, sol.Prices[s])
		worth += float64(n) * sol.Prices[s]
		if sol.Prices[s] < -1e-9 {
			t.Errorf("%s: price of %d is %g < 0", name, s, sol.Prices[s])
		}
	}
	if val, _ := knapsack(sizes, counts, u); val > 1+1e-6 {
		t.Errorf("%s: a pattern is worth %g GPUs under the prices", name, val)
	}
	if math.Abs(worth-sol.GPUs) > 1e-6*max(1, sol.GPUs) {
		t.Errorf("%s: counts worth %g under the prices, bound %g", name, worth, sol.GPUs)
	}
}

// TestSolveOpenbDefault bounds the fractions of the openb default pod
// list (data/traces/openb, counts by size) against a packing found by
// best-fit decreasing: the LP may not exceed a real packing, and on these
// sizes it is within a few GPUs of it.
func TestSolveOpenbDefault(t *testing.T) {
	counts := map[int64]int{50: 7, 110: 24, 140: 1, 160: 74, 220: 62, 230: 140, 270: 4, 290: 1, 320: 328, 330: 7,
		350: 6, 370: 47, 440: 2, 460: 128, 470: 750, 480: 19, 550: 72, 590: 75, 650: 253, 810: 1078}
	var sv Solver
	sol, err := sv.Solve(counts)
	if err != nil {
		t.Fatal(err)
	}
	bfd := bestFitDecreasing(counts)
	t.Logf("LP %.2f GPUs, best-fit decreasing %d", sol.GPUs, bfd)
	if sol.GPUs > float64(bfd)+1e-6 || sol.GPUs < float64(bfd)-20 {
		t.Errorf("LP bound %.2f GPUs against a packing of %d", sol.GPUs, bfd)
	}
	checkDual(t, "default", counts, sol)
}

func TestSolveRejectsBadSizes(t *testing.T) {
	for _, s := range []int64{0, -5, 1000, 1500} {
		var sv Solver
		if _, err := sv.Solve(map[int64]int{s: 1}); !errors.Is(err, ErrSize) {
			t.Errorf("size %d: error %v, want ErrSize", s, err)
		}
	}
}

// TestSolveRandom checks random instances: the bound holds the duality
// conditions, lies below a real packing (best-fit decreasing) and, as the
// counts grow on one Solver (warm-started), never falls.
func TestSolveRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 40 {
		var sv Solver
		counts := map[int64]int{}
		last := 0.0
		for range 3 {
			for range 1 + r.IntN(5) {
				counts[int64(10*(1+r.IntN(99)))] += 1 + r.IntN(30)
			}
			sol, err := sv.Solve(counts)
			if err != nil {
				t.Fatal(err)
			}
			checkDual(t, "random", counts, sol)
			if bfd := bestFitDecreasing(counts); sol.GPUs > float64(bfd)+1e-6 {
				t.Errorf("instance %d: bound %g above a packing into %d GPUs", i, sol.GPUs, bfd)
			}
			if sol.GPUs < last-1e-6 {
				t.Errorf("instance %d: bound fell from %g to %g as counts grew", i, last, sol.GPUs)
			}
			last = sol.GPUs
		}
	}
}

func bestFitDecreasing(counts map[int64]int) int {
	var items []int64
	for s, n := range counts {
		for range n {
			items = append(items, s)
		}
	}
	slices.Sort(items)
	slices.Reverse(items)
	var free []int64
	for _, x := range items {
		best := -1
		for i, f := range free {
			if f >= x && (best < 0 || f < free[best]) {
				best = i
			}
		}
		if best < 0 {
			free = append(free, GPU-x)
		} else {
			free[best] -= x
		}
	}
	return len(free)
}

// FuzzSolve: any counts give a solution that holds the duality conditions,
// or ErrSize for a size out of range; never a panic.
func FuzzSolve(f *testing.F) {
	f.Add([]byte{81, 10, 16, 1, 65, 4, 32, 5})
	f.Add([]byte{0, 1})
	f.Add([]byte{100, 3, 99, 200})
	f.Fuzz(func(t *testing.T, data []byte) {
		counts := map[int64]int{}
		bad := false
		for i := 0; i+1 < len(data) && i < 16; i += 2 {
			s := 10 * int64(data[i]) // 0..2550 milli, in steps of 10
			counts[s] += int(data[i+1])%50 + 1
			bad = bad || s <= 0 || s >= GPU
		}
		var sv Solver
		sol, err := sv.Solve(counts)
		if bad {
			if !errors.Is(err, ErrSize) {
				t.Fatalf("counts %v: error %v, want ErrSize", counts, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("counts %v: %v", counts, err)
		}
		checkDual(t, "fuzz", counts, sol)
	})
}
