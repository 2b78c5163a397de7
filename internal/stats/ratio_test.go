package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestRatioOfMeans(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	a := []float64{20.1, 18.4, 22.9, 19.7, 21.3, 17.8, 23.4, 20.6}
	t2 := (2*0.975 - 1) / math.Sqrt(2*0.975*0.025) // t(0.975) for two degrees of freedom
	b := []float64{10.2, 9.1, 11.8, 8.7, 10.9, 9.9}
	for _, c := range []struct {
		name          string
		a, b          []float64
		ratio, lo, hi float64
	}{
		// Computed separately at high precision: Welch–Satterthwaite
		// gives 9.8255 degrees of freedom, t = 2.233514.
		{"Fieller", a, b, 2.0321782178217821, 1.7912250600744346, 2.3169277162943722},
		{"swapped", b, a, 1 / 2.0321782178217821, 1 / 2.3169277162943722, 1 / 1.7912250600744346},
		{"negative", a, []float64{-10.2, -9.1, -11.8, -8.7, -10.9, -9.9},
			-2.0321782178217821, -2.3169277162943722, -1.7912250600744346},
		{"no spread", []float64{2, 2, 2}, []float64{1, 1}, 2, 2, 2},
		// |3 − 10r| = t(2)·r/√3 at the bounds.
		{"numerator fixed", []float64{3, 3, 3}, []float64{9, 10, 11}, 0.3, 3 / (10 + t2/math.Sqrt(3)), 3 / (10 - t2/math.Sqrt(3))},
		{"denominator near zero", a, []float64{-1, 1, 0.5, -0.4}, 20.525 / 0.025, -inf, inf},
		{"one value", []float64{5}, b, 5 / 10.1, -inf, inf},
		{"empty", nil, b, nan, nan, nan},
	} {
		t.Run(c.name, func(t *testing.T) {
			ratio, lo, hi := RatioOfMeans(c.a, c.b)
			if !near(ratio, c.ratio) || !near(lo, c.lo) || !near(hi, c.hi) {
				t.Errorf("RatioOfMeans = %g [%g, %g], want %g [%g, %g]", ratio, lo, hi, c.ratio, c.lo, c.hi)
			}
		})
	}
}

// Over many normal samples the interval holds the true ratio about 95 % of
// the time, and it is longer above the ratio than below it.
func TestRatioOfMeansCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(n int, mean, sd float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = mean + sd*rng.NormFloat64()
		}
		return xs
	}
	const trials = 4000
	held, longerAbove := 0, 0
	for range trials {
		ratio, lo, hi := RatioOfMeans(draw(10, 20, 4), draw(8, 10, 2.5))
		if lo <= 2 && 2 <= hi {
			held++
		}
		if hi-ratio > ratio-lo {
			longerAbove++
		}
	}
	if share := float64(held) / trials; share < 0.935 || share > 0.965 {
		t.Errorf("the interval held the ratio in %.3f of trials, want about 0.95", share)
	}
	if longerAbove != trials {
		t.Errorf("the interval was longer above the ratio in %d of %d trials", longerAbove, trials)
	}
}
