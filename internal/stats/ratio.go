package stats

import "math"

// RatioOfMeans returns mean(a)/mean(b) for two independent samples with
// Fieller's 95 % interval [lo, hi]: the ratios r for which
// mean(a) − r·mean(b) is within t·SE of zero, with Student's t at the
// Welch–Satterthwaite degrees of freedom. It is used to report, say, that
// one strategy queues 2.1× [1.8, 2.5] as long as another.
//
// The interval is (−Inf, +Inf) when mean(b) is not significantly
// different from zero or a sample has a single value (its spread is
// unknown); it is [ratio, ratio] when neither sample varies. Everything is
// NaN when a sample is empty.
func RatioOfMeans(a, b []float64) (ratio, lo, hi float64) {
	sa, sb := Summarize(a), Summarize(b)
	if sa.N == 0 || sb.N == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	ratio = sa.Mean / sb.Mean
	if sa.N == 1 || sb.N == 1 {
		return ratio, math.Inf(-1), math.Inf(1)
	}
	// Standard errors of the two means, in units of mean(b) so that
	// nothing is squared at its own scale.
	ea := sa.StdDev / math.Sqrt(float64(sa.N)) / math.Abs(sb.Mean)
	eb := sb.StdDev / math.Sqrt(float64(sb.N)) / math.Abs(sb.Mean)
	// The variance of mean(a) − r·mean(b), over mean(b)², at r = ratio,
	// and its Welch–Satterthwaite degrees of freedom.
	va, vb := ea*ea, eb*eb*ratio*ratio
	if va+vb == 0 {
		return ratio, ratio, ratio
	}
	df := (va + vb) * (va + vb) / (va*va/float64(sa.N-1) + vb*vb/float64(sb.N-1))
	t := tQuantile975(df)
	// (mean(a) − r·mean(b))² = t²·(SEa² + r²·SEb²), divided by mean(b)²,
	// is the quadratic k·r² − 2·ratio·r + ratio² − t²·ea² = 0 with
	// k = 1 − t²·eb², whose roots are (ratio ± t·√(k·ea² + eb²·ratio²))/k.
	// With k ≤ 0 the set of such r is unbounded.
	k := 1 - t*t*eb*eb
	if !(k > 0) {
		return ratio, math.Inf(-1), math.Inf(1)
	}
	w := t * math.Sqrt(k*ea*ea+eb*eb*ratio*ratio)
	lo, hi = (ratio-w)/k, (ratio+w)/k
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return ratio, math.Inf(-1), math.Inf(1)
	}
	return ratio, lo, hi
}
