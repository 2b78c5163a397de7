package stats

import (
	"math"
	"testing"
)

func TestPassRate(t *testing.T) {
	runs := func(pass, fail int) []bool {
		ok := make([]bool, pass+fail)
		for i := range pass {
			ok[i] = true
		}
		return ok
	}
	for _, c := range []struct {
		name         string
		ok           []bool
		rate, lo, hi float64
	}{
		// Wilson's interval to three decimals, as printed in the
		// literature (Newcombe, 1998, for 81 of 263).
		{"9 of 10", runs(9, 1), 0.9, 0.596, 0.982},
		{"10 of 10", runs(10, 0), 1, 0.722, 1},
		{"0 of 10", runs(0, 10), 0, 0, 0.278},
		{"5 of 10", runs(5, 5), 0.5, 0.237, 0.763},
		{"1 of 1", runs(1, 0), 1, 0.207, 1},
		{"81 of 263", runs(81, 182), 0.308, 0.255, 0.366},
		{"none", nil, math.NaN(), 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			rate, lo, hi := PassRate(c.ok)
			off := func(got, want float64) bool { return math.Abs(got-want) > 0.0005 }
			if off(rate, c.rate) || off(lo, c.lo) || off(hi, c.hi) ||
				math.IsNaN(c.rate) != math.IsNaN(rate) {
				t.Errorf("PassRate = %.4f [%.4f, %.4f], want %.3f [%.3f, %.3f]", rate, lo, hi, c.rate, c.lo, c.hi)
			}
			if !(lo <= hi) || lo < 0 || hi > 1 {
				t.Errorf("interval [%g, %g] is not within [0, 1]", lo, hi)
			}
		})
	}
}
