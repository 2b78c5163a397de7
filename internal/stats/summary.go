package stats

import (
	"math"
	"strconv"
	"strings"
)

// Summary describes N values: their mean, their sample standard deviation
// and the half-width of the 95 % confidence interval of the mean. N=0
// gives Mean NaN and zero StdDev and HalfWidth; N=1 gives StdDev 0 and
// HalfWidth +Inf.
type Summary struct {
	N         int
	Mean      float64
	StdDev    float64 // sample standard deviation, N−1 in the denominator
	HalfWidth float64 // t(0.975, N−1)·StdDev/√N
}

// Summarize returns the Summary of xs.
func Summarize(xs []float64) Summary {
	s := Summary{N: len(xs), Mean: Mean(xs)}
	switch s.N {
	case 0:
		return s
	case 1:
		s.HalfWidth = math.Inf(1)
		return s
	}
	var ss float64
	for _, x := range xs {
		d := x - s.Mean
		ss += d * d
	}
	s.StdDev = math.Sqrt(ss / float64(s.N-1))
	s.HalfWidth = TQuantile975(s.N-1) * s.StdDev / math.Sqrt(float64(s.N))
	return s
}

// String writes the mean and the half-width as "12.3 ± 0.4": the
// half-width to two significant digits when its first is 1 or 2 and to one
// otherwise, the mean to the same decimal place. One value is written
// alone to three significant digits ("12.3"), as is a mean whose interval
// is zero wide ("4 ± 0"); no values are written "n/a".
func (s Summary) String() string {
	if s.N == 0 {
		return "n/a"
	}
	hw := s.HalfWidth
	switch {
	case s.N == 1:
		return significant(s.Mean, 3)
	case hw == 0:
		return significant(s.Mean, 3) + " ± 0"
	case math.IsNaN(hw) || math.IsInf(hw, 0) || math.IsNaN(s.Mean) || math.IsInf(s.Mean, 0):
		return fixed(s.Mean, -1) + " ± " + fixed(hw, -1)
	}
	e := int(math.Floor(math.Log10(hw)))
	digits := 1
	if lead := hw / math.Pow(10, float64(e)); lead < 3 {
		digits = 2
	}
	decimals := digits - 1 - e
	if decimals >= 0 {
		return fixed(s.Mean, decimals) + " ± " + fixed(hw, decimals)
	}
	// Round to tens, hundreds, …: "12300 ± 1200".
	unit := math.Pow(10, float64(-decimals))
	return fixed(math.Round(s.Mean/unit)*unit, 0) + " ± " + fixed(math.Round(hw/unit)*unit, 0)
}

// Format writes the mean and the half-width with the given number of
// decimals (none if negative): "12.30 ± 0.40", the mean alone for one
// value and "n/a" for none.
func (s Summary) Format(decimals int) string {
	decimals = max(decimals, 0)
	switch s.N {
	case 0:
		return "n/a"
	case 1:
		return fixed(s.Mean, decimals)
	}
	return fixed(s.Mean, decimals) + " ± " + fixed(s.HalfWidth, decimals)
}

// fixed writes x with the given decimals, or in the shortest form that
// reads back as x when decimals is negative.
func fixed(x float64, decimals int) string {
	if decimals < 0 {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strconv.FormatFloat(x, 'f', decimals, 64)
}

// significant writes x to the given number of significant digits without
// an exponent or trailing zeros: the integer part is kept whole, and at
// most 20 decimals are written.
func significant(x float64, digits int) string {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return fixed(x, -1)
	}
	e := int(math.Floor(math.Log10(math.Abs(x))))
	s := fixed(x, min(max(digits-1-e, 0), 20))
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// Mean returns the arithmetic mean of xs, NaN when there are none.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// Quantile returns the q-quantile of sorted (ascending) values by nearest
// rank: the value at index ⌈q·n⌉−1, clamped to the slice, so q ≤ 0 gives
// the least value and q ≥ 1 the greatest. It returns NaN when sorted is
// empty or q is NaN.
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	q = min(max(q, 0), 1)
	i := int(math.Ceil(q*float64(n))) - 1
	return sorted[min(max(i, 0), n-1)]
}
