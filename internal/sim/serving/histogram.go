package serving

import "math"

// Histogram holds weighted latencies in logarithmic buckets from
// HistogramMin to HistogramMax seconds, each HistogramGrowth times the
// last, so that a quantile is known to within 2 %; infinite values (dropped
// requests) count above every bucket.
type Histogram struct {
	counts []float64
	total  float64
}

// Bucket bounds of a Histogram.
const (
	HistogramMin    = 1e-3
	HistogramMax    = 1e3
	HistogramGrowth = 1.02
)

var (
	logGrowth = math.Log(HistogramGrowth)
	buckets   = int(math.Ceil(math.Log(HistogramMax/HistogramMin)/logGrowth)) + 2 // under, …, over
)

// Add counts v seconds with weight w.
func (h *Histogram) Add(v, w float64) {
	if h.counts == nil {
		h.counts = make([]float64, buckets)
	}
	h.counts[bucket(v)] += w
	h.total += w
}

func bucket(v float64) int {
	switch {
	case v < HistogramMin:
		return 0
	case v >= HistogramMax || math.IsNaN(v):
		return buckets - 1
	}
	return 1 + min(int(fastLog(v/HistogramMin)/logGrowth), buckets-3)
}

// fastLog is the natural logarithm of x ≥ 1 to within 1e-4 (a bucket is
// 2 % wide): the exponent from the float's bits and a short series on the
// mantissa, about four times cheaper than math.Log for every request.
func fastLog(x float64) float64 {
	frac, exp := math.Frexp(x) // x = frac · 2^exp, frac in [0.5, 1)
	// ln(frac) = 2·atanh((frac−1)/(frac+1)), a series in t² with |t| ≤ 1/3.
	t := (frac - 1) / (frac + 1)
	t2 := t * t
	s := t * (2 + t2*(2.0/3+t2*(2.0/5+t2*(2.0/7+t2*(2.0/9+t2*2.0/11)))))
	return s + float64(exp)*math.Ln2
}

// Total is the weight added since the last Reset.
func (h *Histogram) Total() float64 { return h.total }

// Quantile is the upper bound of the bucket that holds quantile q: NaN
// when empty, +Inf when it falls among the values past HistogramMax.
func (h *Histogram) Quantile(q float64) float64 {
	if h.total <= 0 {
		return math.NaN()
	}
	rank := q * h.total
	var seen float64
	for i, c := range h.counts {
		if seen += c; seen >= rank && c > 0 {
			switch i {
			case 0:
				return HistogramMin
			case buckets - 1:
				return math.Inf(1)
			}
			return HistogramMin * math.Pow(HistogramGrowth, float64(i))
		}
	}
	return math.Inf(1)
}

// Reset empties h, keeping its buckets.
func (h *Histogram) Reset() {
	clear(h.counts)
	h.total = 0
}
