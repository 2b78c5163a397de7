package latency

import (
	"fmt"
	"math"
	"time"
)

// The bucket layout (see the package documentation).
const (
	Min     = 50 * time.Microsecond
	Growth  = 1.08
	Buckets = 200
)

// logGrowth is ln(Growth), computed once.
var logGrowth = math.Log(Growth)

// Histogram counts latencies in the fixed buckets. The zero value is
// empty and ready to use; it is not safe for concurrent use.
type Histogram struct {
	counts [Buckets]uint64
	total  uint64
}

// bucket returns the index of the bucket holding d.
func bucket(d time.Duration) int {
	if d <= Min {
		return 0
	}
	i := int(math.Ceil(math.Log(float64(d)/float64(Min)) / logGrowth))
	// Rounding may put a value exactly on a bound one bucket too high.
	if i > 1 && float64(d) <= float64(Min)*math.Pow(Growth, float64(i-1)) {
		i--
	}
	return min(max(i, 1), Buckets-1)
}

// Upper is the upper bound of bucket i; the last bucket's is +Inf as a
// duration's maximum.
func Upper(i int) time.Duration {
	if i >= Buckets-1 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(float64(Min) * math.Pow(Growth, float64(i)))
}

// Add counts one latency d.
func (h *Histogram) Add(d time.Duration) {
	h.counts[bucket(d)]++
	h.total++
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
}

// Count is how many latencies h holds.
func (h *Histogram) Count() uint64 { return h.total }

// Quantile returns the q-quantile (0 < q ≤ 1) of h: the upper bound of the
// bucket holding the ⌈q·n⌉-th smallest latency; 0 when h is empty. The
// last bucket's answer is its lower bound, the largest finite value.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(min(max(q, 0), 1) * float64(h.total)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			if i == Buckets-1 {
				return Upper(Buckets - 2)
			}
			return Upper(i)
		}
	}
	return Upper(Buckets - 2)
}

// Reset empties h.
func (h *Histogram) Reset() { *h = Histogram{} }

// Sparse is a histogram on the wire: pairs of bucket index and count, for
// the non-empty buckets in ascending order of index.
type Sparse [][2]uint64

// Sparse returns h's non-empty buckets.
func (h *Histogram) Sparse() Sparse {
	var out Sparse
	for i, c := range h.counts {
		if c > 0 {
			out = append(out, [2]uint64{uint64(i), c})
		}
	}
	return out
}

// MaxCount bounds one bucket's count in FromSparse, and the total: more
// requests than a gateway can see in a report interval.
const MaxCount = 1 << 40

// FromSparse reads s into a Histogram. field names s in the error: an
// index out of range or not ascending, a count of 0 or above MaxCount.
func FromSparse(field string, s Sparse) (Histogram, error) {
	var h Histogram
	last := -1
	for k, p := range s {
		i, c := p[0], p[1]
		switch {
		case i >= Buckets:
			return Histogram{}, fmt.Errorf("%s[%d]: bucket %d, want 0 to %d", field, k, i, Buckets-1)
		case int(i) <= last:
			return Histogram{}, fmt.Errorf("%s[%d]: bucket %d after bucket %d, want ascending buckets", field, k, i, last)
		case c == 0 || c > MaxCount:
			return Histogram{}, fmt.Errorf("%s[%d]: count %d, want 1 to %d", field, k, c, uint64(MaxCount))
		}
		h.counts[i] = c
		h.total += c
		last = int(i)
		if h.total > MaxCount {
			return Histogram{}, fmt.Errorf("%s: %d latencies in all, over %d", field, h.total, uint64(MaxCount))
		}
	}
	return h, nil
}
