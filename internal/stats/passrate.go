package stats

import "math"

// PassRate returns the share of ok that is true with Wilson's 95 % score
// interval [lo, hi]. With no values the rate is NaN and the interval
// [0, 1].
func PassRate(ok []bool) (rate, lo, hi float64) {
	n := len(ok)
	if n == 0 {
		return math.NaN(), 0, 1
	}
	k := 0
	for _, v := range ok {
		if v {
			k++
		}
	}
	nf := float64(n)
	rate = float64(k) / nf
	z2 := z975 * z975
	centre := (rate + z2/(2*nf)) / (1 + z2/nf)
	half := z975 / (1 + z2/nf) * math.Sqrt(rate*(1-rate)/nf+z2/(4*nf*nf))
	lo, hi = max(centre-half, 0), min(centre+half, 1)
	// At the ends the bound is exact; keep rounding from moving it.
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return rate, lo, hi
}
